// Run records: the positional formats round-trip every field of Run (a proto field added later
// fails here until the codec writes it): format 2 for a run never re-driven, format 3 (with the
// re-drive fields and the attempt base) for one that was; format-1 (protobuf) records still read.
import { describe, expect, it } from 'vitest';
import { Attempt, AttemptOutcome, Run, RunState } from '../../src/gen/herald/v1/run.js';
import { decodeRunRecord, encodeRunRecord } from '../../src/fsm/store/records.js';

const full = Run.fromPartial({
  id: 'job-1@1900000000000~m3',
  jobId: 'job-1',
  taskType: 'email',
  slotUnixMs: 1_900_000_000_000,
  scheduledUnixMs: 1_900_000_000_123,
  state: RunState.RUN_STATE_FAILED,
  attempt: 2,
  attempts: [
    { number: 1, workerId: 'w1', fencingToken: 41, startedUnixMs: 1_900_000_000_200, endedUnixMs: 1_900_000_000_300, outcome: AttemptOutcome.ATTEMPT_OUTCOME_LEASE_EXPIRED },
    { number: 2, workerId: 'wörker-2', fencingToken: 2 ** 40, startedUnixMs: 5, endedUnixMs: 6, outcome: AttemptOutcome.ATTEMPT_OUTCOME_FAILED, error: { type: 'Boom', message: 'ünïcode ✓', retryable: true } },
  ],
  backfilled: true,
  manual: true,
  notBeforeUnixMs: 1_900_000_009_000,
  createdUnixMs: 1_900_000_000_001,
  finishedUnixMs: 1_900_000_000_999,
  workerId: 'w2',
  fencingToken: 2 ** 40,
  leaseDeadlineUnixMs: 1_900_000_030_000,
  reason: 'r'.repeat(300),
  output: Buffer.from([0, 1, 2, 255]),
  priority: -1000,
  latenessMs: 123,
  redriveCount: 2,
  redrivenUnixMs: 1_900_000_001_000,
});
/** The same run before any re-drive: written in format 2, as before re-drive existed. */
const neverRedriven = { ...full, redriveCount: 0, redrivenUnixMs: 0 };

describe('run record codec', () => {
  it('covers every field of Run and Attempt', () => {
    // Adding a field to run.proto changes these lists: write it in run-record-codec.ts, then here.
    expect(Object.keys(Run.fromPartial({}))).toEqual([
      'id', 'jobId', 'taskType', 'slotUnixMs', 'scheduledUnixMs', 'state', 'attempt', 'attempts', 'backfilled', 'manual',
      'notBeforeUnixMs', 'createdUnixMs', 'finishedUnixMs', 'workerId', 'fencingToken', 'leaseDeadlineUnixMs', 'reason', 'output', 'priority', 'latenessMs',
      'redriveCount', 'redrivenUnixMs', 'payload',
      // Not stored: filled on reads from the leader's dispatch limits (job-service.ts).
      'waitingFor',
      // Runs a person acted on only, after the rest in format 5 (request-ids.test.ts).
      'requestedBy', 'requestId',
    ]);
    expect(Object.keys(Attempt.fromPartial({}))).toEqual(['number', 'workerId', 'fencingToken', 'startedUnixMs', 'endedUnixMs', 'outcome', 'error']);
    // Every field of the sample differs from its default, so a dropped field shows below.
    // Except payload: alert runs only, written after the rest in format 4 (the test below).
    const apart = new Set(['payload', 'waitingFor', 'requestedBy', 'requestId']);
    for (const [k, v] of Object.entries(Run.fromPartial({}))) if (!apart.has(k)) expect((full as unknown as Record<string, unknown>)[k], k).not.toEqual(v);
  });

  it('a run with a payload (an alert run) writes format 4 and round-trips it; others keep format 2', () => {
    const alert = { ...neverRedriven, payload: Buffer.from('{"event":"dead"}') };
    const bytes = encodeRunRecord({ run: alert, held: false });
    expect(bytes[0]).toBe(4);
    expect(decodeRunRecord(bytes)).toEqual({ run: alert, held: false });
    expect(encodeRunRecord(decodeRunRecord(bytes))).toEqual(bytes);
    // A re-driven alert run: format 3 carries its payload too.
    const redriven = { ...full, payload: Buffer.from('{"event":"dead"}') };
    const r3 = encodeRunRecord({ run: redriven, held: true, attemptBase: 1 });
    expect(r3[0]).toBe(3);
    expect(decodeRunRecord(r3)).toEqual({ run: redriven, held: true, attemptBase: 1 });
    expect(encodeRunRecord(decodeRunRecord(r3))).toEqual(r3);
  });

  it('round-trips every field exactly, held or not, re-driven or not', () => {
    for (const held of [false, true]) {
      const bytes = encodeRunRecord({ run: neverRedriven, held });
      expect(bytes[0]).toBe(2);
      const back = decodeRunRecord(bytes);
      expect(back).toEqual({ run: neverRedriven, held });
      expect(Buffer.isBuffer(back.run.output)).toBe(true);
      expect(encodeRunRecord(back)).toEqual(bytes);
      const redriven = encodeRunRecord({ run: full, held, attemptBase: 2 });
      expect(redriven[0]).toBe(3);
      const again = decodeRunRecord(redriven);
      expect(again).toEqual({ run: full, held, attemptBase: 2 });
      expect(encodeRunRecord(again)).toEqual(redriven);
    }
    const empty = Run.fromPartial({ id: 'j@0', jobId: 'j' });
    expect(decodeRunRecord(encodeRunRecord({ run: empty, held: false })).run).toEqual(empty);
  });

  it('reads format-1 (protobuf) records written before', () => {
    const pb = Run.encode(full).finish();
    const v1 = new Uint8Array(2 + pb.length);
    v1.set([1, 1]);
    v1.set(pb, 2);
    expect(decodeRunRecord(v1)).toEqual({ run: full, held: true });
  });

  it('refuses unknown versions and trailing bytes', () => {
    for (const run of [neverRedriven, full]) {
      const bytes = encodeRunRecord({ run, held: false });
      expect(() => decodeRunRecord(Uint8Array.of(9, ...bytes.subarray(1)))).toThrow(/version/);
      expect(() => decodeRunRecord(Uint8Array.of(...bytes, 0))).toThrow(/trailing/);
    }
  });
});
