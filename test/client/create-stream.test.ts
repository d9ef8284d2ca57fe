// createJob over the SDK's CreateJobsStream (create-stream.ts): after discovery every batch — a
// lone create or a burst — is one message on one stream to the leader, with exactly the answers
// and errors of plain calls; a stream that breaks, goes silent, is outlived by a deadline or lands
// on a node that is no longer the leader hands its items back as plain calls with their keys.
import { afterEach, describe, expect, it } from 'vitest';
import { status } from '@grpc/grpc-js';
import { HeraldClient, type HeraldClientOptions } from '../../src/client/herald-client.js';
import { every, jobSpec } from '../../src/client/job-spec-builders.js';
import { AlreadyExistsError, DeadlineExceededError } from '../../src/client/errors.js';
import type { CreateJobsStreamRequest } from '../../src/gen/herald/v1/job_service.js';
import { FakeCluster } from './fakes/fake-cluster.js';

const spec = jobSpec({ taskType: 'report', schedule: every('5m') });

let cluster: FakeCluster | undefined;
let clients: HeraldClient[] = [];

function client(opts: Partial<HeraldClientOptions> = {}): HeraldClient {
  const c = new HeraldClient({
    endpoints: cluster!.addresses,
    defaultDeadlineMs: 5_000,
    retry: { maxAttempts: 5, initialBackoffMs: 5, maxBackoffMs: 20 },
    discoveryTimeoutMs: 500,
    ...opts,
  });
  clients.push(c);
  return c;
}

const batches = (): CreateJobsStreamRequest[] => cluster!.nodes.flatMap((n) => n.callsOf('createJobsStream').map((c) => c.request as CreateJobsStreamRequest));

afterEach(async () => {
  for (const c of clients) c.close();
  clients = [];
  await cluster?.stop();
  cluster = undefined;
});

describe('HeraldClient: creates over CreateJobsStream', () => {
  it('after discovery a lone create and a burst each go as one batch on one stream; errors are exactly a plain call’s', async () => {
    cluster = await FakeCluster.start(3, 0, { streams: true });
    const c = client();
    await c.createJob(spec, { id: 'taken' }); // no leader known yet: a plain call, which discovers it
    expect(cluster.callCount('createJob')).toBe(1);
    expect(cluster.streamsOpened).toEqual([]);

    const lone = await c.createJob(spec, { id: 'lone' });
    expect(lone).toMatchObject({ created: true, job: { id: 'lone' } });
    expect(batches().map((b) => b.items.map((i) => i.jobId))).toEqual([['lone']]);

    const made = await Promise.allSettled([...Array.from({ length: 20 }, () => c.createJob(spec)), c.createJob(spec, { id: 'taken' })]);
    expect(batches()).toHaveLength(2);
    const burst = batches()[1]!;
    expect(burst.items).toHaveLength(21);
    expect(new Set(burst.items.map((i) => i.idempotencyKey)).size).toBe(21);
    expect(burst.timeoutMs).toBeGreaterThan(4_000); // the calls' own deadline travels with the batch
    expect(made.slice(0, 20).every((r) => r.status === 'fulfilled' && r.value.created)).toBe(true);
    const dup = made[20] as PromiseRejectedResult;
    expect(dup.reason).toBeInstanceOf(AlreadyExistsError); // sent again alone, for the plain call's error
    expect(cluster.callCount('createJob')).toBe(2);
    expect(cluster.callCount('createJobs')).toBe(0);
    expect(cluster.streamsOpened).toEqual(['n1']); // one stream for all of it
    expect(cluster.store.jobs.size).toBe(22);
  });

  it('a stream that breaks after applying hands its items back: sent again with their keys, nothing created twice', async () => {
    cluster = await FakeCluster.start(3, 0, { streams: true });
    const c = client();
    await c.createJob(spec); // discovery
    cluster.nodes[0]!.inject('createJobsStream', { code: status.UNAVAILABLE, breakStream: true, afterApply: true });
    const made = await Promise.all(Array.from({ length: 5 }, () => c.createJob(spec)));
    const keys = (batches()[0]!.items ?? []).map((i) => i.idempotencyKey);
    expect(keys).toHaveLength(5);
    for (const k of keys) expect(cluster.store.keyUses.get(k)).toBe(2); // applied by the stream, found by the plain call
    expect(made.map((m) => m.created)).toEqual([false, false, false, false, false]);
    expect(cluster.store.jobs.size).toBe(6);
    // The next create opens a fresh stream.
    await c.createJob(spec);
    expect(cluster.streamsOpened).toEqual(['n1', 'n1']);
  });

  it('follows the leader: an answer naming another leader moves the stream there', async () => {
    cluster = await FakeCluster.start(3, 0, { streams: true });
    const c = client();
    await c.createJob(spec); // discovery
    await c.createJob(spec); // a stream to n1
    cluster.setLeader(1);
    const moved = await c.createJob(spec, { id: 'after-move' }); // n1 answers NOT_LEADER naming n2; sent again alone there
    expect(moved.created).toBe(true);
    expect(c.leaderAddress).toBe(cluster.nodes[1]!.address);
    await c.createJob(spec, { id: 'on-n2' });
    expect(cluster.streamsOpened).toEqual(['n1', 'n2']);
    expect(cluster.nodes[1]!.callsOf('createJobsStream').map((b) => (b.request as CreateJobsStreamRequest).items[0]!.jobId)).toEqual(['on-n2']);
  });

  it('gives up a silent stream after the first-byte bound and sends its items as plain calls', async () => {
    cluster = await FakeCluster.start(3, 0, { streams: true });
    const c = client({ firstByteTimeoutMs: 300 });
    await c.createJob(spec); // discovery
    cluster.nodes[0]!.inject('createJobsStream', { code: status.OK, delayMs: 3_000 });
    const t0 = Date.now();
    const r = await c.createJob(spec, { id: 'quiet' });
    expect(r.created).toBe(true);
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(cluster.callCount('createJob')).toBe(2);
    expect(cluster.store.jobs.has('quiet')).toBe(true);
  });

  it('past its deadline a batch fails DEADLINE_EXCEEDED and is not sent again', async () => {
    cluster = await FakeCluster.start(1, 0, { streams: true });
    const c = client({ firstByteTimeoutMs: 10_000 });
    await c.createJob(spec); // discovery
    cluster.nodes[0]!.inject('createJobsStream', { code: status.OK, delayMs: 2_000 });
    await expect(c.createJob(spec, { deadlineMs: 300 })).rejects.toBeInstanceOf(DeadlineExceededError);
    expect(cluster.callCount('createJob')).toBe(1);
  });

  it('a deadline longer than a timer holds leaves the bound to the server instead of failing at once', async () => {
    cluster = await FakeCluster.start(1, 0, { streams: true });
    const c = client();
    await c.createJob(spec); // discovery
    const r = await c.createJob(spec, { id: 'far', deadlineMs: 2 ** 40 });
    expect(r.created).toBe(true);
    expect(batches().map((b) => b.timeoutMs)).toEqual([0]);
    expect(cluster.callCount('createJob')).toBe(1);
  });

  it('against a cluster without the stream (an older build): plain calls, as before', async () => {
    cluster = await FakeCluster.start(3, 0, { streams: false });
    const c = client();
    await c.createJob(spec); // discovery
    const lone = await c.createJob(spec, { id: 'lone' });
    expect(lone.created).toBe(true);
    await Promise.all(Array.from({ length: 10 }, () => c.createJob(spec)));
    expect(cluster.callCount('createJob')).toBe(2);
    expect(cluster.callCount('createJobs')).toBe(1);
    expect(cluster.store.jobs.size).toBe(12);
  });

  it('with streamCreates: false batches go as CreateJobs calls', async () => {
    cluster = await FakeCluster.start(1, 0, { streams: true });
    const c = client({ streamCreates: false });
    await c.createJob(spec);
    await Promise.all(Array.from({ length: 4 }, () => c.createJob(spec)));
    expect(cluster.callCount('createJobs')).toBe(1);
    expect(cluster.streamsOpened).toEqual([]);
  });
});
