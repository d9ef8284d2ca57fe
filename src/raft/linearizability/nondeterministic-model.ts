// Nondeterministic specifications for the checker. Some ops have more than one legal effect:
// an unknown-outcome conditional write against a version the client cannot pin down either
// applied or did not. The WGL search wants a deterministic step, so (as Porcupine does) we lift
// the model to *sets* of states: a step maps every state in the set to all its successors and
// fails only when the resulting set is empty. States are deduplicated by a canonical key, which
// also gives the memo hash and equality.

import type { Model, Operation } from './model.js';
import { hashString } from './model.js';

export interface NondeterministicModel<S, I, O> {
  init(): S;
  /** Every state the op may lead to from `state` given `output`; [] when the output is impossible. */
  step(state: S, input: I, output: O | undefined): S[];
  /** Canonical key: two states are the same iff their keys are equal. */
  key(state: S): string;
  partition?(history: readonly Operation<I, O>[]): Operation<I, O>[][];
  readOnly?(input: I): boolean;
  describeOperation?(input: I, output: O | undefined): string;
  describeState?(state: S): string;
}

/** A set of possible states, sorted by key so that equal sets look equal. */
export interface StateSet<S> {
  readonly keys: readonly string[];
  readonly states: readonly S[];
  /** Computed once: the checker asks for it at every step. */
  readonly hash: number;
}

function toSet<S>(states: readonly S[], key: (s: S) => string): StateSet<S> {
  // The common case by far: a deterministic step from a single state.
  if (states.length === 1) {
    const k = key(states[0]!);
    return { keys: [k], states, hash: hashString(k) };
  }
  const byKey = new Map<string, S>();
  for (const s of states) byKey.set(key(s), s);
  const keys = [...byKey.keys()].sort();
  return { keys, states: keys.map((k) => byKey.get(k)!), hash: hashString(keys.join('\u0000')) };
}

export function powersetModel<S, I, O>(m: NondeterministicModel<S, I, O>): Model<StateSet<S>, I, O> {
  const lifted: Model<StateSet<S>, I, O> = {
    init: () => toSet([m.init()], m.key),
    step(set, input, output) {
      const next: S[] = [];
      for (const s of set.states) for (const t of m.step(s, input, output)) next.push(t);
      return next.length === 0 ? [false, set] : [true, toSet(next, m.key)];
    },
    hash: (set) => set.hash,
    equal: (a, b) => a === b || (a.hash === b.hash && a.keys.length === b.keys.length && a.keys.every((k, i) => k === b.keys[i])),
    describeState: (set) => `one of {${set.states.map((s) => (m.describeState ? m.describeState(s) : m.key(s))).join(' | ')}}`,
  };
  if (m.partition) lifted.partition = (h) => m.partition!(h);
  if (m.readOnly) lifted.readOnly = (i) => m.readOnly!(i);
  if (m.describeOperation) lifted.describeOperation = (i, o) => m.describeOperation!(i, o);
  return lifted;
}
