// A node's wall clock in the scheduler simulation: true simulated time plus an offset the fault
// plan moves (a skew from the start, jumps forward and back later). Monotonic clocks are the
// Raft simulator's SimTimers and only advance; only the wall clock misbehaves, as NTP steps and
// bad hardware clocks do. Cluster time (cluster-clock.ts) must keep fires where they belong.
import type { SimScheduler } from '../../raft/sim/sim-scheduler.js';

/** Simulated ms per scheduler unit (a Raft tick of 50 ms is 5 units). */
export const MS_PER_UNIT = 10;

/** The true time the start of a run stands for, unless the run sets its own (setEpoch). */
export const EPOCH_MS = 1_800_000_000_000;

/** Runs whose epoch was drawn (near a DST change, for cron jobs in a zone that has one). */
const epochs = new WeakMap<SimScheduler, number>();

/** The true time instant 0 of this run's scheduler stands for. */
export function setEpoch(sched: SimScheduler, epochMs: number): void {
  epochs.set(sched, epochMs);
}

export function trueMs(sched: SimScheduler): number {
  return (epochs.get(sched) ?? EPOCH_MS) + sched.now * MS_PER_UNIT;
}

export class SimWallClock {
  offsetMs = 0;
  constructor(private readonly sched: SimScheduler) {}
  nowMs(): number {
    return trueMs(this.sched) + this.offsetMs;
  }
}
