// Job records: the positional format 3 round-trips every field of Job (a proto field added later
// fails here until the codec writes it), and format-1 and -2 records still read (without retention
// state, which the schema-4 upgrade derives). Format 8 carries the trim horizon (feature level 4)
// and only a job with one writes it.
import { describe, expect, it } from 'vitest';
import { Job, JobSpec, JobState } from '../../src/gen/herald/v1/job.js';
import { ByteWriter } from '../../src/fsm/commands/binary-codec.js';
import { writeJob } from '../../src/fsm/commands/job-record-codec.js';
import { decodeJobRecord, encodeJobRecord, type JobRecord } from '../../src/fsm/store/records.js';
import { everySpec } from './fsm-test-kit.js';

const full = Job.fromPartial({
  id: 'job-1',
  spec: everySpec(60_000, { labels: { team: 'ä' }, payload: Buffer.from('{}'), priority: -3 }),
  state: JobState.JOB_STATE_PAUSED,
  version: 7,
  createdUnixMs: 1_900_000_000_000,
  updatedUnixMs: 1_900_000_000_500,
  nextFireUnixMs: 1_900_000_060_000,
  lastSlotUnixMs: 1_900_000_000_000,
  pauseNote: 'maintenance ✓',
  activeRuns: 3,
});
const rec: JobRecord = { job: full, manualSeq: 4, heldRunId: 'job-1@1900000000000', terminalRuns: 17, trimDueMs: 1_900_000_100_000 };
const withoutRetention: JobRecord = { ...rec, terminalRuns: 0, trimDueMs: 0 };

describe('job record codec', () => {
  it('covers every field of Job', () => {
    expect(Object.keys(Job.fromPartial({}))).toEqual([
      'id', 'spec', 'state', 'version', 'createdUnixMs', 'updatedUnixMs', 'nextFireUnixMs', 'lastSlotUnixMs', 'pauseNote', 'activeRuns', 'consecutiveDeadRuns', 'createdBy', 'updatedBy',
      'createdRequestId', 'updatedRequestId',
    ]);
    // Except consecutiveDeadRuns (in the record header of format 5, the test below),
    // createdBy / updatedBy (format 6's header, job-principals.test.ts) and the request ids
    // (format 7's, request-ids.test.ts).
    const inHeader = new Set(['consecutiveDeadRuns', 'createdBy', 'updatedBy', 'createdRequestId', 'updatedRequestId']);
    for (const [k, v] of Object.entries(Job.fromPartial({}))) if (!inHeader.has(k)) expect((full as unknown as Record<string, unknown>)[k], k).not.toEqual(v);
  });

  it('a job with DEAD runs counted or a watchdog alert writes format 5 and round-trips them', () => {
    const counted: JobRecord = { ...rec, job: { ...full, consecutiveDeadRuns: 4 }, heldRuns: 1, watchdogSlotMs: 1_900_000_060_000 };
    const bytes = encodeJobRecord(counted);
    expect(bytes[0]).toBe(5);
    expect(decodeJobRecord(bytes)).toEqual(counted);
    expect(encodeJobRecord(decodeJobRecord(bytes))).toEqual(bytes);
    const queued: JobRecord = { ...rec, job: { ...full, consecutiveDeadRuns: 1 }, heldRuns: 5 };
    expect(decodeJobRecord(encodeJobRecord(queued))).toEqual(queued);
  });

  it('round-trips every field exactly', () => {
    const bytes = encodeJobRecord(rec);
    expect(bytes[0]).toBe(3);
    const back = decodeJobRecord(bytes);
    expect(back).toEqual(rec);
    expect(encodeJobRecord(back)).toEqual(bytes);
    const bare = { job: Job.fromPartial({ id: 'j' }), manualSeq: 0, heldRunId: '', terminalRuns: 0, trimDueMs: 0 };
    expect(decodeJobRecord(encodeJobRecord(bare))).toEqual(bare);
  });

  it('a job with backfill runs queued (more held runs than its BUFFER_ONE one) writes format 4; otherwise format 3', () => {
    const queued: JobRecord = { ...rec, heldRuns: 5 };
    const bytes = encodeJobRecord(queued);
    expect(bytes[0]).toBe(4);
    expect(decodeJobRecord(bytes)).toEqual(queued);
    // The count every format-3 record implies (its BUFFER_ONE run or none) keeps format 3.
    expect(encodeJobRecord({ ...rec, heldRuns: 1 })[0]).toBe(3);
    expect(encodeJobRecord({ ...rec, heldRunId: '', heldRuns: 0 })[0]).toBe(3);
  });

  it('a job with a trim horizon writes format 8 (every header field, then the horizon) and round-trips it; without one the bytes stay those of before', () => {
    const trimmed: JobRecord = { ...rec, heldRuns: 1, trimmedThroughSlotMs: 1_899_999_940_000 };
    const bytes = encodeJobRecord(trimmed);
    expect(bytes[0]).toBe(8);
    expect(decodeJobRecord(bytes)).toEqual(trimmed);
    expect(encodeJobRecord(decodeJobRecord(bytes))).toEqual(bytes);
    // The layout: format 7's header with all its fields, then the horizon, then the positional Job.
    const w = new ByteWriter().u8(8).uint(rec.manualSeq).str(rec.heldRunId).uint(rec.terminalRuns).int(rec.trimDueMs);
    w.uint(1).uint(0).int(0).str('').str('').str('').str('').int(1_899_999_940_000);
    writeJob(w, full);
    expect(bytes).toEqual(w.finish());
    // With every other header field set too.
    const all: JobRecord = {
      ...trimmed,
      heldRuns: 3,
      watchdogSlotMs: 1_900_000_060_000,
      job: { ...full, consecutiveDeadRuns: 2, createdBy: 'alice', updatedBy: 'bob', createdRequestId: 'r1', updatedRequestId: 'r2' },
    };
    expect(decodeJobRecord(encodeJobRecord(all))).toEqual(all);
    // No horizon (absent or 0): exactly the bytes each older format wrote, written by hand here.
    const w3 = new ByteWriter().u8(3).uint(rec.manualSeq).str(rec.heldRunId).uint(rec.terminalRuns).int(rec.trimDueMs);
    writeJob(w3, full);
    expect(encodeJobRecord(rec)).toEqual(w3.finish());
    expect(encodeJobRecord({ ...rec, trimmedThroughSlotMs: 0 })).toEqual(encodeJobRecord(rec));
    const who: JobRecord = { ...rec, job: { ...full, createdBy: 'alice', createdRequestId: 'r1' } };
    const w7 = new ByteWriter().u8(7).uint(rec.manualSeq).str(rec.heldRunId).uint(rec.terminalRuns).int(rec.trimDueMs).uint(1).uint(0).int(0).str('alice').str('').str('r1').str('');
    writeJob(w7, full);
    expect(encodeJobRecord(who)).toEqual(w7.finish());
    expect(encodeJobRecord({ ...who, trimmedThroughSlotMs: 0 })).toEqual(encodeJobRecord(who));
    // A format-8 record without a horizon is never written, so it does not read either (one encoding per record).
    const bad = new ByteWriter().u8(8).uint(0).str('').uint(0).int(0).uint(0).uint(0).int(0).str('').str('').str('').str('').int(0);
    writeJob(bad, full);
    expect(() => decodeJobRecord(bad.finish())).toThrow(/without a trim horizon/);
  });

  it('reads format-1 records written before', () => {
    const header = new ByteWriter().u8(1).uint(rec.manualSeq).str(rec.heldRunId).bytes(JobSpec.encode(full.spec!).finish()).finish();
    const body = Job.encode({ ...full, spec: undefined }).finish();
    expect(decodeJobRecord(Uint8Array.of(...header, ...body))).toEqual(withoutRetention);
  });

  it('reads format-2 records written before (no retention state)', () => {
    const w = new ByteWriter().u8(2).uint(rec.manualSeq).str(rec.heldRunId);
    writeJob(w, full);
    expect(decodeJobRecord(w.finish())).toEqual(withoutRetention);
  });
});
