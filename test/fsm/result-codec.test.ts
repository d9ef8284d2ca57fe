import { describe, expect, it } from 'vitest';
import { Job, JobState } from '../../src/gen/herald/v1/job.js';
import { decodeFireOutcomes, decodeJobHeads, decodeResult, decodeSignals, encodeResult, FsmDecodeError, resultTypeOf } from '../../src/fsm/index.js';
import { spec } from './fsm-test-kit.js';

const job = (id: string, state: JobState, nextFireUnixMs: number) =>
  Job.fromPartial({ id, state, nextFireUnixMs, version: 3, createdUnixMs: 10, updatedUnixMs: 20, lastSlotUnixMs: 5, pauseNote: 'n', activeRuns: 2, spec: spec({ payload: Buffer.from('x'.repeat(500)) }) });

describe('decodeJobHeads', () => {
  it('reads the id, state and next fire of every job in a job or jobs result, as decodeResult would', () => {
    const jobs = encodeResult({
      type: 'jobs',
      items: [
        { job: job('a', JobState.JOB_STATE_ACTIVE, 1234), created: true },
        { error: { code: 'ALREADY_EXISTS', message: 'taken', reason: '' }, created: false },
        { job: job('c', JobState.JOB_STATE_PAUSED, 0), created: false },
      ],
    });
    const heads = decodeJobHeads(jobs);
    expect(heads).toEqual([
      { id: 'a', state: JobState.JOB_STATE_ACTIVE, nextFireUnixMs: 1234 },
      { id: 'c', state: JobState.JOB_STATE_PAUSED, nextFireUnixMs: 0 },
    ]);
    const full = decodeResult(jobs);
    expect(full.type === 'jobs' && full.items.flatMap((i) => (i.job ? [{ id: i.job.id, state: i.job.state, nextFireUnixMs: i.job.nextFireUnixMs }] : []))).toEqual(heads);
    expect(decodeJobHeads(encodeResult({ type: 'job', job: job('z', JobState.JOB_STATE_ACTIVE, 99), created: false }))).toEqual([
      { id: 'z', state: JobState.JOB_STATE_ACTIVE, nextFireUnixMs: 99 },
    ]);
  });

  it('gives a dispatch hint only to active jobs due before dispatchBeforeMs (the jobs the wheel holds), none by default', () => {
    const jobs = encodeResult({
      type: 'jobs',
      items: [
        { job: job('soon', JobState.JOB_STATE_ACTIVE, 1000), created: true },
        { job: job('later', JobState.JOB_STATE_ACTIVE, 5000), created: true },
        { job: job('paused', JobState.JOB_STATE_PAUSED, 1000), created: true },
      ],
    });
    const hint = { taskType: spec().taskType, priority: 0, jittered: false, allowsOverlap: true, jitterWindowMs: 0 };
    expect(decodeJobHeads(jobs, 5000).map((h) => [h.id, h.dispatch])).toEqual([
      ['soon', hint],
      ['later', undefined],
      ['paused', undefined],
    ]);
    expect(decodeJobHeads(jobs).every((h) => h.dispatch === undefined)).toBe(true);
  });

  it('is empty for results without jobs', () => {
    expect(decodeJobHeads(encodeResult({ type: 'job', error: { code: 'JOB_NOT_FOUND', message: 'no', reason: '' }, created: false }))).toEqual([]);
    expect(decodeJobHeads(encodeResult({ type: 'trim', runsTrimmed: 1, idempotencyKeysTrimmed: 2 }))).toEqual([]);
    expect(decodeJobHeads(new Uint8Array())).toEqual([]);
  });
});

describe('narrow result readers', () => {
  const err = { code: 'JOB_NOT_FOUND' as const, message: 'gone', reason: 'r' };
  const signals = [
    { runId: 'a@1', workerId: 'w1', fencingToken: 7 },
    { runId: 'b@2', workerId: 'w2', fencingToken: 9 },
  ];
  const fire = encodeResult({
    type: 'fire',
    items: [
      { created: ['a@1', 'a@2'], missed: [], skipped: [], nextFireMs: 3, dispatch: { taskType: 'report', priority: 5, jittered: true, allowsOverlap: false, jitterWindowMs: 60_000 } },
      { error: err, created: [], missed: [], skipped: [], nextFireMs: 0 },
      { created: [], missed: ['c@1', 'c@2', 'c@3'], skipped: ['c@4'], nextFireMs: 123_456_789_000, backlogFull: 2 },
    ],
    signals,
  });

  it('decodeFireOutcomes counts what decodeResult lists, item by item', () => {
    const full = decodeResult(fire);
    if (full.type !== 'fire') throw new Error('not a fire');
    expect(decodeFireOutcomes(fire)).toEqual(
      full.items.map((i) => ({ failed: i.error !== undefined, created: i.created.length, missed: i.missed.length, skipped: i.skipped.length, nextFireMs: i.nextFireMs, dispatch: i.dispatch, backlogFull: i.backlogFull ?? 0 })),
    );
    expect(decodeFireOutcomes(fire)[0]!.dispatch).toEqual({ taskType: 'report', priority: 5, jittered: true, allowsOverlap: false, jitterWindowMs: 60_000 });
    expect(decodeFireOutcomes(fire)[2]).toEqual({ failed: false, created: 0, missed: 3, skipped: 1, nextFireMs: 123_456_789_000, dispatch: undefined, backlogFull: 2 });
    expect(decodeFireOutcomes(encodeResult({ type: 'claim', items: [] }))).toEqual([]);
    expect(decodeFireOutcomes(new Uint8Array())).toEqual([]);
  });

  it('decodeSignals reads the signals of fire, delete and cancel results and nothing else', () => {
    expect(decodeSignals(fire)).toEqual(signals);
    expect(decodeSignals(encodeResult({ type: 'fire', items: [], signals: [] }))).toEqual([]);
    expect(decodeSignals(encodeResult({ type: 'delete', cancelledRuns: 2, signals }))).toEqual(signals);
    expect(decodeSignals(encodeResult({ type: 'cancel', items: [{ error: err }], signals: signals.slice(1) }))).toEqual(signals.slice(1));
    expect(decodeSignals(encodeResult({ type: 'trim', runsTrimmed: 1, idempotencyKeysTrimmed: 0 }))).toEqual([]);
    expect(decodeSignals(new Uint8Array())).toEqual([]);
  });

  it('decodeSignals refuses a truncated fire result', () => {
    expect(() => decodeSignals(fire.subarray(0, fire.length - 3))).toThrow(FsmDecodeError);
  });

  it('resultTypeOf names the result from its header and refuses unknown headers', () => {
    expect(resultTypeOf(fire)).toBe('fire');
    expect(resultTypeOf(new Uint8Array())).toBe('empty');
    expect(resultTypeOf(encodeResult({ type: 'rejected', error: err }))).toBe('rejected');
    expect(() => resultTypeOf(Uint8Array.of(99, 5))).toThrow(FsmDecodeError);
    expect(() => resultTypeOf(Uint8Array.of(1, 200))).toThrow(FsmDecodeError);
  });

  it('claim and run-item results decode without absent fields', () => {
    const claim = decodeResult(encodeResult({ type: 'claim', items: [{ error: err }, {}] }));
    expect(claim.type === 'claim' && claim.items.map((i) => Object.keys(i))).toEqual([['error'], []]);
    const items = decodeResult(encodeResult({ type: 'runItems', items: [{ state: 3 }, { error: err, state: 0 }] }));
    expect(items).toStrictEqual({ type: 'runItems', items: [{ state: 3 }, { error: err, state: 0 }] });
  });
});
