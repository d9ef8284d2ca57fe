// Re-drive (retryRuns): which states may be re-driven, what a re-driven run looks like, that its
// next claim carries a higher fencing token and a fresh retry budget, overlap, retention, bounds,
// the bulk read that picks runs, and that apply stays deterministic.
import { describe, expect, it } from 'vitest';
import { OverlapPolicy } from '../../src/gen/herald/v1/job.js';
import { AttemptOutcome, RunState } from '../../src/gen/herald/v1/run.js';
import { finishFailure, finishSuccess, MAX_RETRY_RUNS_PER_COMMAND, type FsmCommand, type RetryResult } from '../../src/fsm/index.js';
import { decodeToken } from '../../src/fsm/machine/page-token.js';
import { everySpec, freshFsmsPerTest, T0, type SpecInput, type TestFsm } from './fsm-test-kit.js';

const { fresh } = freshFsmsPerTest();
const RUN = `a@${T0}`;

async function setup(p: SpecInput = { retry: { maxAttempts: 1 } }): Promise<TestFsm> {
  const t = await fresh();
  await t.one({ type: 'putJob', nowMs: T0, jobId: 'a', spec: everySpec(60_000, p, T0), idempotencyKey: '' });
  await t.one({ type: 'fireRuns', nowMs: T0, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 }] });
  return t;
}

async function claim(t: TestFsm, nowMs: number, runId = RUN): Promise<number> {
  const token = t.nextIndex();
  const r = await t.one({ type: 'claimRuns', nowMs, items: [{ runId, workerId: 'w1', leaseDeadlineMs: nowMs + 30_000 }] }, 'claim');
  expect(r.items[0]!.error).toBeUndefined();
  return token;
}

async function fail(t: TestFsm, nowMs: number, token: number, runId = RUN): Promise<RunState> {
  const r = await t.one({ type: 'finishRuns', nowMs, items: [finishFailure(runId, token, { type: 'Boom', retryable: true })] }, 'runItems');
  return r.items[0]!.state;
}

function retry(t: TestFsm, nowMs: number, runIds: string[], extra: Partial<{ onlyState: number; ignoreOverlap: boolean }> = {}): Promise<RetryResult> {
  return t.one({ type: 'retryRuns', nowMs, runIds, onlyState: 0, ignoreOverlap: false, ...extra }, 'retry');
}

describe('retryRuns', () => {
  it('re-drives a DEAD run: PENDING due now, attempts kept, a higher token on the next claim, the budget restarted', async () => {
    const t = await setup();
    const first = await claim(t, T0 + 10);
    expect(await fail(t, T0 + 20, first)).toBe(RunState.RUN_STATE_DEAD);
    const job0 = (await t.fsm.getJob('a'))!;
    expect(job0.activeRuns).toBe(0);

    const r = await retry(t, T0 + 1_000, [RUN]);
    expect(r.items[0]!.error).toBeUndefined();
    const run = (await t.fsm.getRun(RUN))!;
    expect(run).toMatchObject({ state: RunState.RUN_STATE_PENDING, notBeforeUnixMs: T0 + 1_000, finishedUnixMs: 0, reason: '', redriveCount: 1, redrivenUnixMs: T0 + 1_000, attempt: 1 });
    expect(r.items[0]!.run).toEqual(run);
    expect(run.attempts).toHaveLength(1);
    expect((await t.fsm.getJob('a'))!.activeRuns).toBe(1);
    expect((await t.fsm.readyRuns({ limit: 10 })).map((x) => x.id)).toEqual([RUN]);

    // max_attempts 1 and one attempt made: without the restart the next failure would be its second.
    const second = await claim(t, T0 + 1_010);
    expect(second).toBeGreaterThan(first);
    const claimed = (await t.fsm.getRun(RUN))!;
    expect(claimed.attempts.map((a) => [a.number, a.fencingToken])).toEqual([[1, first], [2, second]]);
    expect(await fail(t, T0 + 1_020, second)).toBe(RunState.RUN_STATE_DEAD);
    const dead = (await t.fsm.getRun(RUN))!;
    expect(dead.reason).toBe('attempt 1 of 1 since the run was re-driven failed');
    expect(dead.attempts.map((a) => a.outcome)).toEqual([AttemptOutcome.ATTEMPT_OUTCOME_FAILED, AttemptOutcome.ATTEMPT_OUTCOME_FAILED]);
    expect((await t.fsm.getJob('a'))!.activeRuns).toBe(0);

    // A stale worker of the first attempt cannot finish it.
    await retry(t, T0 + 2_000, [RUN]);
    const third = await claim(t, T0 + 2_010);
    const stale = await t.one({ type: 'finishRuns', nowMs: T0 + 2_020, items: [finishSuccess(RUN, second)] }, 'runItems');
    expect(stale.items[0]!.error).toMatchObject({ code: 'STALE_FENCING_TOKEN', reason: 'STALE_TOKEN' });
    const ok = await t.one({ type: 'finishRuns', nowMs: T0 + 2_030, items: [finishSuccess(RUN, third)] }, 'runItems');
    expect(ok.items[0]!.state).toBe(RunState.RUN_STATE_SUCCEEDED);
    expect((await t.fsm.getRun(RUN))!).toMatchObject({ redriveCount: 2, attempt: 3 });
  });

  it('retries with backoff within the restarted budget (attempts before the re-drive do not count)', async () => {
    const t = await setup({ retry: { maxAttempts: 2, initialBackoffMs: 1_000 } });
    let token = await claim(t, T0 + 10);
    expect(await fail(t, T0 + 20, token)).toBe(RunState.RUN_STATE_FAILED);
    const waiting = (await t.fsm.getRun(RUN))!;
    token = await claim(t, waiting.notBeforeUnixMs);
    expect(await fail(t, waiting.notBeforeUnixMs + 10, token)).toBe(RunState.RUN_STATE_DEAD);
    await retry(t, T0 + 60_000, [RUN]);
    token = await claim(t, T0 + 60_010);
    // Attempt 3 overall, 1 of 2 since the re-drive: a retry is scheduled, not DEAD.
    expect(await fail(t, T0 + 60_020, token)).toBe(RunState.RUN_STATE_FAILED);
  });

  it('re-drives a FAILED run at once (no backoff wait) and a CANCELLED one, which its starting deadline no longer fails', async () => {
    const t = await setup({ retry: { maxAttempts: 3, initialBackoffMs: 120_000 }, startingDeadlineMs: 5_000 });
    const token = await claim(t, T0 + 10);
    expect(await fail(t, T0 + 20, token)).toBe(RunState.RUN_STATE_FAILED);
    expect((await t.fsm.getRun(RUN))!.notBeforeUnixMs).toBeGreaterThan(T0 + 60_000);
    await retry(t, T0 + 30, [RUN]);
    expect((await t.fsm.getRun(RUN))!).toMatchObject({ state: RunState.RUN_STATE_PENDING, notBeforeUnixMs: T0 + 30 });
    expect((await t.fsm.getJob('a'))!.activeRuns).toBe(1); // it was active already

    // A pending run cancelled before any attempt, re-driven long after its starting deadline.
    await t.one({ type: 'fireRuns', nowMs: T0 + 60_000, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 + 60_000 }] });
    const other = `a@${T0 + 60_000}`;
    await t.one({ type: 'cancelRuns', nowMs: T0 + 60_001, items: [{ runId: other, reason: 'oops' }] });
    await retry(t, T0 + 120_000, [other]);
    await claim(t, T0 + 120_010, other);
    expect((await t.fsm.getRun(other))!).toMatchObject({ state: RunState.RUN_STATE_RUNNING, attempt: 1, redriveCount: 1 });
  });

  it('refuses runs in other states with INVALID_STATE naming the state; unknown runs, bad ids, repeats and state filters per item', async () => {
    const t = await setup({ retry: { maxAttempts: 1 } });
    const pending = await retry(t, T0 + 1, [RUN]);
    expect(pending.items[0]!.error).toMatchObject({ code: 'INVALID_STATE', reason: 'NOT_RETRYABLE', message: expect.stringContaining('RUN_STATE_PENDING') });
    const token = await claim(t, T0 + 10);
    expect((await retry(t, T0 + 11, [RUN])).items[0]!.error?.message).toContain('RUN_STATE_RUNNING');
    await t.one({ type: 'finishRuns', nowMs: T0 + 20, items: [finishSuccess(RUN, token)] });
    expect((await retry(t, T0 + 21, [RUN])).items[0]!.error?.message).toContain('RUN_STATE_SUCCEEDED');

    await t.one({ type: 'fireRuns', nowMs: T0 + 60_000, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 + 60_000 }] });
    const b = `a@${T0 + 60_000}`;
    await t.one({ type: 'markRuns', nowMs: T0 + 60_001, items: [{ runId: b, outcome: 'missed', reason: 'late' }] });
    expect((await retry(t, T0 + 60_002, [b])).items[0]!.error?.message).toContain('RUN_STATE_MISSED');

    const mixed = await retry(t, T0 + 60_003, [`a@${T0 + 1}`, 'no/such', RUN, RUN], {});
    expect(mixed.items.map((i) => i.error?.code)).toEqual(['RUN_NOT_FOUND', 'INVALID_ID', 'INVALID_STATE', 'INVALID_ARGUMENT']);

    await t.one({ type: 'fireRuns', nowMs: T0 + 120_000, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 + 120_000 }] });
    const c = `a@${T0 + 120_000}`;
    await t.one({ type: 'cancelRuns', nowMs: T0 + 120_001, items: [{ runId: c, reason: 'x' }] });
    const filtered = await retry(t, T0 + 120_002, [c], { onlyState: RunState.RUN_STATE_DEAD });
    expect(filtered.items[0]!.error).toMatchObject({ code: 'INVALID_STATE', reason: 'STATE_CHANGED' });
    expect((await t.fsm.getRun(c))!.state).toBe(RunState.RUN_STATE_CANCELLED);
    const badFilter = await retry(t, T0 + 120_003, [c], { onlyState: RunState.RUN_STATE_SUCCEEDED });
    expect(badFilter.items[0]!.error?.code).toBe('INVALID_ARGUMENT');
  });

  it(`refuses more than ${MAX_RETRY_RUNS_PER_COMMAND} runs in one command, changing nothing`, async () => {
    const t = await setup();
    const token = await claim(t, T0 + 10);
    await fail(t, T0 + 20, token);
    const before = await t.fsm.stateHash();
    const ids = [RUN, ...Array.from({ length: MAX_RETRY_RUNS_PER_COMMAND }, (_, i) => `a@${i + 1}`)];
    const r = await retry(t, T0 + 30, ids);
    expect(r.items).toHaveLength(ids.length);
    expect(r.items.every((i) => i.error?.code === 'LIMIT_EXCEEDED')).toBe(true);
    expect((await t.fsm.getRun(RUN))!.state).toBe(RunState.RUN_STATE_DEAD);
    expect(await t.fsm.stateHash()).not.toBe(before); // only the applied index moved
    expect((await retry(t, T0 + 40, ids.slice(0, MAX_RETRY_RUNS_PER_COMMAND))).items[0]!.error).toBeUndefined();
  });

  it('FORBID: a run re-driven while another run of the job is active waits its turn; ignoreOverlap starts it at once', async () => {
    const t = await setup({ retry: { maxAttempts: 1 }, overlapPolicy: OverlapPolicy.OVERLAP_POLICY_FORBID });
    const token = await claim(t, T0 + 10);
    await fail(t, T0 + 20, token);
    await t.one({ type: 'fireRuns', nowMs: T0 + 60_000, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 + 60_000 }] });
    const next = `a@${T0 + 60_000}`;
    const nextToken = await claim(t, T0 + 60_010, next);
    await retry(t, T0 + 60_020, [RUN]);
    expect((await t.fsm.readyRuns({ limit: 10 })).map((r) => r.id)).toEqual([]);
    const refused = await t.one({ type: 'claimRuns', nowMs: T0 + 60_030, items: [{ runId: RUN, workerId: 'w', leaseDeadlineMs: T0 + 90_000 }] }, 'claim');
    expect(refused.items[0]!.error?.reason).toBe('NOT_READY');
    await t.one({ type: 'finishRuns', nowMs: T0 + 60_040, items: [finishSuccess(next, nextToken)] });
    expect((await t.fsm.readyRuns({ limit: 10 })).map((r) => r.id)).toEqual([RUN]);

    // With ignoreOverlap it is dispatchable while the other runs.
    const t2 = await setup({ retry: { maxAttempts: 1 }, overlapPolicy: OverlapPolicy.OVERLAP_POLICY_FORBID });
    await fail(t2, T0 + 20, await claim(t2, T0 + 10));
    await t2.one({ type: 'fireRuns', nowMs: T0 + 60_000, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 + 60_000 }] });
    await claim(t2, T0 + 60_010, next);
    await retry(t2, T0 + 60_020, [RUN], { ignoreOverlap: true });
    expect((await t2.fsm.readyRuns({ limit: 10 })).map((r) => r.id)).toEqual([RUN]);
  });

  it('retention: a re-driven run leaves the terminal runs counted and is never trimmed while pending', async () => {
    const t = await setup({ retry: { maxAttempts: 1 }, retention: { maxRuns: 1 } });
    await fail(t, T0 + 20, await claim(t, T0 + 10));
    await retry(t, T0 + 30, [RUN]);
    // Three later runs end DEAD, far over max_runs 1; the trim keeps the pending one.
    for (let k = 1; k <= 3; k++) {
      const slot = T0 + k * 60_000;
      await t.one({ type: 'fireRuns', nowMs: slot, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: slot }] });
      await fail(t, slot + 20, await claim(t, slot + 10, `a@${slot}`), `a@${slot}`);
    }
    await t.one({ type: 'trimHistory', nowMs: T0 + 300_000, jobIds: ['a'], maxIdempotencyKeys: 0 });
    expect((await t.fsm.getRun(RUN))!.state).toBe(RunState.RUN_STATE_PENDING);
    const left = (await t.fsm.listRuns({ jobId: 'a' })).items.map((r) => r.id).sort();
    expect(left).toEqual([RUN, `a@${T0 + 180_000}`].sort());
  });

  it('a deleted job takes its runs along: nothing to re-drive', async () => {
    const t = await setup();
    await fail(t, T0 + 20, await claim(t, T0 + 10));
    await t.one({ type: 'deleteJob', nowMs: T0 + 30, jobId: 'a', expectedVersion: 0 });
    expect((await retry(t, T0 + 40, [RUN])).items[0]!.error?.code).toBe('RUN_NOT_FOUND');
  });

  it('is deterministic: the same log in different batchings gives the same results and state', async () => {
    const log: FsmCommand[] = [
      { type: 'putJob', nowMs: T0, jobId: 'a', spec: everySpec(1000, { retry: { maxAttempts: 1 } }, T0), idempotencyKey: '' },
      { type: 'putJob', nowMs: T0, jobId: 'b', spec: everySpec(1000, { overlapPolicy: OverlapPolicy.OVERLAP_POLICY_FORBID }, T0), idempotencyKey: '' },
      { type: 'fireRuns', nowMs: T0, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 }, { jobId: 'b', slotMs: T0 }] },
      { type: 'claimRuns', nowMs: T0 + 1, items: [{ runId: RUN, workerId: 'w', leaseDeadlineMs: T0 + 9_000 }] },
      { type: 'finishRuns', nowMs: T0 + 2, items: [finishFailure(RUN, 4, { type: 'X', retryable: false })] },
      { type: 'cancelRuns', nowMs: T0 + 3, items: [{ runId: `b@${T0}`, reason: 'r' }] },
      { type: 'retryRuns', nowMs: T0 + 4, runIds: [RUN, `b@${T0}`, 'a@5'], onlyState: 0, ignoreOverlap: false },
      { type: 'claimRuns', nowMs: T0 + 5, items: [{ runId: RUN, workerId: 'w', leaseDeadlineMs: T0 + 9_000 }] },
    ];
    const a = await fresh();
    const b = await fresh();
    const ra = await a.apply(...log);
    const rb: unknown[] = [];
    for (const c of log) rb.push(...(await b.apply(c)));
    expect(ra).toEqual(rb);
    expect(await a.fsm.stateHash()).toBe(await b.fsm.stateHash());
    expect((await a.fsm.getRun(RUN))!).toMatchObject({ state: RunState.RUN_STATE_RUNNING, fencingToken: 8, redriveCount: 1 });
    expect((await a.fsm.getRun(`b@${T0}`))!).toMatchObject({ state: RunState.RUN_STATE_PENDING, redriveCount: 1 });
  });
});

describe('redriveCandidates (the bulk read)', () => {
  async function manyDead(n: number): Promise<TestFsm> {
    const t = await fresh();
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'a', spec: everySpec(1000, { retry: { maxAttempts: 1 } }, T0), idempotencyKey: '' });
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'b', spec: everySpec(1000, { taskType: 'other', retry: { maxAttempts: 1 } }, T0), idempotencyKey: '' });
    for (let k = 0; k < n; k++) {
      const slot = T0 + k * 1000;
      await t.one({ type: 'fireRuns', nowMs: slot, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: slot }, { jobId: 'b', slotMs: slot }] });
      const token = t.nextIndex();
      await t.one({ type: 'claimRuns', nowMs: slot + 1, items: [{ runId: `a@${slot}`, workerId: 'w', leaseDeadlineMs: slot + 9_000 }, { runId: `b@${slot}`, workerId: 'w', leaseDeadlineMs: slot + 9_000 }] });
      await t.one({ type: 'finishRuns', nowMs: slot + 2, items: [finishFailure(`a@${slot}`, token, { type: 'X', retryable: false }), finishFailure(`b@${slot}`, token, { type: 'X', retryable: false })] });
    }
    return t;
  }

  it('pages through one state by job or task type, oldest slot first, bounded per call, filtered by end time', async () => {
    const t = await manyDead(5);
    const q = { state: RunState.RUN_STATE_DEAD, fromMs: 0, toMs: 0 };
    const p1 = await t.fsm.redriveCandidates({ ...q, jobId: 'a', limit: 2 });
    expect(p1.runIds).toEqual([`a@${T0}`, `a@${T0 + 1000}`]);
    expect(p1.more).toBe(true);
    const p2 = await t.fsm.redriveCandidates({ ...q, jobId: 'a', limit: 10, pageToken: p1.nextPageToken });
    expect(p2).toEqual({ runIds: [`a@${T0 + 2000}`, `a@${T0 + 3000}`, `a@${T0 + 4000}`], more: false, nextPageToken: '' });
    const exact = await t.fsm.redriveCandidates({ ...q, jobId: 'a', limit: 5 });
    expect(exact.more).toBe(false);
    const other = await t.fsm.redriveCandidates({ ...q, taskType: 'other', limit: 100 });
    expect(other.runIds).toEqual([0, 1, 2, 3, 4].map((k) => `b@${T0 + k * 1000}`));
    const window = await t.fsm.redriveCandidates({ ...q, jobId: 'a', fromMs: T0 + 1002, toMs: T0 + 3002, limit: 100 });
    expect(window.runIds).toEqual([`a@${T0 + 1000}`, `a@${T0 + 2000}`]);
    expect((await t.fsm.redriveCandidates({ ...q, state: RunState.RUN_STATE_CANCELLED, jobId: 'a', limit: 100 })).runIds).toEqual([]);
    // A token is only good for the range it came from.
    await expect(t.fsm.redriveCandidates({ ...q, jobId: 'b', limit: 1, pageToken: p1.nextPageToken })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(decodeToken(p1.nextPageToken, '')).toContain(`a\0`);
  });
});
