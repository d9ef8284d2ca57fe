// Alerts and pause-on-failure in the state machine (issue 31): an alert run is written in the
// same apply as the event that caused it, with the event as its payload; DEAD runs count towards
// pause_after_dead; the watchdog's raiseAlerts alerts once per stalled slot; apply stays
// deterministic however entries are grouped into apply calls.
import { describe, expect, it } from 'vitest';
import { JobState } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { finishFailure, finishSuccess, type FsmCommand } from '../../src/fsm/index.js';
import { decodeJobRecord, decodeRunRecord, encodeJobRecord, encodeRunRecord } from '../../src/fsm/store/records.js';
import { alertJobId } from '../../src/fsm/apply/apply-alerts.js';
import { everySpec, freshFsmsPerTest, T0, type SpecInput, type TestFsm } from './fsm-test-kit.js';

const { fresh } = freshFsmsPerTest();
const ALERTS = alertJobId('alerts');
const RUN = `a@${T0}`;

async function setup(p: SpecInput): Promise<TestFsm> {
  const t = await fresh();
  await t.one({ type: 'putJob', nowMs: T0, jobId: 'a', spec: everySpec(60_000, p, T0), idempotencyKey: '' }, 'job');
  await t.one({ type: 'fireRuns', nowMs: T0, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 }] }, 'fire');
  return t;
}

/** Claims `runId` and fails its attempt (retryable unless said otherwise). */
async function claimAndFail(t: TestFsm, nowMs: number, runId = RUN, retryable = true): Promise<void> {
  const token = t.nextIndex();
  const c = await t.one({ type: 'claimRuns', nowMs, items: [{ runId, workerId: 'w1', leaseDeadlineMs: nowMs + 30_000 }] }, 'claim');
  expect(c.items[0]!.error).toBeUndefined();
  await t.one({ type: 'finishRuns', nowMs: nowMs + 10, items: [finishFailure(runId, token, { type: 'Boom', message: 'it broke', retryable })] }, 'runItems');
}

async function alertRuns(t: TestFsm, jobId = ALERTS) {
  return (await t.fsm.listRuns({ jobId, pageSize: 100 })).items.reverse();
}

function payloadOf(run: { payload: Uint8Array }): Record<string, unknown> {
  return JSON.parse(Buffer.from(run.payload).toString('utf8')) as Record<string, unknown>;
}

describe('alert runs', () => {
  it('a DEAD run writes an on_dead alert run in the same apply, with the event as payload, handed to the worker on claim', async () => {
    const t = await setup({ retry: { maxAttempts: 1 }, alerts: { onDead: 'alerts' } });
    expect(await t.fsm.getJob(ALERTS)).toBeUndefined();
    await claimAndFail(t, T0 + 100);
    expect((await t.fsm.getRun(RUN))!.state).toBe(RunState.RUN_STATE_DEAD);
    const [alert, ...more] = await alertRuns(t);
    expect(more).toEqual([]);
    expect(alert).toMatchObject({ id: `${ALERTS}@${T0 + 110}~m0`, jobId: ALERTS, taskType: 'alerts', state: RunState.RUN_STATE_PENDING, manual: true });
    expect(payloadOf(alert!)).toEqual({
      event: 'dead',
      job_id: 'a',
      task_type: 'demo',
      run_id: RUN,
      slot_unix_ms: T0,
      state: 'DEAD',
      attempt: 1,
      error: { type: 'Boom', message: 'it broke' },
      reason: 'attempt 1 of 1 failed',
      consecutive_dead_runs: 1,
      job_paused: false,
      time_unix_ms: T0 + 110,
    });
    // The system job: completed (never fires), with the alert retry policy.
    const sys = (await t.fsm.getJob(ALERTS))!;
    expect(sys).toMatchObject({ state: JobState.JOB_STATE_COMPLETED, activeRuns: 1, nextFireUnixMs: 0 });
    expect(sys.spec!.retry!.maxAttempts).toBe(10);
    // The worker gets the alert's payload, not the (empty) payload of the system job.
    const c = await t.one({ type: 'claimRuns', nowMs: T0 + 200, items: [{ runId: alert!.id, workerId: 'hook', leaseDeadlineMs: T0 + 30_000 }] }, 'claim');
    expect(JSON.parse(Buffer.from(c.items[0]!.run!.payload).toString()).run_id).toBe(RUN);
  });

  it('on_failure alerts every failed attempt with a retry due; on_dead only the last', async () => {
    const t = await setup({ retry: { maxAttempts: 2, initialBackoffMs: 1000 }, alerts: { onFailure: 'alerts', onDead: 'pager' } });
    await claimAndFail(t, T0 + 100);
    expect((await t.fsm.getRun(RUN))!.state).toBe(RunState.RUN_STATE_FAILED);
    expect((await alertRuns(t)).map((r) => payloadOf(r).event)).toEqual(['failure']);
    expect(await alertRuns(t, alertJobId('pager'))).toEqual([]);
    await claimAndFail(t, T0 + 5_000);
    expect((await t.fsm.getRun(RUN))!.state).toBe(RunState.RUN_STATE_DEAD);
    expect((await alertRuns(t)).map((r) => payloadOf(r).event)).toEqual(['failure']);
    expect((await alertRuns(t, alertJobId('pager'))).map((r) => payloadOf(r).event)).toEqual(['dead']);
  });

  it('on_missed alerts a slot missed at claim (starting deadline) and slots missed at fire (misfire)', async () => {
    const t = await setup({ startingDeadlineMs: 1_000, alerts: { onMissed: 'alerts' } });
    const c = await t.one({ type: 'claimRuns', nowMs: T0 + 5_000, items: [{ runId: RUN, workerId: 'w1', leaseDeadlineMs: T0 + 60_000 }] }, 'claim');
    expect(c.items[0]!.error?.reason).toBe('DEADLINE_PASSED');
    // Two slots pass unfired; a later fire records them MISSED (starting deadline), the third runs.
    await t.one({ type: 'fireRuns', nowMs: T0 + 180_500, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 + 60_000 }] }, 'fire');
    const alerts = (await alertRuns(t)).map((r) => payloadOf(r));
    expect(alerts.map((p) => [p.event, p.run_id, p.state])).toEqual([
      ['missed', RUN, 'MISSED'],
      ['missed', `a@${T0 + 60_000}`, 'MISSED'],
      ['missed', `a@${T0 + 120_000}`, 'MISSED'],
    ]);
  });

  it('no alert policy, no alert; an alert run that dies raises no alert of its own', async () => {
    const t = await setup({ retry: { maxAttempts: 1 } });
    await claimAndFail(t, T0 + 100);
    expect(await t.fsm.getJob(ALERTS)).toBeUndefined();

    const u = await setup({ retry: { maxAttempts: 1 }, alerts: { onDead: 'alerts', onFailure: 'alerts' } });
    await claimAndFail(u, T0 + 100);
    const [alert] = await alertRuns(u);
    // The alert run fails with a non-retryable error: DEAD, and nothing alerts about it.
    await claimAndFail(u, T0 + 1_000, alert!.id, false);
    expect((await u.fsm.getRun(alert!.id))!.state).toBe(RunState.RUN_STATE_DEAD);
    expect((await alertRuns(u)).length).toBe(1);
  });

  it('user commands cannot create or change herald: jobs (INVALID_ARGUMENT), and alert task types are validated', async () => {
    const t = await fresh();
    const r = await t.one({ type: 'putJob', nowMs: T0, jobId: 'herald:alerts:x', spec: everySpec(60_000), idempotencyKey: '' }, 'job');
    expect(r.error).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(r.error!.message).toContain('reserved for system jobs');
    const trig = await t.one({ type: 'triggerJob', nowMs: T0, jobId: 'herald:alerts:x', idempotencyKey: '', ignoreOverlap: false }, 'trigger');
    expect(trig.error?.code).toBe('INVALID_ARGUMENT');
    const bad = await t.one({ type: 'putJob', nowMs: T0, jobId: 'b', spec: everySpec(60_000, { alerts: { onDead: 'no spaces' } }), idempotencyKey: '' }, 'job');
    expect(bad.error).toMatchObject({ code: 'INVALID_ID', reason: 'spec.alerts.on_dead' });
    const long = await t.one({ type: 'putJob', nowMs: T0, jobId: 'b', spec: everySpec(60_000, { alerts: { onDead: 'x'.repeat(115) } }), idempotencyKey: '' }, 'job');
    expect(long.error).toMatchObject({ code: 'INVALID_SPEC', reason: 'spec.alerts.on_dead' });
    const pause = await t.one({ type: 'putJob', nowMs: T0, jobId: 'b', spec: everySpec(60_000, { pauseAfterDead: 1001 }), idempotencyKey: '' }, 'job');
    expect(pause.error).toMatchObject({ code: 'INVALID_SPEC', reason: 'spec.pause_after_dead' });
  });
});

describe('pause_after_dead', () => {
  /** Triggers a manual run of `a` and lets it go DEAD (max_attempts 1). */
  async function deadRun(t: TestFsm, nowMs: number): Promise<void> {
    const r = await t.one({ type: 'triggerJob', nowMs, jobId: 'a', idempotencyKey: '', ignoreOverlap: true }, 'trigger');
    await claimAndFail(t, nowMs + 1, r.run!.id);
  }

  it('pauses the job after N consecutive DEAD runs, with a note; a success resets the count', async () => {
    const t = await setup({ retry: { maxAttempts: 1 }, pauseAfterDead: 2, alerts: { onDead: 'alerts' } });
    await claimAndFail(t, T0 + 100); // the scheduled run: DEAD 1
    expect((await t.fsm.getJob('a'))!).toMatchObject({ state: JobState.JOB_STATE_ACTIVE, consecutiveDeadRuns: 1 });
    // A success in between resets the count.
    const ok = await t.one({ type: 'triggerJob', nowMs: T0 + 200, jobId: 'a', idempotencyKey: '', ignoreOverlap: true }, 'trigger');
    const token = t.nextIndex();
    await t.one({ type: 'claimRuns', nowMs: T0 + 201, items: [{ runId: ok.run!.id, workerId: 'w1', leaseDeadlineMs: T0 + 30_000 }] }, 'claim');
    await t.one({ type: 'finishRuns', nowMs: T0 + 202, items: [finishSuccess(ok.run!.id, token)] }, 'runItems');
    expect((await t.fsm.getJob('a'))!).toMatchObject({ state: JobState.JOB_STATE_ACTIVE, consecutiveDeadRuns: 0 });
    await deadRun(t, T0 + 300);
    expect((await t.fsm.getJob('a'))!).toMatchObject({ state: JobState.JOB_STATE_ACTIVE, consecutiveDeadRuns: 1 });
    await deadRun(t, T0 + 400);
    const job = (await t.fsm.getJob('a'))!;
    expect(job).toMatchObject({ state: JobState.JOB_STATE_PAUSED, consecutiveDeadRuns: 2 });
    expect(job.pauseNote).toMatch(/^paused after 2 consecutive DEAD runs \(pause_after_dead: 2; last: a@\d+~m2\)/);
    // The last DEAD alert says the job paused.
    const last = (await alertRuns(t)).at(-1)!;
    expect(payloadOf(last)).toMatchObject({ event: 'dead', consecutive_dead_runs: 2, job_paused: true });
    // Resume: the count stays until a success (the next DEAD pauses again at once).
    const resumed = await t.one({ type: 'resumeJob', nowMs: T0 + 500, jobId: 'a' }, 'job');
    expect(resumed.job!.consecutiveDeadRuns).toBe(2); // results carry the count too
    await deadRun(t, T0 + 600);
    expect((await t.fsm.getJob('a'))!.state).toBe(JobState.JOB_STATE_PAUSED);
  });
});

describe('watchdog alerts (raiseAlerts)', () => {
  it('alerts a stalled slot once, only for jobs naming on_watchdog, only while the slot is still the due one', async () => {
    const t = await fresh();
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'w', spec: everySpec(60_000, { alerts: { onWatchdog: 'alerts' } }, T0 + 60_000), idempotencyKey: '' }, 'job');
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'q', spec: everySpec(60_000, {}, T0 + 60_000), idempotencyKey: '' }, 'job');
    const slot = (await t.fsm.getJob('w'))!.nextFireUnixMs;
    const raise = (nowMs: number, slotMs = slot): FsmCommand => ({ type: 'raiseAlerts', nowMs, items: [{ jobId: 'w', slotMs, reason: 'stalled' }, { jobId: 'q', slotMs, reason: 'stalled' }, { jobId: 'gone', slotMs, reason: '' }] });
    const first = await t.one(raise(slot + 120_000), 'alerts');
    expect(first.items[0]!.runId).toMatch(new RegExp(`^${ALERTS}@`));
    expect(first.items[1]).toEqual({ runId: '' });
    expect(first.items[2]!.error?.code).toBe('JOB_NOT_FOUND');
    // Another check, another leader: the same slot is not alerted again.
    const again = await t.one(raise(slot + 180_000), 'alerts');
    expect(again.items[0]).toEqual({ runId: '' });
    expect((await alertRuns(t)).map((r) => payloadOf(r))).toEqual([expect.objectContaining({ event: 'watchdog', job_id: 'w', slot_unix_ms: slot, reason: 'stalled' })]);
    // A slot that is not the job's due one (fired meanwhile) is not alerted.
    const stale = await t.one(raise(slot + 240_000, slot - 60_000), 'alerts');
    expect(stale.items[0]).toEqual({ runId: '' });
  });
});

describe('determinism and records', () => {
  it('the same entries give the same state whether applied one per call or all in one call', async () => {
    const cmds: FsmCommand[] = [
      { type: 'putJob', nowMs: T0, jobId: 'a', spec: everySpec(60_000, { retry: { maxAttempts: 2, initialBackoffMs: 1000 }, pauseAfterDead: 1, alerts: { onFailure: 'alerts', onDead: 'alerts' } }, T0), idempotencyKey: '' },
      { type: 'fireRuns', nowMs: T0, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 }] },
      { type: 'claimRuns', nowMs: T0 + 1, items: [{ runId: RUN, workerId: 'w', leaseDeadlineMs: T0 + 30_000 }] },
      { type: 'finishRuns', nowMs: T0 + 2, items: [finishFailure(RUN, 3, { type: 'E', retryable: true })] },
      { type: 'claimRuns', nowMs: T0 + 5_000, items: [{ runId: RUN, workerId: 'w', leaseDeadlineMs: T0 + 30_000 }] },
      { type: 'finishRuns', nowMs: T0 + 5_001, items: [finishFailure(RUN, 5, { type: 'E', retryable: true })] },
    ];
    const one = await fresh();
    for (const c of cmds) await one.apply(c);
    const all = await fresh();
    await all.apply(...cmds);
    expect((await all.fsm.getJob('a'))!.state).toBe(JobState.JOB_STATE_PAUSED);
    expect((await alertRuns(all)).map((r) => payloadOf(r).event)).toEqual(['failure', 'dead']);
    expect(await one.fsm.stateHash()).toBe(await all.fsm.stateHash());
  });

  it('job record format 5 and run record format 4 round-trip; records without alert state keep their old formats', async () => {
    const t = await setup({ retry: { maxAttempts: 1 }, alerts: { onDead: 'alerts' } });
    await claimAndFail(t, T0 + 100);
    const job = (await t.fsm.getJob('a'))!;
    const rec = { job, manualSeq: 3, heldRunId: '', terminalRuns: 1, trimDueMs: 5, watchdogSlotMs: T0 };
    const bytes = encodeJobRecord(rec);
    expect(bytes[0]).toBe(5);
    expect(decodeJobRecord(bytes)).toEqual({ ...rec, heldRuns: 0 });
    expect(encodeJobRecord({ ...rec, job: { ...job, consecutiveDeadRuns: 0 }, watchdogSlotMs: undefined })[0]).toBe(3);
    const [alert] = await alertRuns(t);
    const runBytes = encodeRunRecord({ run: alert!, held: false });
    expect(runBytes[0]).toBe(4);
    expect(decodeRunRecord(runBytes)).toEqual({ run: alert, held: false });
    const plain = (await t.fsm.getRun(RUN))!;
    expect(encodeRunRecord({ run: plain, held: false })[0]).toBe(2);
  });
});
