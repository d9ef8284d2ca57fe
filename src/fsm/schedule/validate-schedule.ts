// Validation of everything the schedule math reads from a JobSpec, so that the FSM can reject a
// bad job before it is ever proposed (DESIGN §7) and the math below never sees nonsense.
import { DstFoldPolicy, DstGapPolicy, type JobSpec } from '../../gen/herald/v1/job.js';
import { HeraldError } from '../../herald-error.js';
import { MAX_INSTANT } from './cron-schedule.js';
import { validateRetryPolicy } from './retry-policy.js';
import type { ScheduleCaches } from './schedule-caches.js';

export const MIN_INTERVAL_MS = 1000;

function invalid(field: string, message: string): never {
  throw new HeraldError('INVALID_SPEC', message, { field });
}

function checkInstant(field: string, value: number, required: boolean): void {
  if (!Number.isSafeInteger(value) || value < 0 || value > MAX_INSTANT) {
    invalid(field, `${field} must be milliseconds since the epoch between 0 and ${MAX_INSTANT} (year 9999), got ${value}`);
  }
  if (required && value === 0) invalid(field, `${field} is required`);
}

/**
 * Throws HeraldError INVALID_SPEC | INVALID_CRON | UNKNOWN_TIME_ZONE with details.field set.
 * Covers the schedule, the bounds, jitter, the DST policy and the retry policy.
 */
export function validateSchedule(spec: JobSpec, caches: ScheduleCaches): void {
  checkInstant('spec.start_unix_ms', spec.startUnixMs, false);
  checkInstant('spec.end_unix_ms', spec.endUnixMs, false);
  if (spec.startUnixMs !== 0 && spec.endUnixMs !== 0 && spec.startUnixMs >= spec.endUnixMs) {
    invalid(
      'spec.end_unix_ms',
      `end_unix_ms (${spec.endUnixMs}) must be after start_unix_ms (${spec.startUnixMs}): the end bound is exclusive`,
    );
  }
  if (!Number.isSafeInteger(spec.jitterMs) || spec.jitterMs < 0) {
    invalid('spec.jitter_ms', `jitter_ms must be an integer >= 0, got ${spec.jitterMs}`);
  }
  if (spec.dst !== undefined) {
    if (!Object.values(DstGapPolicy).includes(spec.dst.gap) || spec.dst.gap === DstGapPolicy.UNRECOGNIZED) {
      invalid('spec.dst.gap', `unknown DST gap policy ${spec.dst.gap}`);
    }
    if (!Object.values(DstFoldPolicy).includes(spec.dst.fold) || spec.dst.fold === DstFoldPolicy.UNRECOGNIZED) {
      invalid('spec.dst.fold', `unknown DST fold policy ${spec.dst.fold}`);
    }
  }
  validateRetryPolicy(spec.retry);

  const kind = spec.schedule?.kind;
  if (kind === undefined) invalid('spec.schedule', 'schedule is required: set one of at, cron or every');
  switch (kind.$case) {
    case 'at': {
      const at = kind.at.atUnixMs;
      checkInstant('spec.schedule.at.at_unix_ms', at, true);
      // The only slot must fall inside the bounds, or the job could never fire.
      if (at < spec.startUnixMs || (spec.endUnixMs !== 0 && at >= spec.endUnixMs)) {
        invalid('spec.schedule.at.at_unix_ms', `at_unix_ms (${at}) is outside the job's bounds [start_unix_ms, end_unix_ms)`);
      }
      return;
    }
    case 'cron':
      caches.cron(kind.cron.expression);
      caches.zone(kind.cron.timeZone);
      return;
    case 'every': {
      const { intervalMs, anchorUnixMs } = kind.every;
      validateInterval(intervalMs);
      checkInstant('spec.schedule.every.anchor_unix_ms', anchorUnixMs, false);
      return;
    }
  }
}

/** Also used on the hot path so a bad interval can never loop or divide by zero. */
export function validateInterval(intervalMs: number): void {
  if (!Number.isSafeInteger(intervalMs) || intervalMs < MIN_INTERVAL_MS) {
    invalid('spec.schedule.every.interval_ms', `interval_ms must be an integer >= ${MIN_INTERVAL_MS}, got ${intervalMs}`);
  }
}
