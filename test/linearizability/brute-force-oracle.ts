// Test support: the definition of linearizability, executed literally. Tries every subset of the
// unknown-outcome ops and every order of the chosen ops that respects real time (a before b
// whenever a returned before b was called), stepping the model. Exponential, so only for tiny
// histories: the reference the WGL checker is compared against.

import type { Model, Operation } from '../../src/raft/linearizability/model.js';

export function bruteForceLinearizable<S, I, O>(model: Model<S, I, O>, history: readonly Operation<I, O>[]): boolean {
  const parts = model.partition ? model.partition(history) : [[...history]];
  return parts.every((p) => partitionLinearizable(model, p));
}

function partitionLinearizable<S, I, O>(model: Model<S, I, O>, ops: readonly Operation<I, O>[]): boolean {
  const n = ops.length;
  const unknown = ops.map((o) => o.return === Infinity);
  const unknownIdx = ops.map((_, i) => i).filter((i) => unknown[i]);
  for (let mask = 0; mask < 1 << unknownIdx.length; mask++) {
    const chosen = ops.map((_, i) => i).filter((i) => !unknown[i] || (mask & (1 << unknownIdx.indexOf(i))) !== 0);
    if (search(model, ops, chosen, [], model.init())) return true;
  }
  return n === 0;
}

function search<S, I, O>(model: Model<S, I, O>, ops: readonly Operation<I, O>[], remaining: number[], placed: number[], state: S): boolean {
  if (remaining.length === 0) return true;
  for (const i of remaining) {
    // i may go next only if no other remaining op returned before i was called.
    if (remaining.some((j) => j !== i && ops[j]!.return < ops[i]!.call)) continue;
    const out = ops[i]!.return === Infinity ? undefined : ops[i]!.output;
    const [ok, next] = model.step(state, ops[i]!.input, out);
    if (ok && search(model, ops, remaining.filter((j) => j !== i), [...placed, i], next)) return true;
  }
  return false;
}
