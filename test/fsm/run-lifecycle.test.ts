import { afterEach, describe, expect, it } from 'vitest';
import { AttemptOutcome, RunState } from '../../src/gen/herald/v1/run.js';
import { finishFailure, finishSuccess, MAX_CLAIM_AHEAD_MS } from '../../src/fsm/index.js';
import { retryBackoffMs } from '../../src/fsm/schedule/index.js';
import { RUN_PREFIX } from '../../src/fsm/store/key-layout.js';
import { everySpec, openTestFsm, T0, type SpecInput, type TestFsm } from './fsm-test-kit.js';

let t: TestFsm;
afterEach(async () => t?.close());

const RUN = `a@${T0}`;

async function setup(p: SpecInput = {}) {
  t = await openTestFsm();
  await t.one({ type: 'putJob', nowMs: T0, jobId: 'a', spec: everySpec(60_000, p, T0), idempotencyKey: '' });
  await t.one({ type: 'fireRuns', nowMs: T0, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 }] });
}
async function claim(nowMs: number, workerId = 'w1', runId = RUN) {
  const token = t.nextIndex();
  const r = await t.one({ type: 'claimRuns', nowMs, items: [{ runId, workerId, leaseDeadlineMs: nowMs + 30_000 }] }, 'claim');
  return { token, item: r.items[0]! };
}
const finish = (nowMs: number, ...items: ReturnType<typeof finishSuccess>[]) => t.one({ type: 'finishRuns', nowMs, items }, 'runItems');

describe('claim', () => {
  it('gives a fencing token equal to the entry index, records the attempt and lateness, moves ready → lease index', async () => {
    await setup();
    const { token, item } = await claim(T0 + 250);
    expect(item.run).toMatchObject({ id: RUN, jobId: 'a', attempt: 1, fencingToken: token, leaseDeadlineUnixMs: T0 + 30_250, latenessMs: 250, leaseDurationMs: 0 });
    const stored = (await t.fsm.getRun(RUN))!;
    expect(stored).toMatchObject({ state: RunState.RUN_STATE_RUNNING, attempt: 1, fencingToken: token, workerId: 'w1', leaseDeadlineUnixMs: T0 + 30_250, latenessMs: 250 });
    expect(stored.attempts).toEqual([expect.objectContaining({ number: 1, workerId: 'w1', fencingToken: token, startedUnixMs: T0 + 250 })]);
    expect(await t.fsm.readyRuns({ limit: 10 })).toEqual([]);
    expect((await t.fsm.expiringLeases(T0 + 30_251, 10)).map((r) => r.id)).toEqual([RUN]);
    expect(await t.fsm.expiringLeases(T0 + 30_250, 10)).toEqual([]);
  });

  it('refuses a run that is already running, unknown, or not due yet', async () => {
    await setup({ jitterMs: 50_000 });
    const run = (await t.fsm.getRun(RUN))!;
    if (run.notBeforeUnixMs > T0) {
      const early = await claim(T0);
      expect(early.item.error?.reason).toBe('NOT_DUE');
    }
    const ok = await claim(run.notBeforeUnixMs);
    expect(ok.item.error).toBeUndefined();
    const twice = await claim(run.notBeforeUnixMs + 1, 'w2');
    expect(twice.item.error).toMatchObject({ code: 'INVALID_STATE', reason: 'NOT_READY' });
    const unknown = await claim(T0, 'w', 'a@123');
    expect(unknown.item.error?.code).toBe('RUN_NOT_FOUND');
  });

  it('claims ahead within aheadMs (dispatch lead): the attempt starts at the run\'s instant, never more than MAX_CLAIM_AHEAD_MS early', async () => {
    t = await openTestFsm();
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'a', spec: everySpec(60_000, {}, T0), idempotencyKey: '' });
    // Fired 80 ms before its slot: the run waits, due at T0.
    await t.one({ type: 'fireRuns', nowMs: T0 - 80, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 }] });
    const ahead = (nowMs: number, aheadMs: number) =>
      t.one({ type: 'claimRuns', nowMs, aheadMs, items: [{ runId: RUN, workerId: 'w1', leaseDeadlineMs: T0 + 30_000 }] }, 'claim');
    expect((await ahead(T0 - 80, 50)).items[0]!.error?.reason).toBe('NOT_DUE'); // 80 ms out, 50 ms lead
    expect((await ahead(T0 - 80, MAX_CLAIM_AHEAD_MS + 1)).items[0]!.error?.reason).toBe('NOT_DUE'); // an oversized lead counts as none
    const token = t.nextIndex();
    const ok = (await ahead(T0 - 80, 100)).items[0]!;
    expect(ok.error).toBeUndefined();
    expect(ok.run).toMatchObject({ fencingToken: token, latenessMs: 0, notBeforeUnixMs: T0 });
    const stored = (await t.fsm.getRun(RUN))!;
    expect(stored.state).toBe(RunState.RUN_STATE_RUNNING);
    expect(stored.attempts[0]!.startedUnixMs).toBe(T0);
  });

  it('lease deadline 0: from the run\'s start plus the job\'s lease duration, else the command default; with neither, refused', async () => {
    t = await openTestFsm();
    const payload = Buffer.from('{"n":1}');
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'a', spec: everySpec(60_000, { leaseDurationMs: 7_000, executionTimeoutMs: 900, payload }, T0), idempotencyKey: '' });
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'b', spec: everySpec(60_000, {}, T0), idempotencyKey: '' });
    await t.one({ type: 'fireRuns', nowMs: T0 - 50, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 }, { jobId: 'b', slotMs: T0 }] });
    const zero = (runId: string) => ({ runId, workerId: 'w1', leaseDeadlineMs: 0 });
    const none = await t.one({ type: 'claimRuns', nowMs: T0 + 10, items: [zero(`b@${T0}`)] }, 'claim');
    expect(none.items[0]!.error).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('no lease deadline') });
    // Claimed 50 ms ahead: the lease counts from the run's instant, not from the claim.
    const r = await t.one({ type: 'claimRuns', nowMs: T0 - 50, aheadMs: 100, defaultLeaseMs: 30_000, items: [zero(RUN), zero(`b@${T0}`)] }, 'claim');
    expect(r.items[0]!.run).toMatchObject({ leaseDeadlineUnixMs: T0 + 7_000, leaseDurationMs: 7_000, executionTimeoutMs: 900, payload: new Uint8Array(payload) });
    expect(r.items[1]!.run).toMatchObject({ leaseDeadlineUnixMs: T0 + 30_000, leaseDurationMs: 30_000, executionTimeoutMs: 0 });
    expect((await t.fsm.getRun(RUN))!.leaseDeadlineUnixMs).toBe(T0 + 7_000);
  });

  it('past the starting deadline the claim is refused and the run recorded MISSED', async () => {
    await setup({ startingDeadlineMs: 5000 });
    const late = await claim(T0 + 5001);
    expect(late.item.error?.reason).toBe('DEADLINE_PASSED');
    expect((await t.fsm.getRun(RUN))?.state).toBe(RunState.RUN_STATE_MISSED);
    expect((await t.fsm.getJob('a'))?.activeRuns).toBe(0);
  });
});

describe('finish and fencing', () => {
  it('success ends the run; a repeated or stale report is refused with a typed reason', async () => {
    await setup();
    const { token } = await claim(T0 + 1);
    const r = await finish(T0 + 2, finishSuccess(RUN, token, new Uint8Array([7])));
    expect(r.items[0]).toEqual({ state: RunState.RUN_STATE_SUCCEEDED });
    const run = (await t.fsm.getRun(RUN))!;
    expect(run).toMatchObject({ finishedUnixMs: T0 + 2, output: Buffer.from([7]) });
    expect(run.attempts[0]).toMatchObject({ outcome: AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED, endedUnixMs: T0 + 2 });
    const again = await finish(T0 + 3, finishSuccess(RUN, token));
    expect(again.items[0]!.error).toMatchObject({ code: 'STALE_FENCING_TOKEN', reason: 'NOT_RUNNING' });
    const wrong = await finish(T0 + 3, finishSuccess(RUN, token - 1));
    expect(wrong.items[0]!.error).toMatchObject({ code: 'STALE_FENCING_TOKEN', reason: 'STALE_TOKEN' });
  });

  it('a retryable failure schedules a retry with backoff; the last attempt goes DEAD', async () => {
    await setup({ retry: { maxAttempts: 2, initialBackoffMs: 1000 } });
    const c1 = await claim(T0 + 1);
    const f1 = await finish(T0 + 10, finishFailure(RUN, c1.token, { type: 'Http', message: 'boom', retryable: true }));
    expect(f1.items[0]!.state).toBe(RunState.RUN_STATE_FAILED);
    const failed = (await t.fsm.getRun(RUN))!;
    const backoff = retryBackoffMs({ maxAttempts: 2, initialBackoffMs: 1000, maxBackoffMs: 0, backoffMultiplier: 0, nonRetryableErrorTypes: [] }, 2, RUN);
    expect(failed.notBeforeUnixMs).toBe(T0 + 10 + backoff);
    expect(failed.attempts[0]).toMatchObject({ outcome: AttemptOutcome.ATTEMPT_OUTCOME_FAILED, error: { type: 'Http', message: 'boom', retryable: true } });
    expect(await t.fsm.readyRuns({ limit: 5, nowMs: T0 + 10 })).toEqual([]);
    expect((await t.fsm.readyRuns({ limit: 5, nowMs: failed.notBeforeUnixMs })).map((r) => r.id)).toEqual([RUN]);
    const c2 = await claim(failed.notBeforeUnixMs);
    expect(c2.token).toBeGreaterThan(c1.token);
    expect(c2.item.run?.attempt).toBe(2);
    const f2 = await finish(failed.notBeforeUnixMs + 5, finishFailure(RUN, c2.token, { type: 'Http', retryable: true }));
    expect(f2.items[0]!.state).toBe(RunState.RUN_STATE_DEAD);
    expect((await t.fsm.getRun(RUN))?.reason).toMatch(/attempt 2 of 2/);
  });

  it('a non-retryable error (by flag or by the policy list) goes DEAD at once', async () => {
    await setup({ retry: { maxAttempts: 5, nonRetryableErrorTypes: ['Fatal'] } });
    const c1 = await claim(T0 + 1);
    const f = await finish(T0 + 2, finishFailure(RUN, c1.token, { type: 'Fatal', retryable: true }));
    expect(f.items[0]!.state).toBe(RunState.RUN_STATE_DEAD);
    await t.one({ type: 'triggerJob', nowMs: T0 + 3, jobId: 'a', idempotencyKey: '', ignoreOverlap: false });
    const m = `a@${T0 + 3}~m0`;
    const c2 = await claim(T0 + 4, 'w1', m);
    const f2 = await finish(T0 + 5, finishFailure(m, c2.token, { type: 'Other', retryable: false }));
    expect(f2.items[0]!.state).toBe(RunState.RUN_STATE_DEAD);
  });

  it('per-item results: one stale item does not stop the others', async () => {
    await setup();
    await t.one({ type: 'triggerJob', nowMs: T0, jobId: 'a', idempotencyKey: '', ignoreOverlap: false });
    const m = `a@${T0}~m0`;
    const c1 = await claim(T0 + 1);
    const c2 = await claim(T0 + 1, 'w2', m);
    const r = await finish(T0 + 2, finishSuccess(RUN, c1.token + 1000), finishSuccess(m, c2.token), finishSuccess('nope', 1));
    expect(r.items.map((i) => i.error?.code ?? i.state)).toEqual(['STALE_FENCING_TOKEN', RunState.RUN_STATE_SUCCEEDED, 'INVALID_ID']);
    expect((await t.fsm.getRun(RUN))?.state).toBe(RunState.RUN_STATE_RUNNING);
  });
});

describe('leases', () => {
  it('expiry makes the run ready again; the next claim has a higher token; the old worker is fenced', async () => {
    await setup();
    const c1 = await claim(T0 + 1);
    const stale = await t.one({ type: 'expireLeases', nowMs: T0 + 40_000, items: [{ runId: RUN, fencingToken: c1.token - 1 }] }, 'runItems');
    expect(stale.items[0]!.error?.reason).toBe('STALE_TOKEN');
    const e = await t.one({ type: 'expireLeases', nowMs: T0 + 40_000, items: [{ runId: RUN, fencingToken: c1.token }] }, 'runItems');
    expect(e.items[0]!.state).toBe(RunState.RUN_STATE_PENDING);
    expect((await t.fsm.getRun(RUN))?.attempts[0]?.outcome).toBe(AttemptOutcome.ATTEMPT_OUTCOME_LEASE_EXPIRED);
    expect(await t.fsm.runningRuns()).toEqual([]);
    const c2 = await claim(T0 + 40_001, 'w2');
    expect(c2.item.run).toMatchObject({ attempt: 2, fencingToken: c2.token });
    expect((await t.fsm.getRun(RUN))!.workerId).toBe('w2');
    expect(c2.token).toBeGreaterThan(c1.token);
    const late = await finish(T0 + 40_002, finishSuccess(RUN, c1.token));
    expect(late.items[0]!.error?.code).toBe('STALE_FENCING_TOKEN');
    const ok = await finish(T0 + 40_003, finishSuccess(RUN, c2.token));
    expect(ok.items[0]!.state).toBe(RunState.RUN_STATE_SUCCEEDED);
  });

  it('expiry on the last attempt goes DEAD (no endless poison loop)', async () => {
    await setup({ retry: { maxAttempts: 1 } });
    const c1 = await claim(T0 + 1);
    const e = await t.one({ type: 'expireLeases', nowMs: T0 + 40_000, items: [{ runId: RUN, fencingToken: c1.token }] }, 'runItems');
    expect(e.items[0]!.state).toBe(RunState.RUN_STATE_DEAD);
  });

  it('an expiry under a token that is not the current one leaves the lease alone', async () => {
    await setup();
    const c1 = await claim(T0 + 1);
    const lease = (await t.fsm.getRun(RUN))?.leaseDeadlineUnixMs;
    const bad = await t.one({ type: 'expireLeases', nowMs: T0 + 3, items: [{ runId: RUN, fencingToken: 1 }] }, 'runItems');
    expect(bad.items[0]!.error?.code).toBe('STALE_FENCING_TOKEN');
    expect(await t.fsm.getRun(RUN)).toMatchObject({ state: RunState.RUN_STATE_RUNNING, fencingToken: c1.token, leaseDeadlineUnixMs: lease });
  });
});

describe('cancel and mark', () => {
  it('cancel of a pending run ends it; of a running run also signals the worker; of an ended run is refused', async () => {
    await setup();
    await t.one({ type: 'triggerJob', nowMs: T0, jobId: 'a', idempotencyKey: '', ignoreOverlap: false });
    const m = `a@${T0}~m0`;
    const c = await claim(T0 + 1, 'w9', m);
    const r = await t.one({ type: 'cancelRuns', nowMs: T0 + 2, items: [{ runId: RUN, reason: 'no longer needed' }, { runId: m, reason: '' }] }, 'cancel');
    expect(r.items.map((i) => i.run?.state)).toEqual([RunState.RUN_STATE_CANCELLED, RunState.RUN_STATE_CANCELLED]);
    expect(r.items[0]!.run?.reason).toBe('no longer needed');
    expect(r.signals).toEqual([{ runId: m, workerId: 'w9', fencingToken: c.token }]);
    const again = await t.one({ type: 'cancelRuns', nowMs: T0 + 3, items: [{ runId: RUN, reason: '' }] }, 'cancel');
    expect(again.items[0]!.error?.code).toBe('INVALID_STATE');
    expect((await t.fsm.getJob('a'))?.activeRuns).toBe(0);
  });

  it('markRuns records a waiting run MISSED or SKIPPED, never a running one', async () => {
    await setup();
    const r = await t.one({ type: 'markRuns', nowMs: T0 + 9, items: [{ runId: RUN, outcome: 'missed', reason: 'no worker within the deadline' }] }, 'runItems');
    expect(r.items[0]!.state).toBe(RunState.RUN_STATE_MISSED);
    expect((await t.fsm.getRun(RUN))).toMatchObject({ reason: 'no worker within the deadline', finishedUnixMs: T0 + 9 });
    expect(await t.fsm.readyRuns({ limit: 5 })).toEqual([]);
    await t.one({ type: 'triggerJob', nowMs: T0, jobId: 'a', idempotencyKey: '', ignoreOverlap: false });
    const m = `a@${T0}~m0`;
    await claim(T0 + 1, 'w', m);
    const refused = await t.one({ type: 'markRuns', nowMs: T0 + 9, items: [{ runId: m, outcome: 'skipped', reason: '' }] }, 'runItems');
    expect(refused.items[0]!.error?.code).toBe('INVALID_STATE');
  });
});

describe('history retention', () => {
  it('trim keeps the newest max_runs finished runs and never touches active ones', async () => {
    t = await openTestFsm();
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'h', spec: everySpec(1000, { retention: { maxRuns: 3 }, overlapPolicy: 2 }, T0), idempotencyKey: '' });
    // FORBID + never claimed: slot T0 stays PENDING, the next 7 are SKIPPED (finished): within
    // the hard bound (3 + hardRunSlack), which apply keeps by itself (run-bound.test.ts).
    for (let k = 0; k < 8; k++) await t.one({ type: 'fireRuns', nowMs: T0 + k * 1000, misfireThresholdMs: 60_000, items: [{ jobId: 'h', slotMs: T0 + k * 1000 }] });
    const r = await t.one({ type: 'trimHistory', nowMs: T0 + 8_000, jobIds: ['h', 'missing'], maxIdempotencyKeys: 0 }, 'trim');
    expect(r.runsTrimmed).toBe(4);
    const left = (await t.fsm.listRuns({ jobId: 'h' })).items.map((x) => x.slotUnixMs - T0);
    expect(left).toEqual([7000, 6000, 5000, 0]);
    expect((await t.fsm.runCounts()).get(RunState.RUN_STATE_SKIPPED)).toBe(3);
    // Age: everything finished is older than 7 days later.
    const aged = await t.one({ type: 'trimHistory', nowMs: T0 + 8 * 86_400_000, jobIds: ['h'], maxIdempotencyKeys: 0 }, 'trim');
    expect(aged.runsTrimmed).toBe(3);
    expect((await t.fsm.listRuns({ jobId: 'h' })).items.map((x) => x.id)).toEqual([`h@${T0}`]);
  });
});

describe('history retention cost', () => {
  it('a trim reads the values of the runs it removes (plus a few), not the whole history', async () => {
    t = await openTestFsm();
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'h', spec: everySpec(1000, { retention: { maxRuns: 100 }, overlapPolicy: 2 }, T0), idempotencyKey: '' });
    // FORBID + never claimed: slot T0 stays PENDING (first in history), the next 39 are SKIPPED;
    // then the retention is lowered to 5 (no run ends after it, so apply's own bound does not act).
    for (let k = 0; k < 40; k++) await t.one({ type: 'fireRuns', nowMs: T0 + k * 1000, misfireThresholdMs: 60_000, items: [{ jobId: 'h', slotMs: T0 + k * 1000 }] });
    await t.one({ type: 'updateJob', nowMs: T0 + 39_500, jobId: 'h', spec: everySpec(1000, { retention: { maxRuns: 5 }, overlapPolicy: 2 }, T0), expectedVersion: 0 });
    const store = (t.fsm as unknown as { store: { getMany: (keys: string[]) => Promise<unknown[]> } }).store;
    let runValuesRead = 0;
    const getMany = store.getMany.bind(store);
    store.getMany = (keys: string[]) => {
      runValuesRead += keys.filter((k) => k.startsWith(RUN_PREFIX)).length;
      return getMany(keys);
    };

    const r = await t.one({ type: 'trimHistory', nowMs: T0 + 40_000, jobIds: ['h'], maxIdempotencyKeys: 0 }, 'trim');
    expect(r.runsTrimmed).toBe(34);
    expect(runValuesRead).toBeLessThanOrEqual(34 + 1 + 4);
    const left = (await t.fsm.listRuns({ jobId: 'h' })).items.map((x) => (x.slotUnixMs - T0) / 1000);
    expect(left).toEqual([39, 38, 37, 36, 35, 0]);

    // Nothing beyond retention: a handful of reads, nothing removed.
    runValuesRead = 0;
    const again = await t.one({ type: 'trimHistory', nowMs: T0 + 41_000, jobIds: ['h'], maxIdempotencyKeys: 0 }, 'trim');
    expect(again.runsTrimmed).toBe(0);
    expect(runValuesRead).toBeLessThanOrEqual(4);
    expect((await t.fsm.listRuns({ jobId: 'h' })).items).toHaveLength(6);
  });
});

describe('results within one apply call', () => {
  it('each result shows the state right after its own entry, not after later entries', async () => {
    await setup();
    const claimToken = t.nextIndex();
    const [claim, finished] = await t.apply(
      { type: 'claimRuns', nowMs: T0 + 1, items: [{ runId: RUN, workerId: 'w', leaseDeadlineMs: T0 + 30_000 }] },
      { type: 'finishRuns', nowMs: T0 + 2, items: [finishSuccess(RUN, claimToken)] },
    );
    // The claim's result is the run as claimed (the finish right after does not show through).
    expect(claim).toMatchObject({ type: 'claim', items: [{ run: { attempt: 1, fencingToken: claimToken, leaseDeadlineUnixMs: T0 + 30_000 } }] });
    expect(finished).toMatchObject({ type: 'runItems', items: [{ state: RunState.RUN_STATE_SUCCEEDED }] });
  });
});
