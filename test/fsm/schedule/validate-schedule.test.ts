// validateSchedule: each bad input gets a typed error with the field it is about.
import { describe, expect, it } from 'vitest';
import { DstFoldPolicy, DstGapPolicy, type JobSpec } from '../../../src/gen/herald/v1/job.js';
import { validateSchedule, ScheduleCaches } from '../../../src/fsm/schedule/index.js';
import { isHeraldError, type ErrorCode } from '../../../src/herald-error.js';
import { atSpec, cronSpec, everySpec, jobSpec, ms } from './spec-builders.js';

const caches = new ScheduleCaches();

const T = ms('2026-06-01T00:00:00Z');

describe('validateSchedule rejects', () => {
  it.each<{ name: string; spec: JobSpec; code: ErrorCode; field: string; message?: RegExp }>([
    { name: 'no schedule', spec: jobSpec(undefined), code: 'INVALID_SPEC', field: 'spec.schedule' },
    { name: 'bad cron syntax', spec: cronSpec('61 * * * *'), code: 'INVALID_CRON', field: 'spec.schedule.cron.expression', message: /minute/ },
    {
      name: 'unknown time zone', spec: cronSpec('0 * * * *', 'Mars/Olympus_Mons'), code: 'UNKNOWN_TIME_ZONE',
      field: 'spec.schedule.cron.time_zone', message: /"Mars\/Olympus_Mons"/,
    },
    { name: 'a time zone with stray spaces', spec: cronSpec('0 * * * *', ' UTC'), code: 'UNKNOWN_TIME_ZONE', field: 'spec.schedule.cron.time_zone' },
    { name: 'interval below 1 s', spec: everySpec(999), code: 'INVALID_SPEC', field: 'spec.schedule.every.interval_ms' },
    { name: 'fractional interval', spec: everySpec(1500.5), code: 'INVALID_SPEC', field: 'spec.schedule.every.interval_ms' },
    { name: 'negative anchor', spec: everySpec(1000, -1), code: 'INVALID_SPEC', field: 'spec.schedule.every.anchor_unix_ms' },
    { name: 'one-off without an instant', spec: atSpec(0), code: 'INVALID_SPEC', field: 'spec.schedule.at.at_unix_ms' },
    { name: 'one-off before the start bound', spec: atSpec(T, { startUnixMs: T + 1 }), code: 'INVALID_SPEC', field: 'spec.schedule.at.at_unix_ms' },
    { name: 'one-off at the exclusive end bound', spec: atSpec(T, { endUnixMs: T }), code: 'INVALID_SPEC', field: 'spec.schedule.at.at_unix_ms' },
    { name: 'start equal to end', spec: everySpec(1000, 0, { startUnixMs: T, endUnixMs: T }), code: 'INVALID_SPEC', field: 'spec.end_unix_ms', message: /exclusive/ },
    { name: 'start after end', spec: cronSpec('* * * * *', '', 'shift', 'first', { startUnixMs: T + 1, endUnixMs: T }), code: 'INVALID_SPEC', field: 'spec.end_unix_ms' },
    { name: 'negative start', spec: everySpec(1000, 0, { startUnixMs: -5 }), code: 'INVALID_SPEC', field: 'spec.start_unix_ms' },
    { name: 'end beyond year 9999', spec: everySpec(1000, 0, { endUnixMs: 8.64e15 }), code: 'INVALID_SPEC', field: 'spec.end_unix_ms' },
    { name: 'negative jitter', spec: everySpec(1000, 0, { jitterMs: -1 }), code: 'INVALID_SPEC', field: 'spec.jitter_ms' },
    { name: 'unknown DST gap policy', spec: cronSpec('* * * * *', '', 'shift', 'first', { dst: { gap: 7 as DstGapPolicy, fold: DstFoldPolicy.DST_FOLD_POLICY_UNSPECIFIED, foldAuto: false } }), code: 'INVALID_SPEC', field: 'spec.dst.gap' },
    { name: 'unrecognized DST fold policy', spec: cronSpec('* * * * *', '', 'shift', 'first', { dst: { gap: DstGapPolicy.DST_GAP_POLICY_UNSPECIFIED, fold: DstFoldPolicy.UNRECOGNIZED, foldAuto: false } }), code: 'INVALID_SPEC', field: 'spec.dst.fold' },
    {
      name: 'bad retry policy',
      spec: everySpec(1000, 0, { retry: { maxAttempts: 1000, initialBackoffMs: 0, maxBackoffMs: 0, backoffMultiplier: 0, nonRetryableErrorTypes: [] } }),
      code: 'INVALID_SPEC', field: 'spec.retry.max_attempts',
    },
  ])('$name → $code at $field', ({ spec, code, field, message }) => {
    let error: unknown;
    try {
      validateSchedule(spec, caches);
    } catch (e) {
      error = e;
    }
    expect(isHeraldError(error, code)).toBe(true);
    if (!isHeraldError(error)) return;
    expect(error.details.field).toBe(field);
    if (message) expect(error.message).toMatch(message);
  });
});

describe('validateSchedule accepts', () => {
  it.each<{ name: string; spec: JobSpec }>([
    { name: 'cron in UTC (empty zone)', spec: cronSpec('0 9 * * MON-FRI') },
    { name: 'cron with seconds in a zone', spec: cronSpec('*/10 * * * * *', 'Australia/Lord_Howe', 'skip', 'both') },
    { name: 'cron with L', spec: cronSpec('0 0 L * *', 'Europe/Berlin') },
    { name: 'a zone alias', spec: cronSpec('0 0 * * *', 'Etc/UTC') },
    { name: 'every with bounds', spec: everySpec(1000, 0, { startUnixMs: T, endUnixMs: T + 1 }) },
    { name: 'one-off inside its bounds', spec: atSpec(T, { startUnixMs: T, endUnixMs: T + 1 }) },
  ])('$name', ({ spec }) => {
    expect(() => validateSchedule(spec, caches)).not.toThrow();
  });
});
