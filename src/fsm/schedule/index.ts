// Schedule math for the state machine: pure, deterministic functions of their arguments (DESIGN I5).
// Every replica and every future leader must compute the same instants, so nothing here reads the
// clock, draws random numbers or does I/O.
import type { JobSpec, RetryPolicy } from '../../gen/herald/v1/job.js';
import { HeraldError } from '../../herald-error.js';

/** A retry policy with every default applied (see effectiveRetry). */
export type EffectiveRetry = Required<RetryPolicy>;

/** Throws HeraldError INVALID_SPEC | INVALID_CRON | UNKNOWN_TIME_ZONE with details.field set. */
export function validateSchedule(spec: JobSpec): void {
  if (spec.schedule?.kind === undefined) {
    throw new HeraldError('INVALID_SPEC', 'schedule is required', { field: 'spec.schedule' });
  }
}

/**
 * The first slot strictly after `afterMs`, honouring start (inclusive) / end (exclusive) bounds and
 * the DST policy; undefined when the schedule has no further slot. `anchorMs` is the job's creation
 * time (used by `every` without an explicit anchor). Slots are before jitter.
 */
export function nextSlotAfter(spec: JobSpec, afterMs: number, anchorMs: number): number | undefined {
  void spec;
  void afterMs;
  void anchorMs;
  return undefined; // provisional
}

/** Slots in [fromMs, toMs), oldest first, at most `limit` (for backfill and misfire). */
export function slotsInRange(
  spec: JobSpec,
  fromMs: number,
  toMs: number,
  anchorMs: number,
  limit: number,
): number[] {
  const out: number[] = [];
  let t = nextSlotAfter(spec, fromMs - 1, anchorMs);
  while (t !== undefined && t < toMs && out.length < limit) {
    out.push(t);
    t = nextSlotAfter(spec, t, anchorMs);
  }
  return out;
}

/** Deterministic offset in [0, jitterMs) from a hash of (jobId, slotMs); never reaches nextSlotMs. */
export function jitterOffsetMs(
  jobId: string,
  slotMs: number,
  jitterMs: number,
  nextSlotMs: number | undefined,
): number {
  void jobId;
  void slotMs;
  void jitterMs;
  void nextSlotMs;
  return 0; // provisional
}

/** Backoff before attempt `nextAttempt` (>= 2): exponential, capped, deterministic jitter from runId. */
export function retryBackoffMs(policy: RetryPolicy | undefined, nextAttempt: number, runId: string): number {
  void runId;
  const p = effectiveRetry(policy);
  return Math.min(p.maxBackoffMs, p.initialBackoffMs * p.backoffMultiplier ** Math.max(0, nextAttempt - 2));
}

/** Effective retry policy with defaults applied (max attempts 3, initial 1000, max 300000, x2). */
export function effectiveRetry(policy: RetryPolicy | undefined): EffectiveRetry {
  return {
    maxAttempts: policy?.maxAttempts || 3,
    initialBackoffMs: policy?.initialBackoffMs || 1000,
    maxBackoffMs: policy?.maxBackoffMs || 300_000,
    backoffMultiplier: policy?.backoffMultiplier || 2,
    nonRetryableErrorTypes: policy?.nonRetryableErrorTypes ?? [],
  };
}
