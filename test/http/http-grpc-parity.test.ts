// The same bad requests through the gRPC port and the HTTP port of one node: the same gRPC code,
// the same Herald error code and the same message; the HTTP status is the one for that code.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, status, type ServiceError } from '@grpc/grpc-js';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateJobRequest, GetJobRequest, JobServiceClient, RetryRunRequest, TriggerJobRequest, UpdateJobRequest } from '../../src/gen/herald/v1/job_service.js';
import { ClusterServiceClient, TransferLeadershipRequest } from '../../src/gen/herald/v1/cluster_service.js';
import { GetTaskTypeRequest, TaskTypeServiceClient } from '../../src/gen/herald/v1/task_type_service.js';
import { WatchRunsRequest, WatchServiceClient } from '../../src/gen/herald/v1/watch_service.js';
import { ERROR_CODE_KEY } from '../../src/server/grpc/grpc-status-map.js';
import { httpStatusOf } from '../../src/server/http/http-status.js';
import { createSchedulerNode, type SchedulerNode } from '../../src/server/scheduler-node.js';
import { Worker } from '../../src/client/index.js';
import { call, callError } from '../api/helpers/call.js';
import { freePort } from '../api/helpers/free-port.js';

interface HttpAnswer {
  status: number;
  body: Record<string, unknown>;
  text: string;
}

describe('the HTTP port serves the same handlers as the gRPC port', () => {
  let dir: string;
  let sn: SchedulerNode;
  let base: string;
  let jobs: JobServiceClient;
  let cluster: ClusterServiceClient;
  let taskTypes: TaskTypeServiceClient;
  let watch: WatchServiceClient;

  const post = async (path: string, body: string, headers: Record<string, string> = {}): Promise<HttpAnswer> => {
    const res = await fetch(`${base}${path}`, { method: 'POST', body, headers });
    const text = await res.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // an event stream
    }
    return { status: res.status, body: parsed, text };
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'herald-http-'));
    const [peer, api] = [await freePort(), await freePort()];
    sn = await createSchedulerNode({
      id: 'n1',
      members: [{ id: 'n1', peerAddress: `127.0.0.1:${peer}`, clientAddress: `127.0.0.1:${api}` }],
      dataDir: join(dir, 'n1'),
      logger: pino({ level: 'silent' }),
      tickMs: 20,
      httpListen: '127.0.0.1:0',
    });
    base = `http://127.0.0.1:${sn.httpPort}`;
    const addr = `127.0.0.1:${api}`;
    jobs = new JobServiceClient(addr, credentials.createInsecure());
    cluster = new ClusterServiceClient(addr, credentials.createInsecure());
    taskTypes = new TaskTypeServiceClient(addr, credentials.createInsecure());
    watch = new WatchServiceClient(addr, credentials.createInsecure());
    const end = Date.now() + 15_000;
    while (!(sn.node.driver.isLeader() && sn.node.clusterClock.nowMs() !== undefined)) {
      if (Date.now() > end) throw new Error('no leader');
      await new Promise((r) => setTimeout(r, 20));
    }
  }, 60_000);

  afterAll(async () => {
    for (const c of [jobs, cluster, taskTypes, watch]) c?.close();
    await sn?.stop({ transfer: false, graceMs: 500 });
    await rm(dir, { recursive: true, force: true });
  });

  const cronJob = (id: string, expression: string, timeZone = 'UTC') =>
    CreateJobRequest.fromPartial({ jobId: id, spec: { taskType: 'email', schedule: { kind: { $case: 'cron', cron: { expression, timeZone } } } } });
  const cronJobJson = (id: string, expression: string, timeZone = 'UTC') => JSON.stringify({ jobId: id, spec: { taskType: 'email', schedule: { cron: { expression, timeZone } } } });

  const cases: Array<{ what: string; client: () => object; method: string; grpc: unknown; path: string; json: string }> = [
    { what: 'a bad cron expression', client: () => jobs, method: 'createJob', grpc: cronJob('bad-cron', '61 * * * *'), path: '/herald.v1.JobService/CreateJob', json: cronJobJson('bad-cron', '61 * * * *') },
    { what: 'an unknown time zone', client: () => jobs, method: 'createJob', grpc: cronJob('bad-zone', '0 * * * *', 'Mars/Olympus'), path: '/herald.v1.JobService/CreateJob', json: cronJobJson('bad-zone', '0 * * * *', 'Mars/Olympus') },
    { what: 'a bad job id', client: () => jobs, method: 'getJob', grpc: GetJobRequest.fromPartial({ jobId: 'bad id/with spaces' }), path: '/herald.v1.JobService/GetJob', json: '{"jobId":"bad id/with spaces"}' },
    { what: 'a job that does not exist', client: () => jobs, method: 'getJob', grpc: GetJobRequest.fromPartial({ jobId: 'no-such-job' }), path: '/herald.v1.JobService/GetJob', json: '{"jobId":"no-such-job"}' },
    { what: 'a run that does not exist', client: () => jobs, method: 'retryRun', grpc: RetryRunRequest.fromPartial({ runId: 'no-such-job@1700000000000' }), path: '/herald.v1.JobService/RetryRun', json: '{"runId":"no-such-job@1700000000000"}' },
    { what: 'a task type that does not exist', client: () => taskTypes, method: 'getTaskType', grpc: GetTaskTypeRequest.fromPartial({ taskType: 'nope' }), path: '/herald.v1.TaskTypeService/GetTaskType', json: '{"taskType":"nope"}' },
    { what: 'a leadership transfer to an unknown node', client: () => cluster, method: 'transferLeadership', grpc: TransferLeadershipRequest.fromPartial({ targetId: 'n9' }), path: '/herald.v1.ClusterService/TransferLeadership', json: '{"targetId":"n9"}' },
  ];

  it.each(cases)('$what: same code, Herald code and message', async (c) => {
    const g = await callError(c.client(), c.method, c.grpc);
    const h = await post(c.path, c.json);
    expect(g.code).not.toBe(status.OK);
    expect(h.body.code).toBe(status[g.code]);
    expect(h.status).toBe(httpStatusOf[g.code]);
    expect(h.body.message).toBe(g.details);
    expect(h.body.heraldCode).toBe(g.metadata.get(ERROR_CODE_KEY)[0]);
  });

  it('a stale version (update with the wrong expected version) fails the same way', async () => {
    await call(jobs, 'createJob', cronJob('conflict', '0 3 * * *'));
    const update = { jobId: 'conflict', spec: cronJob('conflict', '0 4 * * *').spec, expectedVersion: 999 };
    const g = await callError(jobs, 'updateJob', UpdateJobRequest.fromPartial(update));
    const h = await post('/herald.v1.JobService/UpdateJob', JSON.stringify({ jobId: 'conflict', spec: { taskType: 'email', schedule: { cron: { expression: '0 4 * * *', timeZone: 'UTC' } } }, expectedVersion: '999' }));
    expect(g.code).toBe(status.FAILED_PRECONDITION);
    expect(h.body.heraldCode).toBe('VERSION_MISMATCH');
    expect(h.body.code).toBe(status[g.code]);
    expect(h.body.message).toBe(g.details);
    expect(h.status).toBe(httpStatusOf[g.code]);
  });

  it('a watch from an index the node does not have: OUT_OF_RANGE both ways', async () => {
    const g = await new Promise<ServiceError>((resolve, reject) => {
      const s = watch.watchRuns(WatchRunsRequest.fromPartial({ fromIndex: 1e12 }));
      s.on('data', () => reject(new Error('data before the error')));
      s.on('error', (e: ServiceError) => resolve(e));
    });
    const h = await post('/herald.v1.WatchService/WatchRuns', '{"fromIndex":"1000000000000"}');
    expect(g.code).toBe(status.OUT_OF_RANGE);
    expect(h.body.code).toBe('OUT_OF_RANGE');
    expect(h.status).toBe(400);
    expect(h.body.message).toBe(g.details);
    expect(h.body.heraldCode).toBe('WATCH_INDEX_UNAVAILABLE');
  });

  it('answers curl-style requests (form content type, body {}) with proto3 JSON', async () => {
    await call(jobs, 'createJob', cronJob('listed', '*/5 * * * *'));
    const h = await post('/herald.v1.JobService/ListJobs', '{}', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(h.status).toBe(200);
    const ids = (h.body.jobs as Array<{ id: string; state: string; nextFireUnixMs: string }>).map((j) => j.id);
    expect(ids).toContain('listed');
    const listed = (h.body.jobs as Array<{ id: string; state: string; nextFireUnixMs: string }>).find((j) => j.id === 'listed')!;
    expect(listed.state).toBe('JOB_STATE_ACTIVE');
    expect(Number(listed.nextFireUnixMs)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('refuses what is not a request, and methods it does not serve, with actionable errors', async () => {
    const notJson = await post('/herald.v1.JobService/ListJobs', '{nope');
    expect(notJson.status).toBe(400);
    expect(notJson.body).toMatchObject({ code: 'INVALID_ARGUMENT', heraldCode: 'INVALID_ARGUMENT' });
    const unknownField = await post('/herald.v1.JobService/ListJobs', '{"colour":"red"}');
    expect(unknownField.status).toBe(400);
    expect(String(unknownField.body.message)).toMatch(/colour/);
    const noMethod = await post('/herald.v1.JobService/Frobnicate', '{}');
    expect(noMethod.status).toBe(501);
    expect(noMethod.body.code).toBe('UNIMPLEMENTED');
    const bidi = await post('/herald.v1.WorkerService/Connect', '{}');
    expect(bidi.body.code).toBe('UNIMPLEMENTED');
    expect(String(bidi.body.message)).toMatch(/gRPC port only/);
    const get = await fetch(`${base}/herald.v1.JobService/ListJobs`);
    expect(get.status).toBe(405);
  });

  it('lists the connected workers (ClusterService.ListWorkers) the same both ways', async () => {
    const worker = new Worker({ endpoints: [`127.0.0.1:${sn.node.clientPort}`], workerId: 'parity-worker', concurrency: 3, handlers: { email: async () => ({}) } });
    void worker.run();
    try {
      const end = Date.now() + 10_000;
      let g: { workers: Array<{ workerId: string; taskTypes: string[]; credits: number }> } = { workers: [] };
      while (g.workers.length === 0 && Date.now() < end) {
        g = await call(cluster, 'listWorkers', {});
        if (g.workers.length === 0) await new Promise((r) => setTimeout(r, 50));
      }
      expect(g.workers.map((w) => [w.workerId, w.taskTypes, w.credits])).toEqual([['parity-worker', ['email'], 3]]);
      const h = await post('/herald.v1.ClusterService/ListWorkers', '{}');
      expect(h.body).toMatchObject({ leaderId: 'n1', unservedTaskTypes: [], stalledSlots: [], workers: [{ workerId: 'parity-worker', taskTypes: ['email'], credits: 3, heldRuns: 0, silent: false }] });
      expect(Number((h.body.workers as Array<{ lastHeardUnixMs: string }>)[0]!.lastHeardUnixMs)).toBeGreaterThan(Date.now() - 60_000);
    } finally {
      await worker.shutdown({ graceMs: 500 });
    }
  });

  it('streams a watch as server-sent events', async () => {
    const ctl = new AbortController();
    const res = await fetch(`${base}/herald.v1.WatchService/WatchRuns`, { method: 'POST', body: '{}', signal: ctl.signal });
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    await call(jobs, 'triggerJob', TriggerJobRequest.fromPartial({ jobId: 'listed' }));
    const reader = res.body!.getReader();
    let text = '';
    const end = Date.now() + 10_000;
    while (!/"runId":\s*"listed\//.test(text) && !/"jobId":"listed"/.test(text) && Date.now() < end) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    ctl.abort();
    const first = text.split('\n\n')[0]!;
    expect(first.startsWith('data: ')).toBe(true);
    expect(JSON.parse(first.slice(6))).toHaveProperty('progressIndex');
    expect(text).toMatch(/"jobId":"listed"/);
  });
});
