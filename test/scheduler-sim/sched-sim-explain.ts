// One line per violation of a scheduler simulation run ('' when clean), with how to replay it.
import type { SchedSimResult } from '../../src/server/sim/sched-simulator.js';

export function explain(r: SchedSimResult): string {
  return r.violations.map((v) => `seed ${r.seed} (${r.nodes} nodes): ${v.kind}: ${v.detail} — replay: npm run sim -- --system scheduler --seed ${r.seed} --nodes ${r.nodes} --trace`).join('\n');
}

/** The run length of the fresh-seed suites (simulated ms of chaos / 10): short runs, many seeds. */
export const FRESH_CHAOS_UNITS = 500;
