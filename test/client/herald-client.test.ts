import { afterEach, describe, expect, it } from 'vitest';
import { status } from '@grpc/grpc-js';
import { HeraldClient, type HeraldClientOptions } from '../../src/client/herald-client.js';
import { DEFAULT_RETRY } from '../../src/client/retry-policy.js';
import { every, jobSpec } from '../../src/client/job-spec-builders.js';
import {
  AlreadyExistsError,
  CancelledError,
  DeadlineExceededError,
  FailedPreconditionError,
  HeraldClientError,
  InvalidArgumentError,
  NotFoundError,
  UnavailableError,
} from '../../src/client/errors.js';
import { JobSpec, JobState } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { ReadConsistency } from '../../src/gen/herald/v1/job_service.js';
import { FakeCluster } from './fakes/fake-cluster.js';
import { waitFor } from './fakes/grpc-test-server.js';

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

async function rejection(p: Promise<unknown>): Promise<HeraldClientError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(HeraldClientError);
    return e as HeraldClientError;
  }
  throw new Error('expected the call to fail');
}

afterEach(async () => {
  for (const c of clients) c.close();
  clients = [];
  await cluster?.stop();
  cluster = undefined;
});

describe('HeraldClient: leader discovery and redirects', () => {
  it('discovers the leader with GetStatus and sends calls straight to it', async () => {
    cluster = await FakeCluster.start(3, 1);
    // Generous: on a loaded machine first connections can be slow, and a discovery that times
    // out falls back (correctly) to trying endpoints in turn, which this test is not about.
    const c = client({ discoveryTimeoutMs: 5_000 });
    const { job, created } = await c.createJob(spec, { id: 'j1' });
    expect(created).toBe(true);
    expect(job.id).toBe('j1');
    expect(c.leaderAddress).toBe(cluster.nodes[1]!.address);
    expect(cluster.nodes[1]!.callsOf('createJob')).toHaveLength(1);
    expect(cluster.nodes[0]!.callsOf('createJob')).toHaveLength(0);
    expect(cluster.nodes[2]!.callsOf('createJob')).toHaveLength(0);
  });

  it('follows the herald-leader-address trailer when discovery cannot help', async () => {
    cluster = await FakeCluster.start(3, 2);
    const follower = cluster.nodes[0]!;
    follower.inject('getStatus', { code: status.UNAVAILABLE, times: 100 });
    const c = client({ endpoints: [follower.address] });
    const { job } = await c.createJob(spec, { id: 'j1' });
    expect(job.id).toBe('j1');
    expect(follower.callsOf('createJob')).toHaveLength(1);
    expect(cluster.nodes[2]!.callsOf('createJob')).toHaveLength(1);
    expect(c.leaderAddress).toBe(cluster.nodes[2]!.address);
    // The next call goes to the leader directly.
    await c.getJob('j1');
    expect(follower.callsOf('getJob')).toHaveLength(0);
    expect(cluster.nodes[2]!.callsOf('getJob')).toHaveLength(1);
  });

  it('follows a leader change: the old leader redirects to the new one', async () => {
    cluster = await FakeCluster.start(3, 0);
    const c = client();
    await c.createJob(spec, { id: 'a' });
    cluster.setLeader(2);
    await c.pauseJob('a', 'maintenance');
    expect(cluster.nodes[0]!.callsOf('pauseJob')).toHaveLength(1); // answered with a redirect
    expect(cluster.nodes[2]!.callsOf('pauseJob')).toHaveLength(1);
    expect(cluster.store.jobs.get('a')!.state).toBe(JobState.JOB_STATE_PAUSED);
    expect(c.leaderAddress).toBe(cluster.nodes[2]!.address);
  });

  it('keeps trying through an election until a leader appears', async () => {
    const fake = (cluster = await FakeCluster.start(3, null));
    const c = client({ retry: { maxAttempts: 200, initialBackoffMs: 5, maxBackoffMs: 20 } });
    const pending = c.createJob(spec, { id: 'x' });
    await waitFor(() => fake.callCount('createJob') >= 3, 'retries while there is no leader');
    fake.setLeader(1);
    const { created } = await pending;
    expect(created).toBe(true);
    expect(fake.store.jobs.size).toBe(1);
    expect(fake.nodes[1]!.callsOf('createJob').length).toBeGreaterThan(0);
  });

  it('with the default retry options, a keyed create rides out a 3 s election', async () => {
    const fake = (cluster = await FakeCluster.start(3, null));
    const c = client({ retry: DEFAULT_RETRY, defaultDeadlineMs: 15_000 });
    const t0 = Date.now();
    const pending = c.createJob(spec, { id: 'y', idempotencyKey: 'k-y' });
    await new Promise((r) => setTimeout(r, 3_000));
    fake.setLeader(2);
    const { created } = await pending;
    expect(created).toBe(true);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(3_000);
    expect(fake.store.jobs.size).toBe(1);
  });

  it('gives up with UnavailableError (NO_LEADER) after maxAttempts', async () => {
    cluster = await FakeCluster.start(3, null);
    const c = client({ retry: { maxAttempts: 4, initialBackoffMs: 1, maxBackoffMs: 5 } });
    const err = await rejection(c.createJob(spec));
    expect(err).toBeInstanceOf(UnavailableError);
    expect(err.heraldCode).toBe('NO_LEADER');
    expect(cluster.callCount('createJob')).toBe(4);
  });
});

describe('HeraldClient: retries', () => {
  it('retries an ambiguous create with the same idempotency key and creates one job', async () => {
    cluster = await FakeCluster.start(3, 0);
    const leader = cluster.nodes[0]!;
    leader.inject('createJob', { code: status.UNAVAILABLE, heraldCode: 'OUTCOME_UNKNOWN', afterApply: true, times: 2 });
    const c = client();
    const { job, created } = await c.createJob(spec);
    const calls = cluster.nodes.flatMap((n) => n.callsOf('createJob'));
    expect(calls).toHaveLength(3);
    const keys = new Set(calls.map((r) => (r.request as { idempotencyKey: string }).idempotencyKey));
    expect(keys.size).toBe(1);
    const [key] = [...keys];
    expect(key).toMatch(/^[0-9a-f-]{36}$/);
    expect(cluster.store.keyUses.get(key!)).toBe(3);
    expect(cluster.store.jobs.size).toBe(1);
    expect(created).toBe(false); // answered from the first, applied call
    expect(cluster.store.jobs.get(job.id)).toBeDefined();
  });

  it('uses the caller’s idempotency key, and each createJob call gets its own generated key', async () => {
    cluster = await FakeCluster.start(1, 0);
    const c = client();
    const first = await c.createJob(spec, { idempotencyKey: 'k-1' });
    const again = await c.createJob(spec, { idempotencyKey: 'k-1' });
    expect(again.created).toBe(false);
    expect(again.job.id).toBe(first.job.id);
    await c.createJob(spec);
    await c.createJob(spec);
    expect(cluster.store.jobs.size).toBe(3);
  });

  it('does not retry a non-idempotent write whose outcome is unknown', async () => {
    cluster = await FakeCluster.start(1, 0);
    const c = client();
    await c.createJob(spec, { id: 'p' });
    cluster.nodes[0]!.inject('pauseJob', { code: status.UNAVAILABLE, heraldCode: 'OUTCOME_UNKNOWN', afterApply: true });
    const err = await rejection(c.pauseJob('p'));
    expect(err).toBeInstanceOf(UnavailableError);
    expect(err.heraldCode).toBe('OUTCOME_UNKNOWN');
    expect(cluster.callCount('pauseJob')).toBe(1);
  });

  it('retries a non-idempotent write when the server says it was not applied', async () => {
    cluster = await FakeCluster.start(1, 0);
    const c = client();
    await c.createJob(spec, { id: 'p' });
    cluster.nodes[0]!.inject('pauseJob', { code: status.UNAVAILABLE, heraldCode: 'NOT_READY', times: 2 });
    const job = await c.pauseJob('p', 'why');
    expect(job.pauseNote).toBe('why');
    expect(cluster.callCount('pauseJob')).toBe(3);
  });

  it('retries DEADLINE_EXCEEDED for reads and keyed writes, not for plain writes', async () => {
    cluster = await FakeCluster.start(1, 0);
    const node = cluster.nodes[0]!;
    const c = client();
    await c.createJob(spec, { id: 'd' });
    node.inject('getJob', { code: status.DEADLINE_EXCEEDED, heraldCode: 'PROPOSAL_TIMEOUT' });
    expect((await c.getJob('d')).id).toBe('d');
    expect(node.callsOf('getJob')).toHaveLength(2);

    node.inject('triggerJob', { code: status.DEADLINE_EXCEEDED, heraldCode: 'PROPOSAL_TIMEOUT', afterApply: true });
    const run = await c.triggerJob('d');
    expect(run.manual).toBe(true);
    expect(cluster.store.runs.size).toBe(1); // the retry returned the first run

    node.inject('resumeJob', { code: status.DEADLINE_EXCEEDED, heraldCode: 'PROPOSAL_TIMEOUT' });
    const err = await rejection(c.resumeJob('d'));
    expect(err).toBeInstanceOf(DeadlineExceededError);
    expect(node.callsOf('resumeJob')).toHaveLength(1);
  });

  it('honours the per-call deadline against a node that never answers in time', async () => {
    cluster = await FakeCluster.start(1, 0);
    const node = cluster.nodes[0]!;
    const c = client();
    await c.createJob(spec, { id: 'slow' });
    node.inject('getJob', { code: status.OK, delayMs: 10_000, times: 10 });
    const started = Date.now();
    const err = await rejection(c.getJob('slow', { deadlineMs: 200 }));
    expect(err).toBeInstanceOf(DeadlineExceededError);
    // It failed on its own deadline, not when the server finally answered.
    expect(Date.now() - started).toBeLessThan(8_000);
  });

  it('a per-attempt timeout moves past a hung attempt within the call deadline', async () => {
    cluster = await FakeCluster.start(1, 0);
    const node = cluster.nodes[0]!;
    const c = client({ retry: { maxAttempts: 5, initialBackoffMs: 5, maxBackoffMs: 20, perAttemptTimeoutMs: 300 } });
    await c.createJob(spec, { id: 'h' });
    node.inject('getJob', { code: status.OK, delayMs: 10_000 });
    expect((await c.getJob('h', { deadlineMs: 5_000 })).id).toBe('h');
    expect(node.callsOf('getJob').length).toBeGreaterThanOrEqual(2);
  });

  it('an aborted signal cancels the call and its retries', async () => {
    cluster = await FakeCluster.start(1, 0);
    const node = cluster.nodes[0]!;
    const c = client();
    await c.createJob(spec, { id: 's' });
    node.inject('getJob', { code: status.OK, delayMs: 10_000 });
    const ac = new AbortController();
    const pending = rejection(c.getJob('s', { signal: ac.signal }));
    await waitFor(() => node.callsOf('getJob').length === 1, 'the call to reach the server');
    ac.abort();
    const err = await pending;
    expect(err).toBeInstanceOf(CancelledError);
    expect(node.callsOf('getJob')).toHaveLength(1);
  });
});

describe('HeraldClient: typed errors', () => {
  it('maps statuses and Herald codes to error classes, without retrying them', async () => {
    cluster = await FakeCluster.start(1, 0);
    const c = client();
    const nf = await rejection(c.getJob('missing'));
    expect(nf).toBeInstanceOf(NotFoundError);
    expect(nf.code).toBe('NOT_FOUND');
    expect(nf.grpcCode).toBe(status.NOT_FOUND);
    expect(nf.heraldCode).toBe('JOB_NOT_FOUND');
    expect(nf.message).toBe('job missing not found');
    expect(cluster.callCount('getJob')).toBe(1);

    await c.createJob(spec, { id: 'dup' });
    const ae = await rejection(c.createJob(spec, { id: 'dup' }));
    expect(ae).toBeInstanceOf(AlreadyExistsError);

    const fp = await rejection(c.updateJob('dup', spec, { expectedVersion: 7 }));
    expect(fp).toBeInstanceOf(FailedPreconditionError);
    expect(fp.heraldCode).toBe('VERSION_MISMATCH');
    expect(fp.message).toMatch(/expected 7, job is at 1/);

    const ia = await rejection(c.createJob(JobSpec.fromPartial({ schedule: every('1m').schedule })));
    expect(ia).toBeInstanceOf(InvalidArgumentError);
    expect(ia.heraldCode).toBe('INVALID_SPEC');
  });

  it('reports a per-item error from createJobs', async () => {
    cluster = await FakeCluster.start(1, 0);
    const c = client();
    const results = await c.createJobs([
      { spec, id: 'one' },
      { spec: JobSpec.fromPartial({}), id: 'two' },
      { spec: { taskType: 'x', schedule: every('1h') }, id: 'three' },
    ]);
    expect(results.map((r) => r.job?.id)).toEqual(['one', undefined, 'three']);
    expect(results[1]!.error).toBeInstanceOf(InvalidArgumentError);
    expect(results[0]!.error).toBeUndefined();
  });
});

describe('HeraldClient: concurrent creates share CreateJobs calls', () => {
  it('creates made together go out as one CreateJobs, each with its own key; a duplicate id fails exactly as a plain call', async () => {
    cluster = await FakeCluster.start(3, 0);
    const c = client();
    await c.createJob(spec, { id: 'taken' }); // alone in its turn: a plain CreateJob
    expect(cluster.callCount('createJob')).toBe(1);
    const made = await Promise.allSettled([...Array.from({ length: 20 }, () => c.createJob(spec)), c.createJob(spec, { id: 'taken' })]);
    expect(cluster.callCount('createJobs')).toBe(1);
    const batch = cluster.nodes[0]!.callsOf('createJobs')[0]!.request as { items: { idempotencyKey: string }[] };
    expect(new Set(batch.items.map((i) => i.idempotencyKey)).size).toBe(21);
    expect(made.slice(0, 20).every((r) => r.status === 'fulfilled' && r.value.created)).toBe(true);
    const dup = made[20]!;
    expect(dup.status).toBe('rejected');
    const err = (dup as PromiseRejectedResult).reason as HeraldClientError;
    expect(err).toBeInstanceOf(AlreadyExistsError);
    expect(err.heraldCode).toBe('ALREADY_EXISTS'); // from the plain call it was sent again as
    expect(cluster.callCount('createJob')).toBe(2);
    expect(cluster.store.jobs.size).toBe(21);
  });

  it('with batchCreates: false every create is its own CreateJob', async () => {
    cluster = await FakeCluster.start(1, 0);
    const c = client({ batchCreates: false });
    await Promise.all(Array.from({ length: 5 }, () => c.createJob(spec)));
    expect(cluster.callCount('createJob')).toBe(5);
    expect(cluster.callCount('createJobs')).toBe(0);
  });
});

describe('HeraldClient: every RPC', () => {
  it('lists across pages with the async iterators', async () => {
    cluster = await FakeCluster.start(1, 0);
    const c = client();
    for (const id of ['e', 'a', 'd', 'b', 'c']) await c.createJob({ taskType: 't', schedule: every('1h'), labels: { k: id === 'a' ? 'x' : 'y' } }, { id });
    const pages = [];
    for await (const p of c.listJobPages({ pageSize: 2 })) pages.push(p.items.map((j) => j.id));
    expect(pages).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
    const all = [];
    for await (const j of c.iterateJobs({ pageSize: 2, labels: { k: 'y' } })) all.push(j.id);
    expect(all).toEqual(['b', 'c', 'd', 'e']);
    await c.pauseJob('c');
    expect((await c.listJobs({ state: 'paused' })).items.map((j) => j.id)).toEqual(['c']);
  });

  it('covers update, pause, resume, trigger, backfill, runs, cancel, delete, status and transfer', async () => {
    cluster = await FakeCluster.start(3, 0);
    const c = client();
    const { job } = await c.createJob(spec, { id: 'r' });
    const updated = await c.updateJob('r', jobSpec({ taskType: 'report', schedule: every('1m') }), { expectedVersion: job.version });
    expect(updated.version).toBe(2);
    expect((await c.pauseJob('r', 'n')).state).toBe(JobState.JOB_STATE_PAUSED);
    expect((await c.resumeJob('r')).state).toBe(JobState.JOB_STATE_ACTIVE);
    const manual = await c.triggerJob('r', { idempotencyKey: 'once' });
    expect((await c.triggerJob('r', { idempotencyKey: 'once' })).id).toBe(manual.id);
    const ids = await c.backfillJob('r', { from: 0, to: new Date(180_000) });
    expect(ids).toHaveLength(3);
    const runs = [];
    for await (const r of c.iterateRuns({ jobId: 'r', pageSize: 2 })) runs.push(r.id);
    expect(runs.sort()).toEqual([manual.id, ...ids].sort());
    expect((await c.getRun(ids[0]!, { consistency: 'stale' })).backfilled).toBe(true);
    expect(cluster.nodes[0]!.callsOf('getRun')[0]!.request).toEqual({ runId: ids[0], consistency: ReadConsistency.READ_CONSISTENCY_STALE });
    await expect(c.listRuns({ state: 'bogus' as never })).rejects.toThrow(/state: unknown value "bogus"/);
    expect((await c.cancelRun(ids[1]!, 'no')).state).toBe(RunState.RUN_STATE_CANCELLED);
    expect(await rejection(c.getRun('nope'))).toBeInstanceOf(NotFoundError);
    expect(await c.deleteJob('r')).toEqual({ cancelledRuns: 0 });

    const st = await c.status();
    expect(st.leaderId).toBe('n1');
    const st3 = await c.status({ address: cluster.nodes[2]!.address });
    expect(st3.nodeId).toBe('n3');
    const moved = await c.transferLeadership('n2');
    expect(moved).toEqual({ leaderId: 'n2', leaderAddress: cluster.nodes[1]!.address });
    expect(c.leaderAddress).toBe(cluster.nodes[1]!.address);
    await c.createJob(spec, { id: 'after' });
    expect(cluster.nodes[1]!.callsOf('createJob')).toHaveLength(1);
  });
});
