import type { SimResult } from '../../src/raft/sim/simulator.js';

/** The violations of a run, one line each ('' when clean): a readable assertion message. */
export function explain(r: SimResult): string {
  return r.violations.map((v) => `seed ${r.seed}/${r.nodes}: ${v.kind} at t=${v.at}: ${v.detail}`).join('\n');
}
