import { describe, expect, it } from 'vitest';
import { status } from '@grpc/grpc-js';
import { BATCH_MAX_ITEMS, CreateBatcher, type CreateAnswer } from '../../src/client/create-batcher.js';
import { clientError } from '../../src/client/errors.js';
import { Job, JobSpec } from '../../src/gen/herald/v1/job.js';
import type { CreateJobRequest, CreateJobsResult } from '../../src/gen/herald/v1/job_service.js';

const item = (key: string, payloadBytes = 0): CreateJobRequest => ({
  jobId: '',
  spec: JobSpec.fromPartial({ taskType: 't', payload: Buffer.alloc(payloadBytes) }),
  idempotencyKey: key,
});
const job = (id: string): Job => Job.fromPartial({ id });

/** A batcher whose turn ends when the test says so, with scripted answers. */
function harness(answers: {
  many?: (items: CreateJobRequest[]) => CreateJobsResult[] | Promise<CreateJobsResult[]>;
  one?: (item: CreateJobRequest) => CreateAnswer | Promise<CreateAnswer>;
}) {
  const deferred: (() => void)[] = [];
  const manyCalls: { keys: string[]; deadline: number }[] = [];
  const oneCalls: { key: string; deadline: number }[] = [];
  const b = new CreateBatcher({
    many: async (items, deadline) => {
      manyCalls.push({ keys: items.map((i) => i.idempotencyKey), deadline });
      return answers.many ? answers.many(items) : items.map((i) => ({ job: job(`j-${i.idempotencyKey}`), code: status.OK, message: '', created: true }));
    },
    one: async (it, deadline) => {
      oneCalls.push({ key: it.idempotencyKey, deadline });
      return answers.one ? answers.one(it) : { job: job(`one-${it.idempotencyKey}`), created: true };
    },
    defer: (fn) => deferred.push(fn),
  });
  const endTurn = () => deferred.splice(0).forEach((f) => f());
  return { b, manyCalls, oneCalls, endTurn };
}

describe('CreateBatcher', () => {
  it('sends the calls of one turn as one CreateJobs, under the earliest deadline, and a lone call as a plain CreateJob', async () => {
    const h = harness({});
    const now = Date.now();
    const ps = ['a', 'b', 'c'].map((k, i) => h.b.create(item(k), now + 10_000 - i * 1000));
    h.endTurn();
    const answers = await Promise.all(ps);
    expect(h.manyCalls).toEqual([{ keys: ['a', 'b', 'c'], deadline: now + 8_000 }]);
    expect(h.oneCalls).toEqual([]);
    expect(answers.map((a) => a.job.id)).toEqual(['j-a', 'j-b', 'j-c']);

    const lone = h.b.create(item('d'), now + 5_000);
    h.endTurn();
    expect((await lone).job.id).toBe('one-d');
    expect(h.manyCalls).toHaveLength(1);
    expect(h.oneCalls).toEqual([{ key: 'd', deadline: now + 5_000 }]);
  });

  it('an item the batch did not create goes again on its own with its key, and gets the plain call’s answer or error', async () => {
    const exists = clientError({ grpcCode: status.ALREADY_EXISTS, message: 'job "x" already exists', heraldCode: 'ALREADY_EXISTS' });
    const h = harness({
      many: (items) => items.map((i) => (i.idempotencyKey === 'bad' ? { job: undefined, code: status.ALREADY_EXISTS, message: 'exists', created: false } : { job: job(i.idempotencyKey), code: status.OK, message: '', created: true })),
      one: (it) => {
        if (it.idempotencyKey === 'bad') throw exists;
        return { job: job('unexpected'), created: true };
      },
    });
    const deadline = Date.now() + 10_000;
    const good = h.b.create(item('good'), deadline);
    const bad = h.b.create(item('bad'), deadline);
    h.endTurn();
    expect((await good).job.id).toBe('good');
    await expect(bad).rejects.toBe(exists);
    expect(h.oneCalls).toEqual([{ key: 'bad', deadline }]);
  });

  it('when the whole batch fails, each item is retried on its own; one whose deadline passed gets the batch’s error', async () => {
    const unavailable = clientError({ grpcCode: status.UNAVAILABLE, message: 'down' });
    const h = harness({
      many: () => {
        throw unavailable;
      },
    });
    const now = Date.now();
    const late = h.b.create(item('late'), now - 1);
    const onTime = h.b.create(item('ok'), now + 10_000);
    h.endTurn();
    await expect(late).rejects.toBe(unavailable);
    expect((await onTime).job.id).toBe('one-ok');
    expect(h.oneCalls.map((c) => c.key)).toEqual(['ok']);
  });

  it('splits a turn into batches of at most BATCH_MAX_ITEMS and by payload bytes', async () => {
    const h = harness({});
    const deadline = Date.now() + 10_000;
    const ps = Array.from({ length: BATCH_MAX_ITEMS + 3 }, (_, i) => h.b.create(item(`k${i}`), deadline));
    h.endTurn();
    await Promise.all(ps);
    expect(h.manyCalls.map((c) => c.keys.length)).toEqual([BATCH_MAX_ITEMS, 3]);

    const big = [h.b.create(item('big1', 3 << 20), deadline), h.b.create(item('big2', 3 << 20), deadline), h.b.create(item('small'), deadline)];
    h.endTurn();
    await Promise.all(big);
    // 3 MiB + 3 MiB exceeds the 4 MiB bound: big1 goes alone (a plain call), big2 and small together.
    expect(h.oneCalls.map((c) => c.key)).toEqual(['big1']);
    expect(h.manyCalls[2]!.keys).toEqual(['big2', 'small']);
  });
});
