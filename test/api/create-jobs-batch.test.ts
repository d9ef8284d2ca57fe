// CreateJobs through JobService: batched into putJobs entries, with one precise result per item
// in request order, across several entries, through a follower, and safe to retry whole.
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import type { CreateJobsResponse, GetJobResponse } from '../../src/gen/herald/v1/job_service.js';
import { startApiCluster, type ApiCluster } from './helpers/api-cluster.js';
import { call, callError } from './helpers/call.js';

function spec(over: Partial<JobSpec> = {}): JobSpec {
  return JobSpec.fromPartial({
    taskType: 'email',
    schedule: { kind: { $case: 'every', every: { intervalMs: 60_000, anchorUnixMs: 0 } } },
    ...over,
  });
}

describe('CreateJobs (batched) on a 3-node cluster', () => {
  let cluster: ApiCluster;
  let follower: object;

  beforeAll(async () => {
    // Three nodes share this process's event loop: applying 7 MiB of specs (the large-payload
    // test) stalls all of them at once, which on a loaded machine looked like a dead leader.
    cluster = await startApiCluster(3, { electionTicks: 40 });
    const leader = await cluster.leader();
    follower = cluster.clients[(cluster.nodes.indexOf(leader) + 1) % 3]!;
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('answers every item in order across several entries: created, typed errors, duplicates, replays', async () => {
    const n = 1100; // more than one putJobs entry carries (kept small: the forwarded call has 5 s)
    const items = Array.from({ length: n }, (_, i) => ({ jobId: `batch-${i}`, spec: spec(), idempotencyKey: `bk-${i}` }));
    items[3] = { jobId: 'batch-3', spec: spec({ schedule: { kind: { $case: 'cron', cron: { expression: 'nope', timeZone: '' } } } }), idempotencyKey: '' };
    items[1050] = { jobId: 'batch-10', spec: spec(), idempotencyKey: '' }; // id taken by item 10 (an earlier entry)
    items[1051] = { jobId: 'batch-1051', spec: spec(), idempotencyKey: 'bk-5' }; // key of item 5 (an earlier entry)
    items[7] = { jobId: 'bad id', spec: spec(), idempotencyKey: '' };
    items[8] = { jobId: 'batch-8', spec: spec({ payload: Buffer.alloc(256 * 1024 + 1) }), idempotencyKey: '' };
    const res = await call<unknown, CreateJobsResponse>(follower, 'createJobs', { items }, 60_000);
    expect(res.results).toHaveLength(n);
    const codes = res.results.map((r) => r.code);
    expect(codes[3]).toBe(status.INVALID_ARGUMENT);
    expect(res.results[3]!.message).toMatch(/cron/i);
    expect(codes[7]).toBe(status.INVALID_ARGUMENT);
    expect(res.results[7]!.message).toMatch(/job_id/);
    expect(codes[8]).toBe(status.INVALID_ARGUMENT);
    expect(res.results[8]!.message).toMatch(/payload/);
    expect(codes[1050]).toBe(status.ALREADY_EXISTS);
    expect(res.results[1051]).toMatchObject({ code: status.OK, created: false, job: { id: 'batch-5' } });
    const special = new Set([3, 7, 8, 1050, 1051]);
    res.results.forEach((r, i) => {
      if (special.has(i)) return;
      expect(r).toMatchObject({ code: status.OK, created: true, job: { id: `batch-${i}` } });
    });
    const got = await call<unknown, GetJobResponse>(follower, 'getJob', { jobId: 'batch-1099', consistency: 0, upcomingFires: 0 });
    expect(got.job).toEqual(res.results[1099]!.job);
    expect((await callError(follower, 'getJob', { jobId: 'batch-1051', consistency: 0, upcomingFires: 0 })).code).toBe(status.NOT_FOUND);

    // A client retry of the whole call (its answer was lost) creates nothing twice.
    const again = await call<unknown, CreateJobsResponse>(follower, 'createJobs', { items }, 60_000);
    res.results.forEach((r, i) => {
      if (r.code !== status.OK) return;
      const a = again.results[i]!;
      if (items[i]!.idempotencyKey === '') expect(a.code).toBe(status.ALREADY_EXISTS);
      else expect(a).toMatchObject({ code: status.OK, created: false, job: { id: r.job!.id } });
    });
  });

  it('spreads large payloads over several entries', async () => {
    // 48 × 150 KiB ≈ 7 MiB: several putJobs entries (1 MiB of specs each), all applied. Sent to a
    // follower, so the forwarded call to the leader is past grpc-js's 4 MiB default too.
    const items = Array.from({ length: 48 }, (_, i) => ({ jobId: `big-${i}`, spec: spec({ payload: Buffer.alloc(150 * 1024, i) }), idempotencyKey: '' }));
    const res = await call<unknown, CreateJobsResponse>(follower, 'createJobs', { items }, 60_000);
    expect(res.results.map((r) => r.code)).toEqual(items.map(() => status.OK));
    const got = await call<unknown, GetJobResponse>(follower, 'getJob', { jobId: 'big-47', consistency: 0, upcomingFires: 0 });
    expect(got.job?.spec?.payload).toEqual(Buffer.alloc(150 * 1024, 47));
  });
});
