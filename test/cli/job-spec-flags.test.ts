// Flag parsing of `job create` / `job update`, in process (the subprocess tests cover wiring).
import { describe, expect, it } from 'vitest';
import { InvalidSpecError } from '../../src/client/errors.js';
import { MisfirePolicy, OverlapPolicy } from '../../src/gen/herald/v1/job.js';
import { specForCreate, specForUpdate } from '../../src/cli/job-spec-flags.js';
import { parseInstant } from '../../src/cli/parse-instant.js';
import { UsageError } from '../../src/cli/usage-error.js';
import { collectLimited } from '../../src/cli/paging.js';
import { renderTable } from '../../src/cli/output/table.js';

describe('job spec flags', () => {
  it('maps every create flag onto the spec', () => {
    const spec = specForCreate({
      taskType: 'report',
      cron: '0 2 * * *',
      tz: 'Europe/Berlin',
      payload: '{"a":1}',
      start: '2030-01-01T00:00:00Z',
      end: '2031-01-01T00:00:00Z',
      maxAttempts: '5',
      backoff: '30s',
      overlap: 'buffer-one',
      misfire: 'run-all',
      startingDeadline: '2m',
      jitter: '10s',
      timeoutMs: '60000',
      lease: '45s',
      label: ['team=finance', 'tier=1'],
      priority: '-7',
    });
    expect(spec).toMatchObject({
      taskType: 'report',
      schedule: { kind: { $case: 'cron', cron: { expression: '0 2 * * *', timeZone: 'Europe/Berlin' } } },
      startUnixMs: Date.UTC(2030, 0, 1),
      endUnixMs: Date.UTC(2031, 0, 1),
      retry: { maxAttempts: 5, initialBackoffMs: 30_000 },
      overlapPolicy: OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE,
      misfirePolicy: MisfirePolicy.MISFIRE_POLICY_RUN_ALL,
      startingDeadlineMs: 120_000,
      jitterMs: 10_000,
      executionTimeoutMs: 60_000,
      leaseDurationMs: 45_000,
      labels: { team: 'finance', tier: '1' },
      priority: -7,
    });
    expect(Buffer.from(spec.payload).toString()).toBe('{"a":1}');
  });

  it('rejects conflicting and invalid flags with the flag named', () => {
    expect(() => specForCreate({ taskType: 't', every: '5s', timeoutMs: '1000', execTimeout: '1s' })).toThrow(/--timeout-ms and --exec-timeout/);
    expect(() => specForCreate({ taskType: 't', every: '5s', maxAttempts: 'x' })).toThrow(UsageError);
    expect(() => specForCreate({ taskType: 't', every: '500ms' })).toThrow(InvalidSpecError);
    expect(() => specForCreate({ taskType: 't', every: '5s', start: '2031-01-01T00:00:00Z', end: '2030-01-01T00:00:00Z' })).toThrow(/end: must be after start/);
  });

  it('update replaces only the given fields and merges labels (k= removes one)', () => {
    const base = specForCreate({ taskType: 'report', cron: '0 2 * * *', tz: 'Europe/Berlin', payload: '{"a":1}', maxAttempts: '5', label: ['a=1', 'b=2'] });
    const next = specForUpdate({ every: '10m', label: ['b=', 'c=3'], backoff: '1s' }, base);
    expect(next.schedule).toEqual({ kind: { $case: 'every', every: { intervalMs: 600_000, anchorUnixMs: 0 } } });
    expect(next.taskType).toBe('report');
    expect(next.payload).toEqual(base.payload);
    expect(next.retry).toMatchObject({ maxAttempts: 5, initialBackoffMs: 1_000 });
    expect(next.labels).toEqual({ a: '1', c: '3' });
    expect(base.labels).toEqual({ a: '1', b: '2' }); // the stored spec object is not mutated
  });

  it('alert flags and --pause-after-dead: create sets them; update changes only the events given ("" removes one)', () => {
    const base = specForCreate({ taskType: 'report', every: '1h', alertOnDead: 'alerts', alertOnMissed: 'alerts', pauseAfterDead: '3' });
    expect(base.alerts).toEqual({ onFailure: '', onDead: 'alerts', onMissed: 'alerts', onWatchdog: '' });
    expect(base.pauseAfterDead).toBe(3);
    const next = specForUpdate({ alertOnMissed: '', alertOnWatchdog: 'pager', pauseAfterDead: '0' }, base);
    expect(next.alerts).toEqual({ onFailure: '', onDead: 'alerts', onMissed: '', onWatchdog: 'pager' });
    expect(next.pauseAfterDead).toBe(0);
    expect(specForUpdate({ priority: '1' }, base).alerts).toEqual(base.alerts);
    expect(() => specForCreate({ taskType: 't', every: '5s', alertOnDead: 'a b' })).toThrow(/alerts.onDead/);
    expect(() => specForCreate({ taskType: 't', every: '5s', pauseAfterDead: 'many' })).toThrow(/--pause-after-dead/);
  });
});

describe('instants', () => {
  const now = Date.UTC(2026, 10, 29, 12, 0, 0);
  it('accepts ISO with zone, epoch ms and relative forms', () => {
    expect(parseInstant('2026-12-01T09:00:00+01:00', '--at', now)).toBe(Date.UTC(2026, 11, 1, 8));
    expect(parseInstant('1795942972357', '--at', now)).toBe(1795942972357);
    expect(parseInstant('+30s', '--at', now)).toBe(now + 30_000);
    expect(parseInstant('in 1h', '--at', now)).toBe(now + 3_600_000);
    expect(parseInstant('2h ago', '--from', now)).toBe(now - 7_200_000);
    expect(parseInstant('-5m', '--from', now)).toBe(now - 300_000);
    expect(parseInstant('now', '--to', now)).toBe(now);
  });
  it('rejects local times without a zone (their meaning would depend on the machine)', () => {
    expect(() => parseInstant('2026-12-01T09:00:00', '--at', now)).toThrow(/not an instant/);
  });
});

describe('output helpers', () => {
  it('renders aligned tables', () => {
    expect(renderTable(['id', 'state'], [['a-long-id', 'active'], ['b', 'paused']])).toBe('ID         STATE\na-long-id  active\nb          paused\n');
  });
  it('--limit stops fetching once satisfied and says whether more exist', async () => {
    const pages = [
      { items: [1, 2, 3], nextPageToken: 'p2' },
      { items: [4, 5, 6], nextPageToken: 'p3' },
      { items: [7], nextPageToken: '' },
    ];
    const calls: string[] = [];
    const fetch = async (token: string) => {
      calls.push(token);
      return pages[token === '' ? 0 : Number(token.slice(1)) - 1]!;
    };
    expect(await collectLimited(4, fetch)).toEqual({ items: [1, 2, 3, 4], more: true });
    expect(calls).toEqual(['', 'p2']);
    expect(await collectLimited(0, fetch)).toEqual({ items: [1, 2, 3, 4, 5, 6, 7], more: false });
  });
});
