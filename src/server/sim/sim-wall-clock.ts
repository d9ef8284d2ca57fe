// A node's wall clock in the scheduler simulation: true simulated time plus an offset the fault
// plan moves (a skew from the start, jumps forward and back later). Monotonic clocks are the
// Raft simulator's SimTimers and only advance; only the wall clock misbehaves, as NTP steps and
// bad hardware clocks do. Cluster time (cluster-clock.ts) must keep fires where they belong.
import type { SimScheduler } from '../../raft/sim/sim-scheduler.js';

/** Simulated ms per scheduler unit (a Raft tick of 50 ms is 5 units). */
export const MS_PER_UNIT = 10;

/** The true time a simulated instant stands for: the epoch jobs are scheduled from. */
export const EPOCH_MS = 1_800_000_000_000;

export function trueMs(sched: SimScheduler): number {
  return EPOCH_MS + sched.now * MS_PER_UNIT;
}

export class SimWallClock {
  offsetMs = 0;
  constructor(private readonly sched: SimScheduler) {}
  nowMs(): number {
    return trueMs(this.sched) + this.offsetMs;
  }
}
