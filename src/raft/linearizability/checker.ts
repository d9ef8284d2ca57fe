// A linearizability checker: Wing & Gong's search with Lowe's memoization (the "WGL" algorithm,
// as in Porcupine), over P-compositional partitions of the history.
//
// The search walks a doubly linked list of call/return events in time order. At a call it tries
// to linearize the op now (model.step accepts its output); if the resulting (set of linearized
// ops, state) pair was never seen, it commits and "lifts" the op's two events out of the list,
// then restarts from the head. Reaching a return event whose op is not linearized yet means the
// current prefix is wrong: pop the last linearized op, restore its state and events, and try the
// next candidate after it. The memo set is what keeps this from being exponential in practice.
//
// Unknown-outcome ops return at +Infinity, so their return events sort last and never force a
// backtrack; the search succeeds once every op with a known outcome is linearized (unknown ops
// left over are the ones that "never took effect"). Two additions keep them affordable: a
// dominance rule in the memo, and a portfolio of two orders for trying them (see checkPartition).

import type { Model, Operation } from './model.js';
import { hashPrimitive } from './model.js';

export interface CheckOptions {
  /**
   * Total search steps across all partitions; deterministic, the simulator's choice. Memory grows
   * with steps too (one memo entry per new (set, state) pair), so this is also the memory bound.
   * Default DEFAULT_MAX_STEPS; pass Infinity for none.
   */
  maxSteps?: number;
  /** Wall-clock budget; pass a clock (e.g. performance.now) — the checker owns none. */
  deadline?: { now: () => number; ms: number };
  /**
   * When the search tries unknown-outcome ops: 'eager' as soon as called, 'lazy' only after a
   * node's known-outcome candidates, 'portfolio' (default) alternates both. For experiments and
   * tests; every order gives the same answer.
   */
  unknownOrder?: 'portfolio' | 'eager' | 'lazy';
}

/** The options are mostly a budget; the old name stays for callers. */
export type CheckBudget = CheckOptions;

export interface IllegalExplanation<S, I, O> {
  /** Index of the failing sub-history (model.partition order). */
  partition: number;
  /** The longest linearizable prefix found, in linearization order. */
  longestPrefix: Operation<I, O>[];
  /** The model state after that prefix. */
  stateAfterPrefix: S;
  /** The op that had to be linearized before its return but fits nowhere after the prefix. */
  stuck: Operation<I, O> | undefined;
  /** Ops that were pending (called, not linearized) at that point: the candidates tried. */
  candidates: Operation<I, O>[];
}

/**
 * Linearizable histories need about one step per op (5,000 ops: ~6,000 steps). Illegal ones can
 * need exhaustive search, exponential for models whose state remembers order (append): this
 * default stops such a search at a few hundred MB instead of exhausting the heap.
 */
export const DEFAULT_MAX_STEPS = 2_000_000;

export type CheckResult<S, I, O> =
  | { result: 'ok'; steps: number; partitions: number }
  | { result: 'illegal'; steps: number; partitions: number; explanation: IllegalExplanation<S, I, O> }
  | { result: 'unknown'; reason: 'timeout'; steps: number; partitions: number };

export function checkOperations<S, I, O>(
  model: Model<S, I, O>,
  history: readonly Operation<I, O>[],
  budget: CheckOptions = {},
): CheckResult<S, I, O> {
  for (const op of history) {
    if (!(op.return >= op.call)) throw new RangeError(`operation returns (${op.return}) before its call (${op.call})`);
  }
  const parts = model.partition ? model.partition(history) : [[...history]];
  const clock = new StepClock(budget);
  let timedOut = false;
  for (let p = 0; p < parts.length; p++) {
    const r = checkPartition(model, parts[p]!, clock, budget.unknownOrder ?? 'portfolio');
    if (r.kind === 'illegal') {
      return {
        result: 'illegal',
        steps: clock.steps,
        partitions: parts.length,
        explanation: { ...r.explanation, partition: p },
      };
    }
    // Keep going after a timeout: a later partition may still prove the history illegal.
    if (r.kind === 'timeout') timedOut = true;
  }
  return timedOut
    ? { result: 'unknown', reason: 'timeout', steps: clock.steps, partitions: parts.length }
    : { result: 'ok', steps: clock.steps, partitions: parts.length };
}

class StepClock {
  steps = 0;
  private expired = false;
  private readonly start: number | undefined;
  private readonly maxSteps: number;

  constructor(private readonly budget: CheckOptions) {
    this.start = budget.deadline?.now();
    this.maxSteps = budget.maxSteps ?? DEFAULT_MAX_STEPS;
  }

  /** Counts a step; false once the budget is spent (for good). Reads the clock every 1024 steps. */
  tick(): boolean {
    if (this.expired) return false;
    this.steps++;
    if (this.steps > this.maxSteps) this.expired = true;
    else if ((this.steps & 1023) === 0 && this.budget.deadline) {
      this.expired = this.budget.deadline.now() - this.start! > this.budget.deadline.ms;
    }
    return !this.expired;
  }
}

type PartitionResult<S, I, O> =
  | { kind: 'ok' }
  | { kind: 'timeout' }
  | { kind: 'illegal'; explanation: Omit<IllegalExplanation<S, I, O>, 'partition'> };

/** A 32-bit mix of an op index: per-op Zobrist keys, so the set hash updates in O(1). */
function zobrist(i: number): number {
  let z = Math.imul(i + 1, 0x9e3779b1);
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/** First slice of the portfolio below; each round after that gets four times more. */
const FIRST_SLICE = 20_000;

function checkPartition<S, I, O>(
  model: Model<S, I, O>,
  all: readonly Operation<I, O>[],
  clock: StepClock,
  order: 'portfolio' | 'eager' | 'lazy',
): PartitionResult<S, I, O> {
  // An unknown read-only op cannot constrain anything: drop it before the search.
  const ops = all.filter((op) => !(op.return === Infinity && model.readOnly?.(op.input)));
  if (order !== 'portfolio' || !ops.some((op) => op.return === Infinity)) {
    const r = search(model, ops, clock, order === 'lazy', Infinity);
    return r.kind === 'slice' ? { kind: 'timeout' } : r; // an unbounded slice never ends as 'slice'
  }
  // With unknown-outcome ops, when to try them matters, and neither order wins everywhere (eager
  // on append-heavy KV histories, lazy on versioned documents with many timeouts; figures in
  // bench/README.md). So run both as a portfolio, alternating with growing step
  // slices: the total stays within a small factor of the better order. Each search is complete,
  // so the first to finish decides, 'illegal' included.
  for (let slice = FIRST_SLICE; ; slice *= 4) {
    for (const lazy of [false, true]) {
      const r = search(model, ops, clock, lazy, slice);
      if (r.kind !== 'slice') return r;
    }
  }
}

/**
 * One WGL search. `lazyUnknown`: at each node try known-outcome candidates before unknown ones
 * (same candidates, so same completeness). Stops with 'slice' after `sliceSteps` steps.
 */
function search<S, I, O>(
  model: Model<S, I, O>,
  ops: readonly Operation<I, O>[],
  clock: StepClock,
  lazyUnknown: boolean,
  sliceSteps: number,
): PartitionResult<S, I, O> | { kind: 'slice' } {
  const n = ops.length;
  const unknown = ops.map((op) => op.return === Infinity);
  let remainingKnown = unknown.filter((u) => !u).length;
  if (remainingKnown === 0) return { kind: 'ok' };
  let remainingUnknown = n - remainingKnown;
  let sliceLeft = sliceSteps;

  const hash = model.hash ?? hashPrimitive;
  const equal = model.equal ?? Object.is;
  const outputOf = (i: number): O | undefined => (unknown[i] ? undefined : ops[i]!.output);

  // Events 2i (call of op i) and 2i+1 (its return), sorted by time; at equal times calls come
  // first, so ops that merely touch are treated as concurrent (the permissive, standard choice).
  const order: number[] = [];
  for (let e = 0; e < 2 * n; e++) order.push(e);
  const timeOf = (e: number): number => (e & 1 ? ops[e >> 1]!.return : ops[e >> 1]!.call);
  order.sort((a, b) => timeOf(a) - timeOf(b) || (a & 1) - (b & 1) || a - b);
  // Infinity - Infinity is NaN: the comparator above falls through to the tie-breakers, good.

  const head = 2 * n;
  const next = new Int32Array(2 * n + 1).fill(-1);
  const prev = new Int32Array(2 * n + 1).fill(-1);
  let last = head;
  for (const e of order) {
    next[last] = e;
    prev[e] = last;
    last = e;
  }
  const unlink = (e: number): void => {
    next[prev[e]!] = next[e]!;
    if (next[e]! !== -1) prev[next[e]!] = prev[e]!;
  };
  const relink = (e: number): void => {
    next[prev[e]!] = e;
    if (next[e]! !== -1) prev[next[e]!] = e;
  };
  // Dancing links: undo in the reverse order of removal and the neighbours' pointers line up.
  const lift = (call: number): void => {
    unlink(call);
    unlink(call + 1);
  };
  const unlift = (call: number): void => {
    relink(call + 1);
    relink(call);
  };

  const words = (n + 31) >>> 5;
  const bits = new Uint32Array(words);
  // Memo, two tiers. `exact` holds every (linearized set, state) visited: the classic WGL memo.
  // `dominating` adds a pruning rule for unknown-outcome ops: a node whose set differs from a
  // visited one only by *extra* unknown ops, with the same state, is dominated — the visited node
  // could still apply those ops later, or never — so it is pruned too. That query is a subset
  // test, answered by scanning the entries that share (known ops, state), kept as an antichain
  // of minimal sets so the scan stays short.
  const zobKnown = ops.map((_, i) => (unknown[i] ? 0 : zobrist(i)));
  const zobAll = ops.map((_, i) => zobrist(i));
  const knownMask = new Uint32Array(words);
  ops.forEach((_, i) => {
    if (!unknown[i]) knownMask[i >>> 5]! |= 1 << (i & 31);
  });
  const hasUnknown = remainingKnown < n;
  let knownHash = 0;
  let fullHash = 0;
  type MemoEntry = { bits: Uint32Array; state: S };
  const exact = new Map<number, MemoEntry[]>();
  const dominating = new Map<number, MemoEntry[]>();
  const sameBits = (c: Uint32Array): boolean => {
    for (let w = 0; w < words; w++) if (c[w] !== bits[w]) return false;
    return true;
  };
  /** a ⊆ b, and b \ a holds unknown ops only: a node with set a dominates one with set b. */
  const dominates = (a: Uint32Array, b: Uint32Array): boolean => {
    for (let w = 0; w < words; w++) {
      const aw = a[w]!;
      const bw = b[w]!;
      if ((aw & ~bw) !== 0 || (bw & ~aw & knownMask[w]!) !== 0) return false;
    }
    return true;
  };
  const dominatedBy = (c: Uint32Array): boolean => dominates(c, bits);
  /** true when the node (bits, state) was visited or is dominated; otherwise records it. */
  const visit = (state: S): boolean => {
    const sh = Math.imul(hash(state), 0x27d4eb2d);
    const hExact = (fullHash ^ sh) >>> 0;
    const bucket = exact.get(hExact);
    if (bucket !== undefined) for (const c of bucket) if (sameBits(c.bits) && equal(c.state, state)) return true;
    const hDom = (knownHash ^ sh) >>> 0;
    const dom = hasUnknown ? dominating.get(hDom) : undefined;
    if (dom !== undefined) for (const c of dom) if (dominatedBy(c.bits) && equal(c.state, state)) return true;
    const entry = { bits: bits.slice(), state };
    if (bucket === undefined) exact.set(hExact, [entry]);
    else bucket.push(entry);
    if (hasUnknown) {
      if (dom === undefined) dominating.set(hDom, [entry]);
      else {
        // Keep only minimal sets: entries the new one dominates can never prune anything it
        // would not prune itself.
        let j = 0;
        for (const c of dom) if (!(dominates(entry.bits, c.bits) && equal(c.state, state))) dom[j++] = c;
        dom.length = j;
        dom.push(entry);
      }
    }
    return false;
  };

  // The linearized prefix as a stack of (call event, state before it).
  const stackCall: number[] = [];
  const stackState: S[] = [];
  let state = model.init();
  // Lazy order: phase 0 tries the known candidates of a node, phase 1 its unknown ones.
  let phase = 0;
  const stackPhase: number[] = [];

  // Explanation bookkeeping: the deepest prefix and the return event that ended it.
  let bestDepth = -1;
  let bestRecorded = false;
  let best: { prefix: number[]; stuck: number | undefined; candidates: number[] } = { prefix: [], stuck: undefined, candidates: [] };
  const recordBest = (returnEvent: number): void => {
    const candidates: number[] = [];
    for (let e = next[head]!; e !== -1 && e !== returnEvent; e = next[e]!) if ((e & 1) === 0) candidates.push(e >> 1);
    best = { prefix: stackCall.map((c) => c >> 1), stuck: returnEvent >> 1, candidates };
    bestRecorded = true;
  };

  let entry = next[head]!;
  while (entry !== -1) {
    if (!clock.tick()) return { kind: 'timeout' };
    if (--sliceLeft < 0) return { kind: 'slice' };
    if ((entry & 1) === 0) {
      const i = entry >> 1;
      if (lazyUnknown && (unknown[i] ? 1 : 0) !== phase) {
        entry = next[entry]!;
        continue;
      }
      const [ok, after] = model.step(state, ops[i]!.input, outputOf(i));
      if (ok) {
        bits[i >>> 5]! |= 1 << (i & 31);
        knownHash ^= zobKnown[i]!;
        fullHash ^= zobAll[i]!;
        if (!visit(after)) {
          stackCall.push(entry);
          stackState.push(state);
          stackPhase.push(phase);
          state = after;
          lift(entry);
          if (unknown[i]) remainingUnknown--;
          else if (--remainingKnown === 0) return { kind: 'ok' };
          if (stackCall.length > bestDepth) {
            bestDepth = stackCall.length;
            bestRecorded = false;
          }
          phase = 0;
          entry = next[head]!;
          continue;
        }
        bits[i >>> 5]! &= ~(1 << (i & 31));
        knownHash ^= zobKnown[i]!;
        fullHash ^= zobAll[i]!;
      }
      entry = next[entry]!;
    } else {
      if (lazyUnknown && phase === 0 && remainingUnknown > 0) {
        // This node's known candidates are exhausted: now its unknown ones.
        phase = 1;
        entry = next[head]!;
        continue;
      }
      // A return whose op is not linearized: the prefix cannot be extended past this point.
      if (stackCall.length >= bestDepth && !bestRecorded) {
        bestDepth = Math.max(bestDepth, stackCall.length);
        recordBest(entry);
      }
      if (stackCall.length === 0) break;
      const call = stackCall.pop()!;
      state = stackState.pop()!;
      phase = stackPhase.pop()!;
      const i = call >> 1;
      bits[i >>> 5]! &= ~(1 << (i & 31));
      knownHash ^= zobKnown[i]!;
      fullHash ^= zobAll[i]!;
      unlift(call);
      if (unknown[i]) remainingUnknown++;
      else remainingKnown++;
      entry = next[call]!;
    }
  }

  // Replay the best prefix to report the state it leads to.
  let s = model.init();
  for (const i of best.prefix) s = model.step(s, ops[i]!.input, outputOf(i))[1];
  return {
    kind: 'illegal',
    explanation: {
      longestPrefix: best.prefix.map((i) => ops[i]!),
      stateAfterPrefix: s,
      stuck: best.stuck === undefined ? undefined : ops[best.stuck],
      candidates: best.candidates.map((i) => ops[i]!),
    },
  };
}

/**
 * A readable account of a check result, for test failures and the simulator's trace. Only the
 * last `tail` ops of the prefix are listed (the violation is at its end); the explanation object
 * keeps all of them.
 */
export function describeResult<S, I, O>(model: Model<S, I, O>, r: CheckResult<S, I, O>, opts: { tail?: number } = {}): string {
  if (r.result === 'ok') return `linearizable (${r.partitions} partitions, ${r.steps} steps)`;
  if (r.result === 'unknown') return `unknown: ${r.reason} after ${r.steps} steps`;
  const op = (o: Operation<I, O>): string => {
    const out = o.return === Infinity ? undefined : o.output;
    const body = model.describeOperation ? model.describeOperation(o.input, out) : `${JSON.stringify(o.input)} -> ${o.return === Infinity ? '?' : JSON.stringify(out)}`;
    const who = o.clientId === undefined ? '' : `client ${o.clientId}: `;
    return `${who}${body}  [${o.call}, ${o.return === Infinity ? 'inf' : o.return}]`;
  };
  const e = r.explanation;
  const tail = opts.tail ?? 12;
  const state = model.describeState ? model.describeState(e.stateAfterPrefix) : JSON.stringify(e.stateAfterPrefix);
  return [
    `not linearizable (partition ${e.partition}, ${r.steps} steps)`,
    `longest linearizable prefix (${e.longestPrefix.length} ops):`,
    ...(e.longestPrefix.length > tail ? [`  ... ${e.longestPrefix.length - tail} earlier ops`] : []),
    ...e.longestPrefix.slice(Math.max(0, e.longestPrefix.length - tail)).map((o) => `  ${op(o)}`),
    `state after it: ${state}`,
    `cannot place: ${e.stuck ? op(e.stuck) : '(none)'}`,
    `other candidates at that point:`,
    ...e.candidates.filter((o) => o !== e.stuck).map((o) => `  ${op(o)}`),
  ].join('\n');
}
