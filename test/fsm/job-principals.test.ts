// Who created and last changed a job (Job.created_by / updated_by): the leader puts the caller's
// principal name into the job commands, apply records it. Commands and records without one keep
// the bytes they had before the fields existed, and old ones still decode.
import { afterEach, describe, expect, it } from 'vitest';
import { Job, JobSpec, JobState } from '../../src/gen/herald/v1/job.js';
import { ByteWriter } from '../../src/fsm/commands/binary-codec.js';
import { writeJob } from '../../src/fsm/commands/job-record-codec.js';
import { decodeCommand, encodeCommand, type FsmCommand } from '../../src/fsm/index.js';
import { decodeJobRecord, encodeJobRecord, type JobRecord } from '../../src/fsm/store/records.js';
import { everySpec, openTestFsm, T0, type TestFsm } from './fsm-test-kit.js';

let t: TestFsm | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const spec = everySpec(60_000, { taskType: 'email' });

describe('who created and changed a job', () => {
  it('create records the principal as created_by and updated_by; update / pause / resume set updated_by; fires leave it', async () => {
    t = await openTestFsm();
    const created = await t.one({ type: 'putJob', nowMs: T0, jobId: 'j1', spec, idempotencyKey: '', principal: 'alice' }, 'job');
    expect(created.job).toMatchObject({ createdBy: 'alice', updatedBy: 'alice' });
    const updated = await t.one({ type: 'updateJob', nowMs: T0 + 1, jobId: 'j1', spec: everySpec(120_000, { taskType: 'email' }), expectedVersion: 0, principal: 'bob' }, 'job');
    expect(updated.job).toMatchObject({ createdBy: 'alice', updatedBy: 'bob' });
    expect((await t.one({ type: 'pauseJob', nowMs: T0 + 2, jobId: 'j1', note: 'n', principal: 'carol' }, 'job')).job?.updatedBy).toBe('carol');
    expect((await t.one({ type: 'resumeJob', nowMs: T0 + 3, jobId: 'j1', principal: 'dave' }, 'job')).job?.updatedBy).toBe('dave');
    const stored = (await t.fsm.getJob('j1'))!;
    expect(stored).toMatchObject({ createdBy: 'alice', updatedBy: 'dave', state: JobState.JOB_STATE_ACTIVE });
    // The scheduler's own changes are nobody's: a fire keeps who last changed the job.
    await t.one({ type: 'fireRuns', nowMs: stored.nextFireUnixMs, misfireThresholdMs: 60_000, items: [{ jobId: 'j1', slotMs: stored.nextFireUnixMs }] });
    const fired = (await t.fsm.getJob('j1'))!;
    expect(fired.lastSlotUnixMs).toBe(stored.nextFireUnixMs);
    expect(fired).toMatchObject({ createdBy: 'alice', updatedBy: 'dave' });
    // Bulk creates record the command's principal on every item; a change with auth off clears updated_by.
    const bulk = await t.one({ type: 'putJobs', nowMs: T0 + 4, items: [{ jobId: 'b1', spec, idempotencyKey: '' }, { jobId: 'b2', spec, idempotencyKey: '' }], principal: 'deploy-bot' }, 'jobs');
    expect(bulk.items.map((i) => i.job?.createdBy)).toEqual(['deploy-bot', 'deploy-bot']);
    expect((await t.fsm.getJob('b2'))?.updatedBy).toBe('deploy-bot');
    expect((await t.one({ type: 'pauseJob', nowMs: T0 + 5, jobId: 'b1', note: '' }, 'job')).job).toMatchObject({ createdBy: 'deploy-bot', updatedBy: '' });

    // Persisted: a reopened store reads them back.
    const dir = t.dir;
    await t.fsm.close();
    const reopened = await openTestFsm({}, dir);
    t = reopened;
    expect(await reopened.fsm.getJob('j1')).toMatchObject({ createdBy: 'alice', updatedBy: 'dave' });
  });

  it('without a principal (auth off) nothing is recorded and commands keep their earlier bytes', async () => {
    t = await openTestFsm();
    expect((await t.one({ type: 'putJob', nowMs: T0, jobId: 'j', spec, idempotencyKey: 'k' }, 'job')).job).toMatchObject({ createdBy: '', updatedBy: '' });
    // The bytes every build before the field wrote: no trailing principal.
    const before = new ByteWriter().u8(1).u8(1).int(T0).str('j').bytes(JobSpec.encode(spec).finish()).str('k').finish();
    expect(encodeCommand({ type: 'putJob', nowMs: T0, jobId: 'j', spec, idempotencyKey: 'k' })).toEqual(before);
    expect(encodeCommand({ type: 'putJob', nowMs: T0, jobId: 'j', spec, idempotencyKey: 'k', principal: '' })).toEqual(before);
    expect(decodeCommand(before)).toMatchObject({ type: 'putJob', jobId: 'j', idempotencyKey: 'k' });
    expect(decodeCommand(before)).not.toHaveProperty('principal');
    const oldPause = new ByteWriter().u8(1).u8(4).int(T0).str('j').str('note').finish();
    expect(decodeCommand(oldPause)).toEqual({ type: 'pauseJob', nowMs: T0, jobId: 'j', note: 'note', principal: undefined });
    // Every job command round-trips its principal.
    const cmds: FsmCommand[] = [
      { type: 'putJob', nowMs: T0, jobId: 'j', spec, idempotencyKey: '', principal: 'p' },
      { type: 'putJobs', nowMs: T0, items: [{ jobId: 'j', spec, idempotencyKey: '' }], principal: 'p' },
      { type: 'updateJob', nowMs: T0, jobId: 'j', spec, expectedVersion: 3, principal: 'p' },
      { type: 'deleteJob', nowMs: T0, jobId: 'j', expectedVersion: 3, principal: 'p' },
      { type: 'pauseJob', nowMs: T0, jobId: 'j', note: '', principal: 'p' },
      { type: 'resumeJob', nowMs: T0, jobId: 'j', principal: 'p' },
    ];
    for (const c of cmds) expect(decodeCommand(encodeCommand(c))).toMatchObject({ type: c.type, principal: 'p' });
  });

  it('job records: format 6 only for a job with who; the others keep their bytes; formats 3–5 still decode', () => {
    const job = Job.fromPartial({ id: 'j', spec, state: JobState.JOB_STATE_ACTIVE, version: 2, createdUnixMs: T0, updatedUnixMs: T0 + 1, nextFireUnixMs: T0 + 60_000 });
    const rec: JobRecord = { job, manualSeq: 1, heldRunId: '', terminalRuns: 2, trimDueMs: T0 + 5 };
    // Format 3 exactly as written before created_by existed.
    const w3 = new ByteWriter().u8(3).uint(1).str('').uint(2).int(T0 + 5);
    writeJob(w3, job);
    const format3 = w3.finish();
    expect(encodeJobRecord(rec)).toEqual(format3);
    expect(decodeJobRecord(format3)).toEqual(rec);
    // Format 5 (alerts) as written before: decodes with nobody recorded, re-encodes to the same bytes.
    const w5 = new ByteWriter().u8(5).uint(1).str('').uint(2).int(T0 + 5).uint(0).uint(3).int(T0 + 7);
    writeJob(w5, job);
    const format5 = w5.finish();
    const dead = decodeJobRecord(format5);
    expect(dead.job).toMatchObject({ consecutiveDeadRuns: 3, createdBy: '', updatedBy: '' });
    expect(dead.watchdogSlotMs).toBe(T0 + 7);
    expect(encodeJobRecord(dead)).toEqual(format5);

    const who: JobRecord = { ...rec, job: { ...job, createdBy: 'alice', updatedBy: 'bob' } };
    const bytes = encodeJobRecord(who);
    expect(bytes[0]).toBe(6);
    expect(decodeJobRecord(bytes)).toEqual({ ...who, heldRuns: 0 });
    expect(encodeJobRecord(decodeJobRecord(bytes))).toEqual(bytes);
    // With everything else format 5 carries.
    const all: JobRecord = { ...who, job: { ...who.job, consecutiveDeadRuns: 2 }, heldRuns: 4, heldRunId: 'j@1', watchdogSlotMs: T0 + 9 };
    expect(decodeJobRecord(encodeJobRecord(all))).toEqual(all);
    // Only one of the two set still writes it.
    const onlyCreated: JobRecord = { ...rec, job: { ...job, createdBy: 'alice' } };
    expect(decodeJobRecord(encodeJobRecord(onlyCreated)).job).toMatchObject({ createdBy: 'alice', updatedBy: '' });
  });
});
