import { describe, expect, it } from 'vitest';
import { DstFoldPolicy, DstGapPolicy, JobSpec, MisfirePolicy, OverlapPolicy } from '../../src/gen/herald/v1/job.js';
import { at, cron, every, jobSpec } from '../../src/client/job-spec-builders.js';
import { InvalidSpecError } from '../../src/client/errors.js';

describe('schedule builders', () => {
  it('every() builds an EverySchedule with an optional anchor', () => {
    expect(every('5m')).toEqual({ schedule: { kind: { $case: 'every', every: { intervalMs: 300_000, anchorUnixMs: 0 } } } });
    expect(every('1s', { anchor: new Date(1_700_000_000_000) }).schedule).toEqual({
      kind: { $case: 'every', every: { intervalMs: 1_000, anchorUnixMs: 1_700_000_000_000 } },
    });
  });

  it('every() rejects intervals under one second and bad text', () => {
    expect(() => every('500ms')).toThrow(/at least 1s/);
    expect(() => every('5 minutes')).toThrow(InvalidSpecError);
  });

  it('cron() keeps the expression, zone and DST policy', () => {
    expect(cron('0 2 * * *', { tz: 'Europe/Berlin', dst: { gap: 'skip', fold: 'both' } })).toEqual({
      schedule: { kind: { $case: 'cron', cron: { expression: '0 2 * * *', timeZone: 'Europe/Berlin' } } },
      dst: { gap: DstGapPolicy.DST_GAP_POLICY_SKIP, fold: DstFoldPolicy.DST_FOLD_POLICY_BOTH, foldAuto: false },
    });
    expect(cron('0 * * * *', { dst: { fold: 'auto' } }).dst?.fold).toBe(DstFoldPolicy.DST_FOLD_POLICY_AUTO);
    expect(cron('*/10  * * * * *')).toEqual({
      schedule: { kind: { $case: 'cron', cron: { expression: '*/10 * * * * *', timeZone: '' } } },
    });
  });

  it('cron() rejects wrong field counts, stray characters, unknown zones and DST values', () => {
    expect(() => cron('0 2 * *')).toThrow(/has 4 fields/);
    expect(() => cron('0 2 * * * * *')).toThrow(/has 7 fields/);
    expect(() => cron('0 2 * * $')).toThrow(/invalid field "\$"/);
    expect(() => cron('')).toThrow(/empty expression/);
    expect(() => cron('0 2 * * *', { tz: 'Mars/Olympus' })).toThrow(/unknown time zone "Mars\/Olympus"/);
    expect(() => cron('0 2 * * *', { dst: { gap: 'later' as never } })).toThrow(/cron.dst.gap: unknown value "later"/);
  });

  it('at() accepts a Date or epoch ms and rejects invalid instants', () => {
    expect(at(new Date(1_800_000_000_000)).schedule).toEqual({ kind: { $case: 'at', at: { atUnixMs: 1_800_000_000_000 } } });
    expect(at(1_800_000_000_000).schedule.kind).toEqual({ $case: 'at', at: { atUnixMs: 1_800_000_000_000 } });
    expect(() => at(new Date('nope'))).toThrow(/at: expected a valid Date/);
    expect(() => at(-5)).toThrow(InvalidSpecError);
  });
});

describe('jobSpec', () => {
  it('produces exactly the expected JobSpec from every option', () => {
    const spec = jobSpec({
      taskType: 'email.digest',
      schedule: cron('0 2 * * *', { tz: 'Europe/Berlin', dst: { gap: 'shiftForward', fold: 'first' } }),
      payload: { to: 'ops@example.com', n: 3 },
      retry: { maxAttempts: 5, backoff: '1s', maxBackoff: '5m', multiplier: 3, nonRetryableErrorTypes: ['BadInput'] },
      overlap: 'forbid',
      misfire: 'runAll',
      misfireMaxRuns: 10,
      startingDeadline: '30s',
      jitter: '10s',
      timeout: '1m',
      lease: '30s',
      start: 1_700_000_000_000,
      end: new Date(1_900_000_000_000),
      labels: { team: 'growth' },
      priority: 7,
      retention: { maxRuns: 50, maxAge: '2d' },
      maxPendingRuns: 20,
      alerts: { onDead: 'alerts', onMissed: 'alerts' },
      pauseAfterDead: 3,
    });
    const expected: JobSpec = {
      taskType: 'email.digest',
      payload: Buffer.from('{"to":"ops@example.com","n":3}'),
      schedule: { kind: { $case: 'cron', cron: { expression: '0 2 * * *', timeZone: 'Europe/Berlin' } } },
      startUnixMs: 1_700_000_000_000,
      endUnixMs: 1_900_000_000_000,
      retry: {
        maxAttempts: 5,
        initialBackoffMs: 1_000,
        maxBackoffMs: 300_000,
        backoffMultiplier: 3,
        nonRetryableErrorTypes: ['BadInput'],
      },
      executionTimeoutMs: 60_000,
      leaseDurationMs: 30_000,
      misfirePolicy: MisfirePolicy.MISFIRE_POLICY_RUN_ALL,
      misfireMaxRuns: 10,
      startingDeadlineMs: 30_000,
      overlapPolicy: OverlapPolicy.OVERLAP_POLICY_FORBID,
      jitterMs: 10_000,
      dst: { gap: DstGapPolicy.DST_GAP_POLICY_SHIFT_FORWARD, fold: DstFoldPolicy.DST_FOLD_POLICY_FIRST, foldAuto: false },
      retention: { maxRuns: 50, maxAgeMs: 172_800_000 },
      labels: { team: 'growth' },
      priority: 7,
      maxPendingRuns: 20,
      alerts: { onFailure: '', onDead: 'alerts', onMissed: 'alerts', onWatchdog: '' },
      pauseAfterDead: 3,
    };
    expect(spec).toEqual(expected);
    // And it survives the wire unchanged.
    expect(JobSpec.decode(JobSpec.encode(spec).finish())).toEqual(expected);
  });

  it('leaves unset options at their protobuf defaults (server defaults apply)', () => {
    expect(jobSpec({ taskType: 't', schedule: every('1h') })).toEqual({
      ...JobSpec.fromPartial({}),
      taskType: 't',
      schedule: { kind: { $case: 'every', every: { intervalMs: 3_600_000, anchorUnixMs: 0 } } },
    });
  });

  it('encodes bytes as given and strings as UTF-8', () => {
    expect(jobSpec({ taskType: 't', schedule: every('1h'), payload: new Uint8Array([1, 2, 3]) }).payload).toEqual(Buffer.from([1, 2, 3]));
    expect(jobSpec({ taskType: 't', schedule: every('1h'), payload: 'héllo' }).payload.toString('utf8')).toBe('héllo');
  });

  it.each([
    [{ schedule: every('1h') }, /taskType: required/],
    [{ taskType: 't' }, /schedule: required/],
    [{ taskType: 't', schedule: every('1h'), overlap: 'sometimes' }, /overlap: unknown value "sometimes"/],
    [{ taskType: 't', schedule: every('1h'), misfire: 'never' }, /misfire: unknown value/],
    [{ taskType: 't', schedule: every('1h'), retry: { backoff: 'soon' } }, /retry.backoff: invalid duration/],
    [{ taskType: 't', schedule: every('1h'), retry: { backoff: '5m', maxBackoff: '1s' } }, /maxBackoff: must not be less/],
    [{ taskType: 't', schedule: every('1h'), retry: { maxAttempts: 0 } }, /retry.maxAttempts/],
    [{ taskType: 't', schedule: every('1h'), retry: { multiplier: 0.5 } }, /retry.multiplier/],
    [{ taskType: 't', schedule: every('1h'), priority: 5000 }, /priority: expected a whole number in -1000..1000/],
    [{ taskType: 't', schedule: every('1h'), start: 2000, end: 1000 }, /end: must be after start/],
    [{ taskType: 't', schedule: every('1h'), timeout: '1 minute' }, /^timeout: /],
    [{ taskType: 't', schedule: every('1h'), labels: { a: 1 } }, /labels: "a"/],
    [{ taskType: 't', schedule: every('1h'), overlpa: 'forbid' }, /unknown option "overlpa"/],
    [{ taskType: 't', schedule: every('1h'), alerts: { onDead: 'has space' } }, /alerts.onDead: a task type of 1–114 characters/],
    [{ taskType: 't', schedule: every('1h'), alerts: { onDaed: 'x' } }, /unknown option "onDaed"/],
    [{ taskType: 't', schedule: every('1h'), pauseAfterDead: 1001 }, /pauseAfterDead: expected a whole number in 0..1000/],
  ])('rejects bad input %#', (input, message) => {
    expect(() => jobSpec(input as never)).toThrow(InvalidSpecError);
    expect(() => jobSpec(input as never)).toThrow(message);
  });
});
