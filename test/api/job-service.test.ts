import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobSpec, JobState } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import type {
  CreateJobResponse,
  CreateJobsResponse,
  GetJobResponse,
  ListJobsResponse,
  ListRunsResponse,
  TriggerJobResponse,
  UpdateJobResponse,
} from '../../src/gen/herald/v1/job_service.js';
import { startApiCluster, type ApiCluster } from './helpers/api-cluster.js';
import { call, callError } from './helpers/call.js';

function spec(over: Partial<JobSpec> = {}): JobSpec {
  return JobSpec.fromPartial({
    taskType: 'email',
    payload: Buffer.from('{}'),
    schedule: { kind: { $case: 'cron', cron: { expression: '0 2 * * *', timeZone: 'Europe/Berlin' } } },
    ...over,
  });
}

describe('JobService on a 3-node cluster', () => {
  let cluster: ApiCluster;
  let followerClient: object;
  let leaderClient: object;

  beforeAll(async () => {
    cluster = await startApiCluster(3);
    const leader = await cluster.leader();
    const li = cluster.nodes.indexOf(leader);
    leaderClient = cluster.clients[li]!;
    followerClient = cluster.clients[(li + 1) % 3]!;
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('creates a job through a follower and reads it back linearizably from every node', async () => {
    const created = await call<unknown, CreateJobResponse>(followerClient, 'createJob', { jobId: 'nightly-report', spec: spec(), idempotencyKey: '' });
    expect(created.created).toBe(true);
    expect(created.job?.id).toBe('nightly-report');
    expect(created.job?.state).toBe(JobState.JOB_STATE_ACTIVE);
    expect(created.job?.version).toBeGreaterThan(0);
    expect(created.job?.nextFireUnixMs).toBeGreaterThan(created.job!.createdUnixMs);
    for (const c of cluster.clients) {
      const got = await call<unknown, GetJobResponse>(c, 'getJob', { jobId: 'nightly-report', consistency: 0, upcomingFires: 0 });
      expect(got.job).toEqual(created.job);
    }
  });

  it('answers a retried create with the same idempotency key with the first job', async () => {
    const req = { jobId: '', spec: spec({ taskType: 'billing' }), idempotencyKey: 'client-retry-1' };
    const first = await call<unknown, CreateJobResponse>(followerClient, 'createJob', req);
    const second = await call<unknown, CreateJobResponse>(leaderClient, 'createJob', req);
    expect(first.created).toBe(true);
    expect(second.created).toBe(false);
    expect(second.job?.id).toBe(first.job?.id);
  });

  it('rejects an update with a stale version and applies one with the current version', async () => {
    const { job } = await call<unknown, CreateJobResponse>(leaderClient, 'createJob', { jobId: 'versioned', spec: spec(), idempotencyKey: '' });
    const stale = await callError(followerClient, 'updateJob', { jobId: 'versioned', spec: spec({ priority: 5 }), expectedVersion: job!.version + 7 });
    expect(stale.code).toBe(status.FAILED_PRECONDITION);
    expect(stale.details).toMatch(/version/);
    const ok = await call<unknown, UpdateJobResponse>(followerClient, 'updateJob', { jobId: 'versioned', spec: spec({ priority: 5 }), expectedVersion: job!.version });
    expect(ok.job?.spec?.priority).toBe(5);
    expect(ok.job!.version).toBeGreaterThan(job!.version);
  });

  it.each([
    ['a bad cron expression', { jobId: 'x1', spec: spec({ schedule: { kind: { $case: 'cron', cron: { expression: '61 * * * *', timeZone: '' } } } }) }, /cron/i],
    ['an unknown time zone', { jobId: 'x2', spec: spec({ schedule: { kind: { $case: 'cron', cron: { expression: '0 * * * *', timeZone: 'Mars/Olympus' } } } }) }, /Mars\/Olympus/],
    ['an oversize payload', { jobId: 'x3', spec: spec({ payload: Buffer.alloc(256 * 1024 + 1) }) }, /payload/],
    ['a bad id', { jobId: 'bad id/with spaces', spec: spec() }, /job_id/],
    ['a missing spec', { jobId: 'x4', spec: undefined }, /spec/],
    ['a missing task type', { jobId: 'x5', spec: spec({ taskType: '' }) }, /task_type/],
    ['a missing schedule', { jobId: 'x6', spec: spec({ schedule: undefined }) }, /schedule/],
  ])('answers INVALID_ARGUMENT for %s and stays healthy', async (_what, req, message) => {
    const err = await callError(followerClient, 'createJob', { idempotencyKey: '', ...req });
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.details).toMatch(message);
    expect(err.metadata.get('herald-error-code')[0]).toBeTruthy();
    const after = await call<unknown, GetJobResponse>(followerClient, 'getJob', { jobId: 'nightly-report', consistency: 0, upcomingFires: 0 });
    expect(after.job?.id).toBe('nightly-report');
  });

  it('answers NOT_FOUND for missing jobs and runs, ALREADY_EXISTS for a taken id', async () => {
    expect((await callError(followerClient, 'getJob', { jobId: 'nope', consistency: 0, upcomingFires: 0 })).code).toBe(status.NOT_FOUND);
    expect((await callError(followerClient, 'getRun', { runId: 'nope@1', consistency: 0 })).code).toBe(status.NOT_FOUND);
    expect((await callError(followerClient, 'pauseJob', { jobId: 'nope', note: '' })).code).toBe(status.NOT_FOUND);
    const dup = await callError(followerClient, 'createJob', { jobId: 'nightly-report', spec: spec(), idempotencyKey: '' });
    expect(dup.code).toBe(status.ALREADY_EXISTS);
    expect((await callError(followerClient, 'getRun', { runId: 'not a run id', consistency: 0 })).code).toBe(status.INVALID_ARGUMENT);
  });

  it('pauses and resumes, triggers a manual run, cancels it, and lists it', async () => {
    await call(leaderClient, 'createJob', { jobId: 'ops', spec: spec(), idempotencyKey: '' });
    const paused = await call<unknown, UpdateJobResponse>(followerClient, 'pauseJob', { jobId: 'ops', note: 'maintenance window' });
    expect(paused.job?.state).toBe(JobState.JOB_STATE_PAUSED);
    expect(paused.job?.pauseNote).toBe('maintenance window');
    const resumed = await call<unknown, UpdateJobResponse>(followerClient, 'resumeJob', { jobId: 'ops' });
    expect(resumed.job?.state).toBe(JobState.JOB_STATE_ACTIVE);

    const trig = await call<unknown, TriggerJobResponse>(followerClient, 'triggerJob', { jobId: 'ops', idempotencyKey: 'trigger-1' });
    expect(trig.run?.manual).toBe(true);
    expect(trig.run?.state).toBe(RunState.RUN_STATE_PENDING);
    const again = await call<unknown, TriggerJobResponse>(followerClient, 'triggerJob', { jobId: 'ops', idempotencyKey: 'trigger-1' });
    expect(again.run?.id).toBe(trig.run?.id);

    const cancelled = await call<unknown, { run: { state: RunState; reason: string } }>(followerClient, 'cancelRun', { runId: trig.run!.id, reason: 'not needed' });
    expect(cancelled.run.state).toBe(RunState.RUN_STATE_CANCELLED);
    const runs = await call<unknown, ListRunsResponse>(followerClient, 'listRuns', { jobId: 'ops', state: 0, pageSize: 0, pageToken: '', consistency: 0 });
    expect(runs.runs.map((r) => r.id)).toEqual([trig.run!.id]);
  });

  it('backfills a past range and refuses a range reaching into the future', async () => {
    const now = Date.now();
    await call(leaderClient, 'createJob', {
      jobId: 'hourly',
      spec: spec({ schedule: { kind: { $case: 'every', every: { intervalMs: 3_600_000, anchorUnixMs: 0 } } }, startUnixMs: now - 10 * 3_600_000 }),
      idempotencyKey: '',
    });
    const bf = await call<unknown, { runIds: string[] }>(followerClient, 'backfillJob', { jobId: 'hourly', fromUnixMs: now - 5 * 3_600_000, toUnixMs: now - 2 * 3_600_000, maxRuns: 0 });
    expect(bf.runIds).toHaveLength(3);
    const future = await callError(followerClient, 'backfillJob', { jobId: 'hourly', fromUnixMs: now - 3_600_000, toUnixMs: now + 3_600_000, maxRuns: 0 });
    expect(future.code).toBe(status.INVALID_ARGUMENT);
  });

  it('creates a batch with one result per item, bad items failing alone', async () => {
    const res = await call<unknown, CreateJobsResponse>(followerClient, 'createJobs', {
      items: [
        { jobId: 'bulk-1', spec: spec(), idempotencyKey: '' },
        { jobId: 'bulk-2', spec: spec({ schedule: { kind: { $case: 'cron', cron: { expression: 'nope', timeZone: '' } } } }), idempotencyKey: '' },
        { jobId: 'bulk-3', spec: spec(), idempotencyKey: '' },
        { jobId: 'bulk-1', spec: spec(), idempotencyKey: '' },
      ],
    });
    expect(res.results.map((r) => r.code)).toEqual([status.OK, status.INVALID_ARGUMENT, status.OK, status.ALREADY_EXISTS]);
    expect(res.results[0]!.job?.id).toBe('bulk-1');
    expect(res.results[1]!.message).toMatch(/cron/i);
  });

  it('pages through jobs with filters', async () => {
    const seen: string[] = [];
    let token = '';
    do {
      const page = await call<unknown, ListJobsResponse>(followerClient, 'listJobs', { pageSize: 2, pageToken: token, state: 0, labelSelector: {}, taskType: 'email', consistency: 0, idPrefix: '' });
      expect(page.jobs.length).toBeLessThanOrEqual(2);
      seen.push(...page.jobs.map((j) => j.id));
      token = page.nextPageToken;
    } while (token);
    expect(seen).toEqual([...seen].sort());
    expect(seen).toEqual(expect.arrayContaining(['bulk-1', 'bulk-3', 'nightly-report', 'ops', 'versioned']));
    expect(seen).not.toContain(expect.stringMatching(/^job-/)); // billing jobs are another task type
    const bad = await callError(followerClient, 'listJobs', { pageSize: 2, pageToken: 'garbage!', state: 0, labelSelector: {}, taskType: '', consistency: 0, idPrefix: '' });
    expect(bad.code).toBe(status.INVALID_ARGUMENT);
    const bulk = await call<unknown, ListJobsResponse>(followerClient, 'listJobs', { pageSize: 100, pageToken: '', state: 0, labelSelector: {}, taskType: '', consistency: 0, idPrefix: 'bulk-' });
    expect(bulk.jobs.map((j) => j.id)).toEqual(expect.arrayContaining(['bulk-1', 'bulk-3']));
    expect(bulk.jobs.every((j) => j.id.startsWith('bulk-'))).toBe(true);
    const badPrefix = await callError(followerClient, 'listJobs', { pageSize: 2, pageToken: '', state: 0, labelSelector: {}, taskType: '', consistency: 0, idPrefix: 'no spaces' });
    expect(badPrefix.code).toBe(status.INVALID_ARGUMENT);
    expect(badPrefix.details).toMatch(/^id_prefix: "no spaces" cannot start an id/);
  });

  it('deletes a job: afterwards it is gone on every node', async () => {
    await call(followerClient, 'deleteJob', { jobId: 'ops', expectedVersion: 0 });
    for (const c of cluster.clients) expect((await callError(c, 'getJob', { jobId: 'ops', consistency: 0, upcomingFires: 0 })).code).toBe(status.NOT_FOUND);
  });
});
