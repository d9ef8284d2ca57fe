// Feature level 3 (issue 29, audit): job commands carry the call's request id, recorded as the
// job's created / updated request id; the run commands a person makes (trigger, backfill, retry,
// cancel) carry the caller's principal and request id, recorded on the runs they act on. Commands
// and records without them keep the bytes of level 2; the leader leaves them out below level 3.
import { afterEach, describe, expect, it } from 'vitest';
import { Job, JobSpec, JobState } from '../../src/gen/herald/v1/job.js';
import { Run, RunState } from '../../src/gen/herald/v1/run.js';
import { ByteWriter } from '../../src/fsm/commands/binary-codec.js';
import { writeRun, writeRunRedrive } from '../../src/fsm/commands/run-record-codec.js';
import { atFeatureLevel, commandFeatureLevel, FEATURE_LEVEL, SUPPORTED_FEATURE_LEVEL } from '../../src/fsm/commands/feature-levels.js';
import { decodeCommand, encodeCommand, type FsmCommand } from '../../src/fsm/index.js';
import { decodeJobRecord, decodeRunRecord, encodeJobRecord, encodeRunRecord, type JobRecord, type RunRecord } from '../../src/fsm/store/records.js';
import { everySpec, openTestFsm, T0, type TestFsm } from './fsm-test-kit.js';

let t: TestFsm | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const spec = everySpec(60_000, { taskType: 'email' });

describe('request ids and run callers (feature level 3)', () => {
  it('apply records the request id on jobs and the caller on the runs a person acts on; a fire leaves them', async () => {
    t = await openTestFsm();
    // A paused job with past slots to backfill (a paused job's whole past may be backfilled).
    await t.one({ type: 'putJob', nowMs: T0 - 600_000, jobId: 'bk', spec, idempotencyKey: '' }, 'job');
    await t.one({ type: 'pauseJob', nowMs: T0 - 599_000, jobId: 'bk', note: '' }, 'job');
    const created = await t.one({ type: 'putJob', nowMs: T0, jobId: 'j1', spec, idempotencyKey: '', principal: 'alice', requestId: 'req-1' }, 'job');
    expect(created.job).toMatchObject({ createdBy: 'alice', createdRequestId: 'req-1', updatedRequestId: 'req-1' });
    await t.one({ type: 'pauseJob', nowMs: T0 + 1, jobId: 'j1', note: '', principal: 'bob', requestId: 'req-2' }, 'job');
    const resumed = await t.one({ type: 'resumeJob', nowMs: T0 + 2, jobId: 'j1', principal: 'bob', requestId: 'req-3' }, 'job');
    expect(resumed.job).toMatchObject({ createdRequestId: 'req-1', updatedBy: 'bob', updatedRequestId: 'req-3' });
    const bulk = await t.one({ type: 'putJobs', nowMs: T0 + 3, items: [{ jobId: 'b1', spec, idempotencyKey: '' }], requestId: 'req-bulk' }, 'jobs');
    expect(bulk.items[0]!.job).toMatchObject({ createdBy: '', createdRequestId: 'req-bulk' });

    const trig = await t.one({ type: 'triggerJob', nowMs: T0 + 4, jobId: 'j1', idempotencyKey: '', ignoreOverlap: true, principal: 'carol', requestId: 'req-4' }, 'trigger');
    expect(trig.run).toMatchObject({ manual: true, requestedBy: 'carol', requestId: 'req-4' });
    const cancelled = await t.one({ type: 'cancelRuns', nowMs: T0 + 5, items: [{ runId: trig.run!.id, reason: 'no' }], principal: 'dave', requestId: 'req-5' }, 'cancel');
    expect(cancelled.items[0]!.run).toMatchObject({ state: RunState.RUN_STATE_CANCELLED, requestedBy: 'dave', requestId: 'req-5' });
    const retried = await t.one({ type: 'retryRuns', nowMs: T0 + 6, runIds: [trig.run!.id], onlyState: 0, ignoreOverlap: true, principal: 'erin', requestId: 'req-6' }, 'retry');
    expect(retried.items[0]!.run).toMatchObject({ state: RunState.RUN_STATE_PENDING, redriveCount: 1, requestedBy: 'erin', requestId: 'req-6' });
    const back = await t.one({ type: 'backfillJob', nowMs: T0 + 7, jobId: 'bk', fromMs: T0 - 600_000, toMs: T0 - 300_000, maxRuns: 10, ignoreOverlap: true, principal: 'frank', requestId: 'req-7' }, 'backfill');
    expect(back.error).toBeUndefined();
    expect(back.runIds.length).toBeGreaterThan(0);
    for (const id of back.runIds) expect(await t.fsm.getRun(id)).toMatchObject({ backfilled: true, requestedBy: 'frank', requestId: 'req-7' });

    // A scheduled fire is nobody's request: its runs carry none, and the job keeps its ids.
    const job = (await t.fsm.getJob('j1'))!;
    const fire = await t.one({ type: 'fireRuns', nowMs: job.nextFireUnixMs, misfireThresholdMs: 60_000, items: [{ jobId: 'j1', slotMs: job.nextFireUnixMs }] }, 'fire');
    const firedId = fire.items[0]!.created[0]!;
    expect(await t.fsm.getRun(firedId)).toMatchObject({ requestedBy: '', requestId: '' });
    expect(await t.fsm.getJob('j1')).toMatchObject({ createdRequestId: 'req-1', updatedRequestId: 'req-3' });

    // Persisted.
    const dir = t.dir;
    await t.fsm.close();
    t = await openTestFsm({}, dir);
    expect(await t.fsm.getJob('j1')).toMatchObject({ createdRequestId: 'req-1', updatedRequestId: 'req-3' });
    expect(await t.fsm.getRun(trig.run!.id)).toMatchObject({ requestedBy: 'erin', requestId: 'req-6' });
  });

  it('commands: level-2 bytes unchanged without them, round trips with them, levels as the leader needs', () => {
    const level2Put = encodeCommand({ type: 'putJob', nowMs: T0, jobId: 'j', spec, idempotencyKey: 'k', principal: 'alice' });
    const expected2 = new ByteWriter().u8(1).u8(1).int(T0).str('j').bytes(JobSpec.encode(spec).finish()).str('k').str('alice').finish();
    expect(level2Put).toEqual(expected2);
    const level3Put = encodeCommand({ type: 'putJob', nowMs: T0, jobId: 'j', spec, idempotencyKey: 'k', principal: 'alice', requestId: 'r1' });
    // A level-2 build reads the principal and then meets bytes it does not know: it stops applying.
    expect(Buffer.from(level3Put.subarray(0, level2Put.length)).equals(Buffer.from(level2Put))).toBe(true);
    expect(level3Put.length).toBeGreaterThan(level2Put.length);
    const trig = { type: 'triggerJob', nowMs: T0, jobId: 'j', idempotencyKey: 'k', ignoreOverlap: false } as const;
    const trigBefore = new ByteWriter().u8(1).u8(6).int(T0).str('j').str('k').bool(false).finish();
    expect(encodeCommand(trig)).toEqual(trigBefore);

    const cmds: FsmCommand[] = [
      { type: 'putJob', nowMs: T0, jobId: 'j', spec, idempotencyKey: '', principal: 'p', requestId: 'r' },
      { type: 'putJob', nowMs: T0, jobId: 'j', spec, idempotencyKey: '', requestId: 'r' },
      { type: 'putJobs', nowMs: T0, items: [{ jobId: 'j', spec, idempotencyKey: '' }], principal: 'p', requestId: 'r' },
      { type: 'updateJob', nowMs: T0, jobId: 'j', spec, expectedVersion: 3, principal: 'p', requestId: 'r' },
      { type: 'deleteJob', nowMs: T0, jobId: 'j', expectedVersion: 3, requestId: 'r' },
      { type: 'pauseJob', nowMs: T0, jobId: 'j', note: 'n', principal: 'p', requestId: 'r' },
      { type: 'resumeJob', nowMs: T0, jobId: 'j', principal: 'p', requestId: 'r' },
      { ...trig, principal: 'p', requestId: 'r' },
      { ...trig, requestId: 'r' },
      { type: 'backfillJob', nowMs: T0, jobId: 'j', fromMs: 1, toMs: 2, maxRuns: 3, ignoreOverlap: true, principal: 'p', requestId: 'r' },
      { type: 'retryRuns', nowMs: T0, runIds: ['a', 'b'], onlyState: 0, ignoreOverlap: false, principal: 'p' },
      { type: 'cancelRuns', nowMs: T0, items: [{ runId: 'a', reason: 'x' }], principal: 'p', requestId: 'r' },
    ];
    for (const c of cmds) {
      const bytes = encodeCommand(c);
      const back = decodeCommand(bytes);
      expect(back).toMatchObject(c);
      expect(['principal' in back, 'requestId' in back], c.type).toEqual(['principal' in c, 'requestId' in c]);
      expect(encodeCommand(decodeCommand(bytes))).toEqual(bytes);
      expect(commandFeatureLevel(c), c.type).toBe(FEATURE_LEVEL.REQUEST_IDS);
      // Below level 3 the leader proposes the level-2 (or level-1) form.
      const at2 = atFeatureLevel(c, FEATURE_LEVEL.PRINCIPALS);
      expect(commandFeatureLevel(at2)).toBeLessThanOrEqual(FEATURE_LEVEL.PRINCIPALS);
      expect(at2).not.toHaveProperty('requestId');
      expect(commandFeatureLevel(atFeatureLevel(c, FEATURE_LEVEL.BASE))).toBe(FEATURE_LEVEL.BASE);
      expect(atFeatureLevel(c, FEATURE_LEVEL.REQUEST_IDS)).toBe(c);
    }
    // A job command's principal stays at level 2; a run command's is level 3.
    expect(atFeatureLevel({ type: 'pauseJob', nowMs: T0, jobId: 'j', note: '', principal: 'p', requestId: 'r' }, 2)).toEqual({ type: 'pauseJob', nowMs: T0, jobId: 'j', note: '', principal: 'p' });
    expect(atFeatureLevel({ ...trig, principal: 'p', requestId: 'r' }, 2)).toEqual(trig);
    expect(SUPPORTED_FEATURE_LEVEL).toBeGreaterThanOrEqual(FEATURE_LEVEL.REQUEST_IDS);
    // One encoding per command: empty fields are refused, not read as absent.
    expect(() => decodeCommand(new ByteWriter().u8(1).u8(6).int(T0).str('j').str('k').bool(false).str('').str('').finish())).toThrow(/empty caller/);
    expect(() => decodeCommand(new ByteWriter().u8(1).u8(5).int(T0).str('j').str('p').str('').finish())).toThrow(/empty request id/);
  });

  it('records: job format 7 and run format 5 only with them; other records keep their bytes', () => {
    const job = Job.fromPartial({ id: 'j', spec, state: JobState.JOB_STATE_ACTIVE, version: 2, createdUnixMs: T0, updatedUnixMs: T0 + 1, createdBy: 'alice', updatedBy: 'bob' });
    const rec: JobRecord = { job, manualSeq: 1, heldRunId: '', terminalRuns: 2, trimDueMs: T0 + 5 };
    expect(encodeJobRecord(rec)[0]).toBe(6);
    const withIds: JobRecord = { ...rec, job: { ...job, createdRequestId: 'r1', updatedRequestId: 'r2' }, heldRuns: 0 };
    const bytes = encodeJobRecord(withIds);
    expect(bytes[0]).toBe(7);
    expect(decodeJobRecord(bytes)).toEqual(withIds);
    expect(encodeJobRecord(decodeJobRecord(bytes))).toEqual(bytes);
    // Request id without a principal (auth off) still writes format 7.
    const anon: JobRecord = { ...rec, job: { ...job, createdBy: '', updatedBy: '', updatedRequestId: 'r3' }, heldRuns: 0 };
    expect(decodeJobRecord(encodeJobRecord(anon))).toEqual(anon);

    const run = Run.fromPartial({ id: 'j@1', jobId: 'j', taskType: 'email', slotUnixMs: T0, scheduledUnixMs: T0, state: RunState.RUN_STATE_PENDING, manual: true });
    const plain: RunRecord = { run, held: false };
    expect(encodeRunRecord(plain)[0]).toBe(2);
    const redriven: RunRecord = { run: { ...run, redriveCount: 1, redrivenUnixMs: T0 + 1 }, held: false, attemptBase: 0 };
    // Format 3 exactly as written before the caller fields existed.
    const w3 = new ByteWriter().u8(3).bool(false).uint(0);
    writeRun(w3, redriven.run);
    writeRunRedrive(w3, redriven.run);
    w3.bytes(new Uint8Array());
    expect(encodeRunRecord(redriven)).toEqual(w3.finish());
    const caller: RunRecord = { run: { ...run, requestedBy: 'carol', requestId: 'r4' }, held: true, attemptBase: 0 };
    const runBytes = encodeRunRecord(caller);
    expect(runBytes[0]).toBe(5);
    expect(decodeRunRecord(runBytes)).toEqual(caller);
    expect(encodeRunRecord(decodeRunRecord(runBytes))).toEqual(runBytes);
    const both: RunRecord = { run: { ...caller.run, redriveCount: 2, redrivenUnixMs: T0 + 9, payload: Buffer.from('{"a":1}') }, held: false, attemptBase: 3 };
    expect(decodeRunRecord(encodeRunRecord(both))).toEqual(both);
  });
});
