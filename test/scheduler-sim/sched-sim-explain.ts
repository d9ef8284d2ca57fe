// One line per violation of a scheduler simulation run ('' when clean), with how to replay it.
import type { SchedSimResult } from '../../src/server/sim/sched-simulator.js';

export function explain(r: SchedSimResult): string {
  return r.violations.map((v) => `seed ${r.seed} (${r.nodes} nodes): ${v.kind}: ${v.detail} — replay: ${replayCommand(r)}`).join('\n');
}

/** Every flag that makes the replay the run that failed (the chaos length and fault set included). */
export function replayCommand(r: Pick<SchedSimResult, 'seed' | 'nodes' | 'chaosUnits' | 'faultSet'>): string {
  return `npm run sim -- --system scheduler --seed ${r.seed} --nodes ${r.nodes} --chaos-units ${r.chaosUnits}${r.faultSet !== 'v3' ? ` --faults ${r.faultSet}` : ''} --trace`;
}

/** The run length of the fresh-seed suites (simulated ms of chaos / 10): short runs, many seeds. */
export const FRESH_CHAOS_UNITS = 500;
