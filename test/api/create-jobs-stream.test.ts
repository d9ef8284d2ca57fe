// JobService.CreateJobsStream on real nodes: batches on one stream answered by id with CreateJobs'
// per-item results, a batch refused as a whole without ending the stream, each batch's own
// deadline, a follower forwarding every batch to the leader and naming it, more batches in flight
// than a stream works on at once (the sender is held back, nothing is dropped), and the stream
// ending OK once it has answered all its caller sent. With auth: each batch spends the principal's
// rate limit, and a revoked token's batches are refused within about a second.
import { Metadata, status, type ClientDuplexStream } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { JobServiceClient, type CreateJobRequest, type CreateJobsStreamRequest, type CreateJobsStreamResponse } from '../../src/gen/herald/v1/job_service.js';
import { MAX_BATCHES_IN_FLIGHT } from '../../src/server/api/create-jobs-stream.js';
import { newTokenSecret } from '../../src/server/auth/token-secret.js';
import { startInProcessCluster, type InProcessCluster } from '../dispatch/helpers/in-process-cluster.js';
import { waitFor } from '../raft-runtime/helpers/cluster.js';
import { startApiCluster, type ApiCluster } from './helpers/api-cluster.js';

function spec(over: Partial<JobSpec> = {}): JobSpec {
  return JobSpec.fromPartial({ taskType: 'email', schedule: { kind: { $case: 'every', every: { intervalMs: 60_000, anchorUnixMs: 0 } } }, ...over });
}
const item = (id: string, over: Partial<CreateJobRequest> = {}): CreateJobRequest => ({ jobId: id, spec: spec(), idempotencyKey: `key-${id}`, ...over });

/** A CreateJobsStream that collects answers by batch id and the way it ended. */
class TestStream {
  readonly answers = new Map<number, CreateJobsStreamResponse>();
  ended: { code: number; details: string } | undefined;
  private readonly call: ClientDuplexStream<CreateJobsStreamRequest, CreateJobsStreamResponse>;

  constructor(client: JobServiceClient, md = new Metadata()) {
    this.call = client.createJobsStream(md);
    this.call.on('data', (r: CreateJobsStreamResponse) => this.answers.set(r.batchId, r));
    this.call.on('error', (e: { code: number; details: string }) => (this.ended ??= { code: e.code, details: e.details }));
    this.call.on('status', (s: { code: number; details: string }) => (this.ended ??= { code: s.code, details: s.details }));
  }

  send(batchId: number, items: CreateJobRequest[], timeoutMs = 20_000): void {
    this.call.write({ batchId, items, timeoutMs });
  }

  answer(batchId: number): Promise<CreateJobsStreamResponse> {
    return waitFor(`answer to batch ${batchId}`, () => this.answers.get(batchId), 20_000, 10);
  }

  end(): void {
    this.call.end();
  }

  cancel(): void {
    this.call.cancel();
  }
}

describe('CreateJobsStream on a 3-node cluster', () => {
  let cluster: ApiCluster;
  let leaderClient: JobServiceClient;
  let followerClient: JobServiceClient;
  let leaderAddress: string;

  beforeAll(async () => {
    cluster = await startApiCluster(3, { electionTicks: 40 });
    const leader = await cluster.leader();
    const i = cluster.nodes.indexOf(leader);
    leaderClient = cluster.clients[i]!;
    followerClient = cluster.clients[(i + 1) % 3]!;
    leaderAddress = await waitFor('the follower knows the leader', () => cluster.nodes[(i + 1) % 3]!.leader().leaderAddress || undefined, 10_000, 20);
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('answers batches by id with per-item results, refuses a bad batch alone, and ends OK after answering all', async () => {
    const s = new TestStream(leaderClient);
    s.send(7, [item('s-1'), item('s-2', { spec: spec({ schedule: { kind: { $case: 'cron', cron: { expression: 'nope', timeZone: '' } } } }) }), item('s-3')]);
    s.send(8, []);
    s.send(9, [item('s-4')]);
    s.send(10, [item('s-5')], 1); // no time left for a proposal: refused, nothing written
    s.end();
    const [a, b, c, d] = await Promise.all([s.answer(7), s.answer(8), s.answer(9), s.answer(10)]);
    expect(a.code).toBe(status.OK);
    expect(a.leaderAddress).toBe('');
    expect(a.results.map((r) => r.code)).toEqual([status.OK, status.INVALID_ARGUMENT, status.OK]);
    expect(a.results[1]!.message).toMatch(/cron/i);
    expect(a.results[0]).toMatchObject({ created: true, job: { id: 's-1' } });
    expect(b).toMatchObject({ code: status.INVALID_ARGUMENT, errorCode: 'INVALID_ARGUMENT', results: [] });
    expect(b.message).toMatch(/items: at least one job/);
    expect(c.results[0]).toMatchObject({ code: status.OK, created: true, job: { id: 's-4' } });
    expect(d).toMatchObject({ code: status.DEADLINE_EXCEEDED, errorCode: 'PROPOSAL_TIMEOUT', results: [] });
    await waitFor('stream ended', () => s.ended, 5_000, 10);
    expect(s.ended!.code).toBe(status.OK);
  });

  it('through a follower: each batch is forwarded to the leader, the answer names it, a resent batch creates nothing twice', async () => {
    const s = new TestStream(followerClient);
    const items = Array.from({ length: 30 }, (_, i) => item(`f-${i}`));
    s.send(1, items);
    const first = await s.answer(1);
    expect(first.leaderAddress).toBe(leaderAddress);
    expect(first.results.every((r) => r.code === status.OK && r.created)).toBe(true);
    s.send(2, items); // its answer was lost, say: same keys
    const again = await s.answer(2);
    again.results.forEach((r, i) => expect(r).toMatchObject({ code: status.OK, created: false, job: { id: `f-${i}` } }));
    s.cancel();
  });

  it(`holds a sender back past ${MAX_BATCHES_IN_FLIGHT} batches in flight and answers every one`, async () => {
    const s = new TestStream(leaderClient);
    const n = 3 * MAX_BATCHES_IN_FLIGHT;
    for (let b = 1; b <= n; b++) s.send(b, [item(`many-${b}-a`), item(`many-${b}-b`)]);
    s.end();
    await waitFor('all answered', () => (s.answers.size === n ? true : undefined), 30_000, 20);
    for (let b = 1; b <= n; b++) expect(s.answers.get(b)!.results.map((r) => r.job?.id)).toEqual([`many-${b}-a`, `many-${b}-b`]);
    await waitFor('stream ended', () => s.ended, 5_000, 10);
    expect(s.ended!.code).toBe(status.OK);
  }, 40_000);

  it('reads nothing more from a caller that does not read its answers, and goes on once it does', async () => {
    const call = leaderClient.createJobsStream();
    const answers: CreateJobsStreamResponse[] = [];
    let ended: number | undefined;
    call.on('data', (r: CreateJobsStreamResponse) => answers.push(r));
    call.on('error', (e: { code: number }) => (ended ??= e.code));
    call.on('status', (st: { code: number }) => (ended ??= st.code));
    call.pause(); // the caller reads none of its answers
    const n = 300;
    const bigItem = (b: number, i: number): CreateJobRequest => item(`bp-${b}-${i}`, { spec: spec({ payload: Buffer.alloc(2048, 7) }) });
    for (let b = 1; b <= n; b++) call.write({ batchId: b, items: Array.from({ length: 10 }, (_, i) => bigItem(b, i)), timeoutMs: 60_000 });
    const getJob = (id: string) =>
      new Promise<number>((resolve) => leaderClient.getJob({ jobId: id, consistency: 1, upcomingFires: 0 }, (err) => resolve(err ? err.code : status.OK)));
    await waitFor('the first batch created', async () => ((await getJob('bp-1-0')) === status.OK ? true : undefined), 10_000, 50);
    // Held back: at most the batches in the works and the answers the stream buffers are read
    // (a few dozen); a server that kept reading would create batch 80 within these 6 s.
    let leaked = false;
    for (const until = Date.now() + 6_000; Date.now() < until && !leaked; await new Promise((r) => setTimeout(r, 250))) {
      leaked = (await getJob(`bp-${5 * MAX_BATCHES_IN_FLIGHT}-9`)) === status.OK;
    }
    expect(leaked).toBe(false);
    call.resume();
    await waitFor('all answered', () => (answers.length === n ? true : undefined), 30_000, 20);
    expect(new Set(answers.map((a) => a.batchId)).size).toBe(n);
    expect(answers.every((a) => a.code === status.OK && a.results.every((r) => r.code === status.OK))).toBe(true);
    expect(await getJob(`bp-${n}-9`)).toBe(status.OK);
    call.end();
    expect(await waitFor('stream ended', () => ended, 5_000, 10)).toBe(status.OK);
  }, 60_000);
});

describe('CreateJobsStream with auth', () => {
  let cluster: InProcessCluster;
  let client: JobServiceClient;
  const bootstrap = newTokenSecret().token;

  const md = (token: string): Metadata => {
    const m = new Metadata();
    m.set('authorization', `Bearer ${token}`);
    return m;
  };

  beforeAll(async () => {
    cluster = await startInProcessCluster(1, { heartbeatIntervalMs: 200 }, { auth: { bootstrapToken: bootstrap, ratePerSecond: 5 } }, bootstrap);
    const leader = await cluster.leader();
    client = new JobServiceClient(`127.0.0.1:${leader.node.clientPort}`, (await import('@grpc/grpc-js')).credentials.createInsecure());
    await waitFor('bootstrap token put', () => cluster.client.listTokens().then(() => true, () => false), 10_000, 100);
  }, 30_000);

  afterAll(async () => {
    client?.close();
    await cluster?.stop();
  });

  it('refuses a viewer token before any batch is read', async () => {
    const { secret } = await cluster.client.createToken('looker', 'viewer', []);
    const s = new TestStream(client, md(secret));
    s.send(1, [item('v-1')]);
    await waitFor('stream ended', () => s.ended, 5_000, 10);
    expect(s.ended!.code).toBe(status.PERMISSION_DENIED);
    expect(s.answers.size).toBe(0);
  });

  it('spends the rate limit per batch (LIMIT_EXCEEDED in the batch answer), then refuses a revoked token’s batches', async () => {
    const { secret } = await cluster.client.createToken('loader', 'operator', []);
    const s = new TestStream(client, md(secret));
    // 5 calls/s with a burst of 10: the stream's own check at open took one; 12 batches at once overrun it.
    for (let b = 1; b <= 12; b++) s.send(b, [item(`r-${b}`)]);
    await waitFor('all answered', () => (s.answers.size === 12 ? true : undefined), 10_000, 10);
    const codes = [...s.answers.values()].map((a) => a.code);
    expect(codes.filter((c) => c === status.OK).length).toBeGreaterThanOrEqual(8);
    const limited = [...s.answers.values()].filter((a) => a.code === status.RESOURCE_EXHAUSTED);
    expect(limited.length).toBeGreaterThan(0);
    expect(limited[0]).toMatchObject({ errorCode: 'LIMIT_EXCEEDED', message: expect.stringMatching(/rate limit/) });

    await cluster.client.revokeToken('loader');
    await new Promise((r) => setTimeout(r, 1_500)); // the token is read again at most once a second; the bucket refills
    s.send(100, [item('after-revoke')]);
    const refused = await s.answer(100);
    expect(refused).toMatchObject({ code: status.UNAUTHENTICATED, errorCode: 'UNAUTHENTICATED', message: expect.stringMatching(/revoked/) });
    await expect(cluster.client.getJob('after-revoke')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    s.cancel();
  }, 20_000);
});
