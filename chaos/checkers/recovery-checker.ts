// Recovery: after the last heal, a leader within a bound, and every slot due after the heal fired
// within a bound (a slot due while the cluster was still recovering is held to the leader bound
// plus the fire bound, counted from the heal). Both bounds are stated in the result.
import type { Run } from '../../src/gen/herald/v1/run.js';
import { percentile } from './interval-set.js';

export interface RecoveryBounds {
  /** A leader must be known this long after the heal. */
  leaderMs: number;
  /** A slot due after recovery must be fired (its run created) this long after its slot. */
  fireMs: number;
}

export interface RecoveryCheckInput {
  healMs: number;
  /** When the orchestrator first saw an agreed leader after the heal (undefined: never). */
  leaderSeenMs: number | undefined;
  /** Scheduled runs (any job) — fire delay is createdUnixMs − slotUnixMs. */
  runs: readonly Run[];
  /** Slots after this are not judged (the check stopped looking). */
  windowEndMs: number;
  bounds: RecoveryBounds;
}

export interface RecoveryCheckResult {
  ok: boolean;
  bounds: RecoveryBounds;
  leaderAfterHealMs: number | null;
  slotsAfterHeal: number;
  lateFires: number;
  fireDelayAfterHealMs: { p50: number; p99: number; max: number };
  problems: string[];
}

export function checkRecovery(input: RecoveryCheckInput): RecoveryCheckResult {
  const problems: string[] = [];
  const leaderAfter = input.leaderSeenMs === undefined ? null : Math.max(0, input.leaderSeenMs - input.healMs);
  if (leaderAfter === null || leaderAfter > input.bounds.leaderMs) {
    problems.push(`no leader within ${input.bounds.leaderMs} ms of the heal (${leaderAfter ?? 'never'})`);
  }
  const delays: number[] = [];
  let late = 0;
  for (const r of input.runs) {
    if (r.id.includes('~') || r.slotUnixMs <= input.healMs || r.slotUnixMs > input.windowEndMs) continue;
    const delay = r.createdUnixMs - r.slotUnixMs;
    delays.push(delay);
    // A slot that came due before the cluster was back is measured from the recovery point.
    const due = Math.max(r.slotUnixMs, input.healMs + input.bounds.leaderMs);
    if (r.createdUnixMs - due > input.bounds.fireMs) {
      late++;
      if (problems.length < 10) problems.push(`${r.id}: fired ${delay} ms after its slot (bound ${input.bounds.fireMs} ms after recovery)`);
    }
  }
  return {
    ok: problems.length === 0,
    bounds: input.bounds,
    leaderAfterHealMs: leaderAfter,
    slotsAfterHeal: delays.length,
    lateFires: late,
    fireDelayAfterHealMs: { p50: percentile(delays, 50), p99: percentile(delays, 99), max: delays.length ? Math.max(...delays) : 0 },
    problems,
  };
}
