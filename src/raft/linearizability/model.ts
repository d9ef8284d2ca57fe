// The vocabulary of the linearizability checker: operations in a concurrent history and the
// sequential specification (Model) they are checked against. Porcupine's shapes, in TypeScript.
//
// Building a model (see kv-model.ts and document-model.ts for worked examples):
// 1. Choose a State that is cheap to copy or, better, immutable: step() must return a *new*
//    state and never mutate its argument, because the search backtracks to older states.
// 2. step(state, input, output) answers "could this op, applied to `state`, have returned
//    `output`?" and gives the state after it. `output` is undefined for an op whose outcome is
//    unknown (a timeout): then step must accept and return the state as if the op took effect.
//    (The checker separately allows the op never to take effect at all.)
// 3. hash/equal let the checker memoize (linearized-set, state) pairs; without them the search
//    can be exponential. States equal by `equal` must have equal `hash`.
// 4. partition(history) splits a history into independent sub-histories (per key, per job id):
//    linearizability is compositional (Herlihy & Wing's locality), so each part is checked alone,
//    which is what makes 5,000-op histories cheap.
// 5. Definitely-failed ops (the client *knows* they had no effect, e.g. rejected before
//    proposing) are left out of the history, or recorded with an output the model reads as
//    "no effect" (e.g. FAILED_PRECONDITION). Anything the client cannot be sure of is unknown.

export interface Operation<I, O> {
  /** Who issued it: informational (explanations), the checker does not need it. */
  clientId?: number | string;
  input: I;
  /** Logical or wall time the call was issued. */
  call: number;
  /**
   * Time the response was received; `Infinity` when the outcome is unknown (no response): the
   * op may take effect at any time after `call`, or never.
   */
  return: number;
  /** The response; ignored (passed to step as undefined) when `return` is Infinity. */
  output?: O;
}

/** [accepted, state after]. When not accepted the second element is ignored. */
export type StepResult<S> = readonly [boolean, S];

export interface Model<S, I, O> {
  init(): S;
  step(state: S, input: I, output: O | undefined): StepResult<S>;
  /** Independent sub-histories (P-compositionality). Default: the whole history. */
  partition?(history: readonly Operation<I, O>[]): Operation<I, O>[][];
  /** Memoization hash; must agree with `equal`. Default: a hash of primitive states, else 0. */
  hash?(state: S): number;
  /** Default: Object.is. */
  equal?(a: S, b: S): boolean;
  /**
   * True for inputs that never change state. Unknown-outcome read-only ops constrain nothing
   * and are dropped before the search.
   */
  readOnly?(input: I): boolean;
  describeOperation?(input: I, output: O | undefined): string;
  describeState?(state: S): string;
}

/** FNV-1a over UTF-16 code units; a building block for Model.hash. */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Hash of a primitive (string, number, boolean, null, undefined); 0 for objects. */
export function hashPrimitive(v: unknown): number {
  switch (typeof v) {
    case 'string':
      return hashString(v);
    case 'number':
      return hashString(`#${v}`);
    case 'boolean':
      return v ? 1 : 2;
    case 'undefined':
      return 3;
    default:
      return v === null ? 4 : 0;
  }
}

/** Groups operations by a key, keeping history order inside each group. */
export function partitionBy<I, O>(history: readonly Operation<I, O>[], keyOf: (input: I) => string): Operation<I, O>[][] {
  const groups = new Map<string, Operation<I, O>[]>();
  for (const op of history) {
    const k = keyOf(op.input);
    let g = groups.get(k);
    if (g === undefined) groups.set(k, (g = []));
    g.push(op);
  }
  return [...groups.values()];
}
