import { describe, expect, it } from 'vitest';
import { Job, JobState } from '../../src/gen/herald/v1/job.js';
import { decodeJobHeads, decodeResult, encodeResult } from '../../src/fsm/index.js';
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

  it('is empty for results without jobs', () => {
    expect(decodeJobHeads(encodeResult({ type: 'job', error: { code: 'JOB_NOT_FOUND', message: 'no', reason: '' }, created: false }))).toEqual([]);
    expect(decodeJobHeads(encodeResult({ type: 'trim', runsTrimmed: 1, idempotencyKeysTrimmed: 2 }))).toEqual([]);
    expect(decodeJobHeads(new Uint8Array())).toEqual([]);
  });
});
