import { afterEach, describe, expect, it } from 'vitest';
import { JobState } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { IDEMPOTENCY_TTL_MS } from '../../src/fsm/index.js';
import { atSpec, everySpec, openTestFsm, spec, T0, type TestFsm } from './fsm-test-kit.js';

let t: TestFsm;
afterEach(async () => t?.close());

const put = (jobId: string, s = everySpec(60_000), nowMs = T0, idempotencyKey = '') =>
  ({ type: 'putJob', nowMs, jobId, spec: s, idempotencyKey }) as const;
const fire = (jobId: string, slotMs: number, nowMs = slotMs) =>
  ({ type: 'fireRuns', nowMs, misfireThresholdMs: 60_000, items: [{ jobId, slotMs }] }) as const;

describe('putJob', () => {
  it('stores the job with version 1, its first slot and a due-index entry', async () => {
    t = await openTestFsm();
    const r = await t.one(put('a', everySpec(60_000), T0 + 1), 'job');
    expect(r.created).toBe(true);
    expect(r.job).toMatchObject({ id: 'a', version: 1, state: JobState.JOB_STATE_ACTIVE, createdUnixMs: T0 + 1, nextFireUnixMs: T0 + 1 });
    expect(await t.fsm.getJob('a')).toEqual(r.job);
    expect(await t.fsm.dueWindow(0, T0 + 2, 10)).toEqual([{ jobId: 'a', slotMs: T0 + 1 }]);
  });

  it('refuses a taken id with ALREADY_EXISTS and changes nothing', async () => {
    t = await openTestFsm();
    await t.one(put('a'));
    const before = await t.fsm.getJob('a');
    const r = await t.one(put('a', everySpec(5000)), 'job');
    expect(r.error?.code).toBe('ALREADY_EXISTS');
    expect(await t.fsm.getJob('a')).toEqual(before);
  });

  it('answers a retry with the same idempotency key with the first job, for 24 h', async () => {
    t = await openTestFsm();
    const first = await t.one(put('a', everySpec(60_000), T0, 'key-1'), 'job');
    const again = await t.one(put('b', everySpec(60_000), T0 + 1000, 'key-1'), 'job');
    expect(again.created).toBe(false);
    expect(again.job?.id).toBe('a');
    expect(await t.fsm.getJob('b')).toBeUndefined();
    expect(first.created).toBe(true);
    // After expiry the key is free again.
    const later = await t.one(put('c', everySpec(60_000), T0 + IDEMPOTENCY_TTL_MS, 'key-1'), 'job');
    expect(later.created).toBe(true);
    expect(later.job?.id).toBe('c');
  });

  it('keyed creates in one apply batch (their records read ahead together) see each other and the store', async () => {
    t = await openTestFsm();
    await t.one(put('stored', everySpec(60_000), T0, 'key-stored'));
    const [a, b, c, d] = await t.apply(
      put('x', everySpec(60_000), T0 + 1, 'key-x'),
      put('y', everySpec(60_000), T0 + 2, 'key-x'), // the same key as the entry before it
      put('z', everySpec(60_000), T0 + 3, 'key-stored'), // a key stored by an earlier apply
      put('w', everySpec(60_000), T0 + 4, 'key-w'),
    );
    expect(a).toMatchObject({ type: 'job', created: true, job: { id: 'x' } });
    expect(b).toMatchObject({ type: 'job', created: false, job: { id: 'x' } });
    expect(c).toMatchObject({ type: 'job', created: false, job: { id: 'stored' } });
    expect(d).toMatchObject({ type: 'job', created: true, job: { id: 'w' } });
    expect(await t.fsm.getJob('y')).toBeUndefined();
    expect(await t.fsm.getJob('z')).toBeUndefined();
  });

  it('a keyed create refused with ALREADY_EXISTS keeps that answer: a late duplicate of it never creates the job', async () => {
    // Chaos seed 311: a create's first attempt stalled in the cluster, the client's retry (same
    // key) was told ALREADY_EXISTS, the job was then deleted, and the stalled attempt applied last.
    t = await openTestFsm();
    await t.one(put('a', everySpec(60_000), T0, 'other-key'));
    const retry = await t.one(put('a', everySpec(5000), T0 + 10, 'key-2'), 'job');
    expect(retry.error?.code).toBe('ALREADY_EXISTS');
    await t.one({ type: 'deleteJob', nowMs: T0 + 20, jobId: 'a', expectedVersion: 0 }, 'delete');
    const late = await t.one(put('a', everySpec(5000), T0 + 30, 'key-2'), 'job');
    expect(late).toMatchObject({ created: false, error: { code: 'ALREADY_EXISTS' } });
    expect(await t.fsm.getJob('a')).toBeUndefined();
    // Without a key nothing is remembered: the id is free again.
    expect((await t.one(put('a', everySpec(5000), T0 + 40), 'job')).created).toBe(true);
  });

  it('trimHistory removes expired idempotency keys', async () => {
    t = await openTestFsm();
    await t.one(put('a', everySpec(60_000), T0, 'k1'));
    await t.one(put('b', everySpec(60_000), T0 + 10, 'k2'));
    const early = await t.one({ type: 'trimHistory', nowMs: T0 + IDEMPOTENCY_TTL_MS - 1, jobIds: [], maxIdempotencyKeys: 100 }, 'trim');
    expect(early.idempotencyKeysTrimmed).toBe(0);
    const r = await t.one({ type: 'trimHistory', nowMs: T0 + IDEMPOTENCY_TTL_MS + 5, jobIds: [], maxIdempotencyKeys: 100 }, 'trim');
    expect(r.idempotencyKeysTrimmed).toBe(1);
    const r2 = await t.one({ type: 'trimHistory', nowMs: T0 + IDEMPOTENCY_TTL_MS + 50, jobIds: [], maxIdempotencyKeys: 100 }, 'trim');
    expect(r2.idempotencyKeysTrimmed).toBe(1);
  });

  it.each([
    ['bad id', put('bad/id'), 'INVALID_ID', 'job_id'],
    ['missing task type', put('a', spec({ taskType: '' })), 'INVALID_SPEC', 'spec.task_type'],
    ['missing schedule', put('a', spec({ schedule: undefined })), 'INVALID_SPEC', 'spec.schedule'],
    ['bad cron', put('a', spec({ schedule: { kind: { $case: 'cron', cron: { expression: '61 * * * *', timeZone: '' } } } })), 'INVALID_CRON', 'spec.schedule.cron.expression'],
    ['unknown zone', put('a', spec({ schedule: { kind: { $case: 'cron', cron: { expression: '* * * * *', timeZone: 'Mars/Olympus' } } } })), 'UNKNOWN_TIME_ZONE', 'spec.schedule.cron.time_zone'],
    ['priority', put('a', everySpec(60_000, { priority: 1001 })), 'INVALID_SPEC', 'spec.priority'],
    ['label key', put('a', everySpec(60_000, { labels: { 'bad key': 'x' } })), 'INVALID_SPEC', 'spec.labels["bad key"]'],
    ['retry attempts', put('a', everySpec(60_000, { retry: { maxAttempts: 1000 } })), 'INVALID_SPEC', 'spec.retry.max_attempts'],
    ['misfire max runs', put('a', everySpec(60_000, { misfireMaxRuns: 5000 })), 'INVALID_SPEC', 'spec.misfire_max_runs'],
    ['idempotency key', put('a', everySpec(60_000), T0, 'tab\there'), 'INVALID_ARGUMENT', 'idempotency_key'],
  ])('refuses %s with a typed error naming the field', async (_, cmd, code, field) => {
    t = await openTestFsm();
    const r = await t.one(cmd, 'job');
    expect(r.error?.code).toBe(code);
    expect(r.error?.reason).toBe(field);
    expect(await t.fsm.getJob('a')).toBeUndefined();
  });

  it('enforces the configured payload limit', async () => {
    t = await openTestFsm({ maxPayloadBytes: 10 });
    const r = await t.one(put('a', everySpec(60_000, { payload: Buffer.alloc(11) })), 'job');
    expect(r.error?.code).toBe('PAYLOAD_TOO_LARGE');
    const ok = await t.one(put('a', everySpec(60_000, { payload: Buffer.alloc(10) })), 'job');
    expect(ok.error).toBeUndefined();
  });

  it('a one-off instant already past still gets its slot (the misfire policy decides)', async () => {
    t = await openTestFsm();
    const r = await t.one(put('once', atSpec(T0 - 5000), T0), 'job');
    expect(r.job?.nextFireUnixMs).toBe(T0 - 5000);
    const f = await t.one(fire('once', T0 - 5000, T0), 'fire');
    expect(f.items[0]!.created).toEqual([`once@${T0 - 5000}`]);
    expect((await t.fsm.getJob('once'))?.state).toBe(JobState.JOB_STATE_COMPLETED);
    expect(await t.fsm.dueWindow(0, T0 * 2, 10)).toEqual([]);
  });
});

describe('updateJob', () => {
  it('replaces the spec, bumps the version and honours expected_version', async () => {
    t = await openTestFsm();
    await t.one(put('a'));
    const stale = await t.one({ type: 'updateJob', nowMs: T0 + 1, jobId: 'a', spec: everySpec(60_000, { priority: 5 }), expectedVersion: 7 }, 'job');
    expect(stale.error?.code).toBe('VERSION_MISMATCH');
    const ok = await t.one({ type: 'updateJob', nowMs: T0 + 1, jobId: 'a', spec: everySpec(60_000, { priority: 5 }), expectedVersion: 1 }, 'job');
    expect(ok.job).toMatchObject({ version: 2, updatedUnixMs: T0 + 1, nextFireUnixMs: T0 });
    expect(ok.job?.spec?.priority).toBe(5);
    const missing = await t.one({ type: 'updateJob', nowMs: T0, jobId: 'zz', spec: everySpec(1000), expectedVersion: 0 }, 'job');
    expect(missing.error?.code).toBe('JOB_NOT_FOUND');
  });

  it('a new schedule restarts from now and moves the due-index entry', async () => {
    t = await openTestFsm();
    await t.one(put('a', everySpec(3_600_000)));
    await t.one(fire('a', T0));
    const r = await t.one({ type: 'updateJob', nowMs: T0 + 10_000, jobId: 'a', spec: everySpec(60_000, {}, T0), expectedVersion: 0 }, 'job');
    expect(r.job?.nextFireUnixMs).toBe(T0 + 60_000);
    expect(await t.fsm.dueWindow(0, T0 * 2, 10)).toEqual([{ jobId: 'a', slotMs: T0 + 60_000 }]);
  });
});

describe('pause / resume / delete', () => {
  it('a paused job leaves the due index and does not fire; resume continues with the next future slot', async () => {
    t = await openTestFsm();
    await t.one(put('a', everySpec(60_000, {}, T0)));
    const p = await t.one({ type: 'pauseJob', nowMs: T0 + 1, jobId: 'a', note: 'maintenance' }, 'job');
    expect(p.job).toMatchObject({ state: JobState.JOB_STATE_PAUSED, pauseNote: 'maintenance', version: 2 });
    expect(await t.fsm.dueWindow(0, T0 * 2, 10)).toEqual([]);
    const f = await t.one(fire('a', T0, T0 + 2), 'fire');
    expect(f.items[0]!.error?.reason).toBe('NOT_ACTIVE');
    expect(f.items[0]!.created).toEqual([]);
    const r = await t.one({ type: 'resumeJob', nowMs: T0 + 150_000, jobId: 'a' }, 'job');
    expect(r.job).toMatchObject({ state: JobState.JOB_STATE_ACTIVE, pauseNote: '', nextFireUnixMs: T0 + 180_000 });
    expect(await t.fsm.dueWindow(0, T0 * 2, 10)).toEqual([{ jobId: 'a', slotMs: T0 + 180_000 }]);
  });

  it('a pause records the slots that came due unfired (no leader at the time) as MISSED, not nothing', async () => {
    t = await openTestFsm();
    await t.one(put('a', everySpec(60_000, {}, T0)));
    // Slots T0, T0+60 s and T0+120 s came due while the cluster could not fire; then a pause lands.
    await t.one({ type: 'pauseJob', nowMs: T0 + 130_000, jobId: 'a', note: '' }, 'job');
    await t.one({ type: 'resumeJob', nowMs: T0 + 290_000, jobId: 'a' }, 'job');
    const runs = (await t.fsm.listRuns({ jobId: 'a' })).items.sort((x, y) => x.slotUnixMs - y.slotUnixMs);
    expect(runs.map((r) => [r.slotUnixMs - T0, RunState[r.state]])).toEqual([
      [0, 'RUN_STATE_MISSED'],
      [60_000, 'RUN_STATE_MISSED'],
      [120_000, 'RUN_STATE_MISSED'],
    ]);
    expect(runs[0]!.reason).toMatch(/not fired before the job was paused/);
    // Slots while paused have the pause as their record; the job goes on after the resume.
    expect((await t.fsm.getJob('a'))!.nextFireUnixMs).toBe(T0 + 300_000);
    const f = await t.one(fire('a', T0 + 300_000, T0 + 300_000), 'fire');
    expect(f.items[0]!.created).toEqual([`a@${T0 + 300_000}`]);
    expect(f.items[0]!.missed).toEqual([]);
  });

  it('a schedule change records the old schedule\'s due, unfired slots as MISSED', async () => {
    t = await openTestFsm();
    await t.one(put('a', everySpec(60_000, {}, T0)));
    await t.one(fire('a', T0, T0));
    const u = await t.one({ type: 'updateJob', nowMs: T0 + 125_000, jobId: 'a', expectedVersion: 0, spec: everySpec(45_000, {}, T0) }, 'job');
    expect(u.error).toBeUndefined();
    const runs = (await t.fsm.listRuns({ jobId: 'a' })).items.sort((x, y) => x.slotUnixMs - y.slotUnixMs);
    expect(runs.map((r) => [r.slotUnixMs - T0, RunState[r.state]])).toEqual([
      [0, 'RUN_STATE_PENDING'],
      [60_000, 'RUN_STATE_MISSED'],
      [120_000, 'RUN_STATE_MISSED'],
    ]);
    expect(runs[1]!.reason).toMatch(/not fired before the schedule changed/);
    expect((await t.fsm.getJob('a'))!.nextFireUnixMs).toBe(T0 + 135_000);
  });

  it('delete cancels pending runs, reports running ones to signal, and removes job and history', async () => {
    t = await openTestFsm();
    await t.one(put('a', everySpec(60_000, {}, T0)));
    await t.one({ type: 'fireRuns', nowMs: T0 + 60_000, misfireThresholdMs: 600_000, items: [{ jobId: 'a', slotMs: T0 + 60_000 }] });
    const claimIdx = t.nextIndex();
    await t.one({ type: 'claimRuns', nowMs: T0 + 60_001, items: [{ runId: `a@${T0}`, workerId: 'w1', leaseDeadlineMs: T0 + 90_000 }] });
    const stale = await t.one({ type: 'deleteJob', nowMs: T0 + 60_002, jobId: 'a', expectedVersion: 99 }, 'delete');
    expect(stale.error?.code).toBe('VERSION_MISMATCH');
    const d = await t.one({ type: 'deleteJob', nowMs: T0 + 60_002, jobId: 'a', expectedVersion: 0 }, 'delete');
    expect(d.cancelledRuns).toBe(2);
    expect(d.signals).toEqual([{ runId: `a@${T0}`, workerId: 'w1', fencingToken: claimIdx }]);
    expect(await t.fsm.getJob('a')).toBeUndefined();
    expect((await t.fsm.listRuns({ jobId: 'a' })).items).toEqual([]);
    expect(await t.fsm.readyRuns({ limit: 10 })).toEqual([]);
    expect(await t.fsm.runningRuns()).toEqual([]);
    expect(await t.fsm.dueWindow(0, T0 * 2, 10)).toEqual([]);
    const counts = await t.fsm.runCounts();
    for (const s of [RunState.RUN_STATE_PENDING, RunState.RUN_STATE_RUNNING, RunState.RUN_STATE_CANCELLED]) expect(counts.get(s) ?? 0).toBe(0);
  });
});
