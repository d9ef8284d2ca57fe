// The trim horizon (feature level 4): retention records on the job the last slot whose run record it
// deleted, and a backfill reaching that slot is refused whole instead of taking "no record" for
// "never ran" (which ran trimmed slots again, a backfilled one under the very run id a worker had
// already run: I1). Below level 4 apply stays exactly as it was, so replicas of an older build
// applying the same entries cannot diverge.
import { status } from '@grpc/grpc-js';
import { ClassicLevel } from 'classic-level';
import { describe, expect, it } from 'vitest';
import { MisfirePolicy } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { finishSuccess, type FsmCommand } from '../../src/fsm/index.js';
import { FEATURE_LEVEL, SUPPORTED_FEATURE_LEVEL } from '../../src/fsm/commands/feature-levels.js';
import { decodeJobRecord, type JobRecord } from '../../src/fsm/store/records.js';
import { grpcStatusOf } from '../../src/server/grpc/grpc-status-map.js';
import { itemError } from '../../src/server/api/fsm-result.js';
import { everySpec, freshFsmsPerTest, T0, type TestFsm } from './fsm-test-kit.js';

const { fresh } = freshFsmsPerTest();
const MIN = 60_000;
const JOB = 'report';
const slot = (k: number) => T0 + k * MIN;

function storedJob(t: TestFsm, jobId = JOB): Promise<Uint8Array> {
  return (t.fsm as unknown as { store: ClassicLevel<string, Uint8Array> }).store.get(`j\0${jobId}`) as Promise<Uint8Array>;
}

async function jobRecord(t: TestFsm, jobId = JOB): Promise<JobRecord> {
  return decodeJobRecord(await storedJob(t, jobId));
}

async function runIds(t: TestFsm, jobId = JOB): Promise<string[]> {
  return (await t.fsm.listRuns({ jobId, pageSize: 1000 })).items.map((r) => r.id).sort();
}

/** A cluster at `level` with an every-minute job keeping 2 runs; a missed slot is recorded MISSED, not caught up. */
async function clusterAt(level: number, retention = { maxRuns: 2 }): Promise<TestFsm> {
  const t = await fresh();
  await t.one({ type: 'setFeatureLevel', nowMs: T0, level });
  await t.one({ type: 'putJob', nowMs: T0, jobId: JOB, spec: everySpec(MIN, { retention, misfirePolicy: MisfirePolicy.MISFIRE_POLICY_SKIP }, T0), idempotencyKey: '' }, 'job');
  return t;
}

/** The scheduler fires the slot at `nowMs` (slots before it that are over a minute late are MISSED). */
async function fire(t: TestFsm, k: number, nowMs = slot(k)): Promise<void> {
  await t.one({ type: 'fireRuns', nowMs, misfireThresholdMs: MIN, items: [{ jobId: JOB, slotMs: slot(k) }] }, 'fire');
}

/** A worker claims the run and reports success. */
async function runToSuccess(t: TestFsm, runId: string, nowMs: number): Promise<void> {
  const claim = await t.one({ type: 'claimRuns', nowMs, items: [{ runId, workerId: 'w', leaseDeadlineMs: nowMs + 30_000 }] }, 'claim');
  expect(claim.items[0]!.error).toBeUndefined();
  const r = await t.one({ type: 'finishRuns', nowMs: nowMs + 1_000, items: [finishSuccess(runId, claim.items[0]!.run!.fencingToken)] }, 'runItems');
  expect(r.items[0]!.error).toBeUndefined();
}

function trim(t: TestFsm, nowMs: number) {
  return t.one({ type: 'trimHistory', nowMs, jobIds: [JOB], maxIdempotencyKeys: 0 }, 'trim');
}

function backfill(t: TestFsm, fromMs: number, toMs: number, nowMs: number) {
  return t.one({ type: 'backfillJob', nowMs, jobId: JOB, fromMs, toMs, maxRuns: 100, ignoreOverlap: false }, 'backfill');
}

/**
 * Slot 0 was missed (the cluster was down) and backfilled, and the backfill ran; slot 1 was missed
 * as well, slot 2 ran on time. Retention (2 runs) then trims the oldest two records: slot 0's
 * MISSED run and its backfill run.
 */
async function backfilledThenTrimmed(t: TestFsm): Promise<void> {
  await fire(t, 2, slot(2) + 10);
  expect(await runIds(t)).toEqual([`${JOB}@${slot(0)}`, `${JOB}@${slot(1)}`, `${JOB}@${slot(2)}`]);
  const first = await backfill(t, slot(0), slot(1), slot(2) + 20);
  expect(first.runIds).toEqual([`${JOB}@${slot(0)}~b`]);
  await runToSuccess(t, `${JOB}@${slot(0)}~b`, slot(2) + 30);
  await runToSuccess(t, `${JOB}@${slot(2)}`, slot(2) + 40);
  expect((await trim(t, slot(2) + 2_000)).runsTrimmed).toBe(2);
  expect(await runIds(t)).toEqual([`${JOB}@${slot(1)}`, `${JOB}@${slot(2)}`]);
}

describe('trim horizon (feature level 4)', () => {
  it('this build supports level 4', () => {
    expect(FEATURE_LEVEL.TRIM_HORIZON).toBe(4);
    expect(SUPPORTED_FEATURE_LEVEL).toBeGreaterThanOrEqual(FEATURE_LEVEL.TRIM_HORIZON);
  });

  it('a trim records the last slot it deleted; backfilling a trimmed slot is refused (FAILED_PRECONDITION) and creates nothing; a range after the horizon still backfills', async () => {
    const t = await clusterAt(4);
    for (const k of [0, 1, 2]) {
      await fire(t, k);
      await runToSuccess(t, `${JOB}@${slot(k)}`, slot(k) + 100);
    }
    // Down for a while: slot 3 is recorded MISSED when slot 4 is fired, which runs.
    await fire(t, 4, slot(4) + 10);
    await runToSuccess(t, `${JOB}@${slot(4)}`, slot(4) + 100);
    expect((await jobRecord(t)).trimmedThroughSlotMs).toBeUndefined();
    // Five terminal runs, max_runs 2: slots 0, 1 and 2 go, oldest first.
    expect((await trim(t, slot(4) + 5_000)).runsTrimmed).toBe(3);
    expect(await runIds(t)).toEqual([`${JOB}@${slot(3)}`, `${JOB}@${slot(4)}`]);
    expect((await jobRecord(t)).trimmedThroughSlotMs).toBe(slot(2));
    expect((await storedJob(t))[0]).toBe(8);

    // Slot 1 ran, but its record is gone: without the horizon this backfill would run it again.
    const before = await storedJob(t);
    const refused = await backfill(t, slot(1), slot(2), slot(4) + 6_000);
    expect(refused.runIds).toEqual([]);
    expect(refused.error).toEqual({
      code: 'INVALID_STATE', // FAILED_PRECONDITION to the client (grpc-status-map.ts)
      reason: 'HISTORY_TRIMMED',
      message: `job "${JOB}": run history through slot ${new Date(slot(2)).toISOString()} was trimmed by retention, so whether those slots ran is unknown; backfill from after that slot (from_unix_ms > ${slot(2)})`,
    });
    // What BackfillJob throws for it (job-service.ts), and the status the client gets.
    expect(grpcStatusOf[itemError(refused.error!).code]).toBe(status.FAILED_PRECONDITION);
    // A range from the horizon on is refused whole: slot 3 (MISSED, backfillable) is not run either.
    expect((await backfill(t, slot(2), slot(4), slot(4) + 6_000)).error?.reason).toBe('HISTORY_TRIMMED');
    expect(await storedJob(t)).toEqual(before);
    expect(await runIds(t)).toEqual([`${JOB}@${slot(3)}`, `${JOB}@${slot(4)}`]);

    // After the horizon, as the refusal says: slot 3 is backfilled.
    const ok = await backfill(t, slot(2) + 1, slot(4), slot(4) + 7_000);
    expect(ok.error).toBeUndefined();
    expect(ok.runIds).toEqual([`${JOB}@${slot(3)}~b`]);
  });

  it('a backfilled run that ran and was trimmed is not backfilled again under the same run id (I1)', async () => {
    const t = await clusterAt(4);
    await backfilledThenTrimmed(t);
    expect((await jobRecord(t)).trimmedThroughSlotMs).toBe(slot(0));
    const again = await backfill(t, slot(0), slot(1), slot(2) + 3_000);
    expect(again).toMatchObject({ runIds: [], error: { code: 'INVALID_STATE', reason: 'HISTORY_TRIMMED' } });
    expect(await t.fsm.getRun(`${JOB}@${slot(0)}~b`)).toBeUndefined();
    // Slot 1 (MISSED, its record kept) is after the horizon: it still backfills.
    expect((await backfill(t, slot(1), slot(2), slot(2) + 3_000)).runIds).toEqual([`${JOB}@${slot(1)}~b`]);
  });

  it('at level 3 nothing changes: no horizon is recorded, the record keeps its format, and the trimmed slot is backfilled as before', async () => {
    const t = await clusterAt(FEATURE_LEVEL.REQUEST_IDS);
    await backfilledThenTrimmed(t);
    expect((await jobRecord(t)).trimmedThroughSlotMs).toBeUndefined();
    expect((await storedJob(t))[0]).not.toBe(8);
    // The old rule (what a level-3 replica of an older build computes for the same entry).
    expect((await backfill(t, slot(0), slot(1), slot(2) + 3_000)).runIds).toEqual([`${JOB}@${slot(0)}~b`]);
  });

  it('trims before the raise to level 4 leave no horizon; the first trim after it records one', async () => {
    const t = await clusterAt(FEATURE_LEVEL.REQUEST_IDS, { maxRuns: 1 });
    for (const k of [0, 1]) {
      await fire(t, k);
      await runToSuccess(t, `${JOB}@${slot(k)}`, slot(k) + 100);
    }
    expect((await trim(t, slot(1) + 2_000)).runsTrimmed).toBe(1);
    expect((await jobRecord(t)).trimmedThroughSlotMs).toBeUndefined();
    await t.one({ type: 'setFeatureLevel', nowMs: slot(1) + 3_000, level: 4 });
    await fire(t, 2);
    await runToSuccess(t, `${JOB}@${slot(2)}`, slot(2) + 100);
    expect((await trim(t, slot(2) + 2_000)).runsTrimmed).toBe(1);
    expect((await jobRecord(t)).trimmedThroughSlotMs).toBe(slot(1));
  });

  it('a trim in the same apply call as the raise sees level 4, as it would applied alone (same state either way)', async () => {
    const build = async (t: TestFsm) => {
      for (const k of [0, 1]) {
        await fire(t, k);
        await runToSuccess(t, `${JOB}@${slot(k)}`, slot(k) + 100);
      }
    };
    const raise: FsmCommand = { type: 'setFeatureLevel', nowMs: slot(1) + 2_000, level: 4 };
    const trimCmd: FsmCommand = { type: 'trimHistory', nowMs: slot(1) + 2_000, jobIds: [JOB], maxIdempotencyKeys: 0 };
    const a = await clusterAt(FEATURE_LEVEL.REQUEST_IDS, { maxRuns: 1 });
    await build(a);
    await a.apply(raise, trimCmd);
    const b = await clusterAt(FEATURE_LEVEL.REQUEST_IDS, { maxRuns: 1 });
    await build(b);
    await b.one(raise);
    await b.one(trimCmd);
    expect((await jobRecord(a)).trimmedThroughSlotMs).toBe(slot(0));
    expect(await a.fsm.stateHash()).toBe(await b.fsm.stateHash());
  });

  it('the hard run bound (apply trimming without a trim command) records the horizon too', async () => {
    const t = await clusterAt(4);
    // Every slot is past its 1 ms starting deadline when fired: MISSED, until max_runs 2 plus the slack of 4 is passed.
    await t.one({ type: 'updateJob', nowMs: T0, jobId: JOB, spec: everySpec(MIN, { startingDeadlineMs: 1, retention: { maxRuns: 2 } }, T0), expectedVersion: 0 }, 'job');
    for (let k = 0; k < 7; k++) await fire(t, k, slot(k) + 500);
    // Seven terminal runs: the apply of the last fire trimmed back to 2 (slots 0-4 deleted).
    expect(await runIds(t)).toEqual([`${JOB}@${slot(5)}`, `${JOB}@${slot(6)}`]);
    expect((await jobRecord(t)).trimmedThroughSlotMs).toBe(slot(4));
    expect((await backfill(t, slot(4), slot(5), slot(7))).error?.reason).toBe('HISTORY_TRIMMED');
    expect((await backfill(t, slot(5), slot(6), slot(7))).runIds).toEqual([`${JOB}@${slot(5)}~b`]);
  });

  it('trimmed manual runs do not raise the horizon: their ids are unique by sequence and never made again', async () => {
    // Triggered before the scheduler fired any slot: the job's only runs are manual.
    const t = await clusterAt(4, { maxRuns: 1 });
    for (const n of [0, 1]) {
      const trig = await t.one({ type: 'triggerJob', nowMs: T0 + n * 1_000, jobId: JOB, idempotencyKey: '', ignoreOverlap: false }, 'trigger');
      await runToSuccess(t, trig.run!.id, T0 + n * 1_000 + 100);
    }
    expect((await trim(t, T0 + 5_000)).runsTrimmed).toBe(1);
    expect(await runIds(t)).toEqual([`${JOB}@${T0 + 1_000}~m1`]);
    expect((await jobRecord(t)).trimmedThroughSlotMs).toBeUndefined();
    expect((await storedJob(t))[0]).not.toBe(8);
  });

  it('the horizon travels in snapshots', async () => {
    const t = await clusterAt(4);
    await backfilledThenTrimmed(t);
    const snap = await t.fsm.snapshot();
    const chunks: Uint8Array[] = [];
    for await (const c of snap.chunks()) chunks.push(c);
    await snap.close();
    const other = await fresh();
    await other.fsm.restore({ index: snap.appliedIndex, term: 1, conf: { voters: [] } }, (async function* () { yield* chunks; })());
    expect((await jobRecord(other)).trimmedThroughSlotMs).toBe(slot(0));
    expect(await other.fsm.stateHash()).toBe(await t.fsm.stateHash());
  });
});
