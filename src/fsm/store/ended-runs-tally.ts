// How many stored runs reached each counted state, per minute of when they reached it, over the
// last 24 hours: "failed / dead runs in the last hour" (JobService.CountRuns) without reading runs.
//
// Why a tally each node keeps in memory rather than counters in the replicated store: every
// replica writes every run record, so each can derive the same numbers from what it applies — no
// new keys, no FSM, effects or snapshot format change, nothing a cluster of mixed builds must
// agree on (replicated counters would need a feature level and a fold per command exactly as a
// one-entry-per-apply replica makes it). What it counts is a function of the store alone — the
// runs stored now in FAILED (by when their last attempt ended) or in a terminal state (by
// finished_unix_ms), as ListRuns shows them — so a re-driven or trimmed run leaves its count, and
// a tally seeded from the store equals one kept live (run-counts.ts seeds and feeds it).
import { RunState, type Run } from '../../gen/herald/v1/run.js';

export const MINUTE_MS = 60_000;
/** How far back a tally counts: older minutes are dropped. */
export const TALLY_WINDOW_MS = 24 * 3_600_000;

/** The states counted: the terminal ones and FAILED (a failed attempt with a retry due). */
export const COUNTED_STATES: readonly RunState[] = [
  RunState.RUN_STATE_SUCCEEDED,
  RunState.RUN_STATE_FAILED,
  RunState.RUN_STATE_DEAD,
  RunState.RUN_STATE_CANCELLED,
  RunState.RUN_STATE_SKIPPED,
  RunState.RUN_STATE_MISSED,
];

const SLOTS = Math.max(...COUNTED_STATES) + 1;
const COUNTED: readonly boolean[] = Array.from({ length: SLOTS }, (_, s) => COUNTED_STATES.includes(s));

export function isCountedState(state: number): boolean {
  return COUNTED[state] === true;
}

/** When a run reached its state: a FAILED run's last attempt end, any other's finish (0: none). */
export function runEndedAtMs(run: Run): number {
  if (run.state !== RunState.RUN_STATE_FAILED) return run.finishedUnixMs;
  return run.attempts[run.attempts.length - 1]?.endedUnixMs ?? 0;
}

/**
 * A batch's changes, flat: (state, ended at, +1 / −1) per run that entered or left a counted
 * state (or changed when it reached it). Flat numbers: no object per run on the apply path.
 */
export type TallyChanges = number[];

/** Appends the change of one run from (before, beforeAt) to (after, afterAt); −1: no run. */
export function noteRunChange(out: TallyChanges, before: number, beforeAt: number, after: number, afterAt: number): void {
  if (before === after && beforeAt === afterAt) return;
  if (before >= 0 && COUNTED[before] === true) out.push(before, beforeAt, -1);
  if (after >= 0 && COUNTED[after] === true) out.push(after, afterAt, 1);
}

export interface RunCountsAnswer {
  /** The instant counted from: the asked one rounded down to its minute, no earlier than the window. */
  readonly fromMs: number;
  /** Per counted state. */
  readonly counts: ReadonlyMap<RunState, number>;
}

export class EndedRunsTally {
  /** Minute number → count per state (indexed by state number). */
  private readonly minutes = new Map<number, Float64Array>();
  /** Minutes below this are dropped (and changes to them ignored, alike for seed and live). */
  private floorMinute = -Infinity;

  constructor(private readonly nowMs: () => number = Date.now) {}

  add(state: number, endedAtMs: number, delta: number): void {
    if (COUNTED[state] !== true || endedAtMs <= 0) return;
    const m = Math.floor(endedAtMs / MINUTE_MS);
    if (m < this.floorMinute) return;
    let b = this.minutes.get(m);
    if (!b) this.minutes.set(m, (b = new Float64Array(SLOTS)));
    b[state]! += delta;
  }

  addAll(changes: readonly number[]): void {
    for (let i = 0; i + 2 < changes.length; i += 3) this.add(changes[i]!, changes[i + 1]!, changes[i + 2]!);
  }

  /** Drops the minutes that left the window. */
  prune(): void {
    const floor = Math.floor((this.nowMs() - TALLY_WINDOW_MS) / MINUTE_MS);
    if (floor <= this.floorMinute) return;
    this.floorMinute = floor;
    for (const m of this.minutes.keys()) if (m < floor) this.minutes.delete(m);
  }

  /** Runs per counted state that reached it at or after `sinceMs` (by minute; 0: the whole window). */
  count(sinceMs: number): RunCountsAnswer {
    this.prune();
    const from = Math.max(Math.floor(sinceMs / MINUTE_MS), this.floorMinute);
    const sums = new Float64Array(SLOTS);
    for (const [m, b] of this.minutes) {
      if (m < from) continue;
      for (let s = 0; s < SLOTS; s++) sums[s]! += b[s]!;
    }
    return { fromMs: from * MINUTE_MS, counts: new Map(COUNTED_STATES.map((s) => [s, sums[s]!])) };
  }
}
