// Job records: the positional format 2 round-trips every field of Job (a proto field added later
// fails here until the codec writes it) but active_runs, which schema 4 stores as 0 (the count is
// kept in memory, active-runs.ts); format-1 records (protobuf Job) still read.
import { describe, expect, it } from 'vitest';
import { Job, JobSpec, JobState } from '../../src/gen/herald/v1/job.js';
import { ByteReader, ByteWriter } from '../../src/fsm/binary-codec.js';
import { decodeJobRecord, encodeJobRecord, jobRecordOfSchema4, type JobRecord } from '../../src/fsm/records.js';
import { readJob, writeJob } from '../../src/fsm/job-record-codec.js';
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
const rec: JobRecord = { job: full, manualSeq: 4, heldRunId: 'job-1@1900000000000' };

describe('job record codec', () => {
  it('covers every field of Job', () => {
    expect(Object.keys(Job.fromPartial({}))).toEqual([
      'id', 'spec', 'state', 'version', 'createdUnixMs', 'updatedUnixMs', 'nextFireUnixMs', 'lastSlotUnixMs', 'pauseNote', 'activeRuns',
    ]);
    for (const [k, v] of Object.entries(Job.fromPartial({}))) expect((full as unknown as Record<string, unknown>)[k], k).not.toEqual(v);
  });

  it('round-trips every field exactly, active_runs stored as 0', () => {
    const bytes = encodeJobRecord(rec);
    expect(bytes[0]).toBe(2);
    const back = decodeJobRecord(bytes);
    expect(back).toEqual({ ...rec, job: { ...full, activeRuns: 0 } });
    expect(encodeJobRecord(back)).toEqual(bytes);
    // The positional Job itself (results) keeps the count.
    const w = new ByteWriter();
    writeJob(w, full);
    expect(readJob(new ByteReader(w.finish())).activeRuns).toBe(3);
    const bare = { job: Job.fromPartial({ id: 'j' }), manualSeq: 0, heldRunId: '' };
    expect(decodeJobRecord(encodeJobRecord(bare))).toEqual(bare);
  });

  it('older records come to schema 4 form (active_runs 0, format 2); records in that form stay as they are', () => {
    // What schema 3 wrote: format 2 with the count in the record.
    const w = new ByteWriter().u8(2).uint(rec.manualSeq).str(rec.heldRunId);
    writeJob(w, full);
    const schema3 = w.finish();
    expect(decodeJobRecord(schema3).job.activeRuns).toBe(3);
    const upgraded = jobRecordOfSchema4(schema3);
    expect(upgraded).toEqual(encodeJobRecord(rec));
    expect(decodeJobRecord(upgraded).job.activeRuns).toBe(0);
    const current = encodeJobRecord(rec);
    expect(jobRecordOfSchema4(current)).toBe(current);
    const header = new ByteWriter().u8(1).uint(rec.manualSeq).str(rec.heldRunId).bytes(JobSpec.encode(full.spec!).finish()).finish();
    const format1 = Uint8Array.of(...header, ...Job.encode({ ...full, spec: undefined }).finish());
    expect(jobRecordOfSchema4(format1)).toEqual(encodeJobRecord(rec));
  });

  it('reads format-1 records written before', () => {
    const header = new ByteWriter().u8(1).uint(rec.manualSeq).str(rec.heldRunId).bytes(JobSpec.encode(full.spec!).finish()).finish();
    const body = Job.encode({ ...full, spec: undefined }).finish();
    expect(decodeJobRecord(Uint8Array.of(...header, ...body))).toEqual(rec);
  });
});
