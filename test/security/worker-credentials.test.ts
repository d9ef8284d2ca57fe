// Issue 29: workers bound to their credential, on a live in-process node over real gRPC. A worker
// token for `report` cannot subscribe to `email` (so an email run never reaches it); the worker
// id recorded is the principal's name plus the self-chosen id; another principal using the same
// self-chosen id cannot report results for a run it does not hold; a revoked token's stream ends.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metadata, status, type Client } from '@grpc/grpc-js';
import { Worker } from '../../src/client/worker/worker.js';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { ConnectRequest, ConnectResponse } from '../../src/gen/herald/v1/worker_service.js';
import { newTokenSecret } from '../../src/server/auth/token-secret.js';
import { waitFor } from '../raft-runtime/helpers/cluster.js';
import { startInProcessCluster, type InProcessCluster } from '../dispatch/helpers/in-process-cluster.js';
import { rawClient, rawStream } from './helpers/raw-calls.js';

const CONNECT = '/herald.v1.WorkerService/Connect';

function hello(workerId: string, taskTypes: string[], capacity = 0): Buffer {
  return Buffer.from(ConnectRequest.encode({ message: { $case: 'hello', hello: { workerId, taskTypes, capacity, heldRuns: [], version: '', batches: false } } }).finish());
}

function spec(taskType: string): JobSpec {
  return JobSpec.fromPartial({ taskType, schedule: { kind: { $case: 'at', at: { atUnixMs: Date.now() + 100 } } }, leaseDurationMs: 5_000 });
}

describe('auth: workers bound to their credential', () => {
  let cluster: InProcessCluster;
  let addr: string;
  let raw: Client;
  const bootstrap = newTokenSecret().token;
  let reportToken: string;
  let otherReportToken: string;
  let worker: Worker | undefined;

  beforeAll(async () => {
    cluster = await startInProcessCluster(1, { heartbeatIntervalMs: 200 }, { auth: { bootstrapToken: bootstrap } }, bootstrap);
    const leader = await cluster.leader();
    addr = `127.0.0.1:${leader.node.clientPort}`;
    raw = rawClient(addr);
    await waitFor('bootstrap token put', () => cluster.client.listTokens().then(() => true, () => false), 10_000, 100);
    reportToken = (await cluster.client.createToken('billing-a', 'worker', ['report'])).secret;
    otherReportToken = (await cluster.client.createToken('billing-b', 'worker', ['report'])).secret;
  }, 30_000);

  afterAll(async () => {
    await worker?.shutdown({ graceMs: 200 }).catch(() => undefined);
    raw?.close();
    await cluster?.stop();
  });

  it('refuses a hello for a task type the credential does not list, naming it', async () => {
    const got = await rawStream(raw, CONNECT, 'bidi', { token: reportToken }, hello('w', ['report', 'email']));
    expect(got.code).toBe(status.PERMISSION_DENIED);
    expect(got.details).toMatch(/may take runs of report; not of email/);
    expect((await rawStream(raw, CONNECT, 'bidi', { token: reportToken }, hello('w', ['report']))).code).toBe(status.OK);
  });

  it('records principal:instance as the worker id, never hands it an email run, and refuses another principal\'s result for its run', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const started: string[] = [];
    worker = new Worker({
      endpoints: [addr],
      token: reportToken,
      workerId: 'same',
      concurrency: 4,
      handlers: {
        report: async (ctx) => {
          started.push(ctx.run.id);
          await held;
        },
      },
    });
    worker.start();
    await waitFor('worker connected', () => worker!.connected, 10_000, 20);
    await cluster.client.createJob(spec('email'), { id: 'mail' });
    await cluster.client.createJob(spec('report'), { id: 'rep' });
    const runId = await waitFor('report run started', () => started[0], 10_000, 20);
    const running = await cluster.client.getRun(runId);
    expect(running.state).toBe(RunState.RUN_STATE_RUNNING);
    expect(running.workerId).toBe('billing-a:same');

    // Another worker principal, same self-chosen id, same task type: its result for the run is refused.
    const acks: ConnectResponse[] = [];
    const stream = raw.makeBidiStreamRequest(CONNECT, (b: Buffer) => b, (b: Buffer) => b, metadataWith(otherReportToken), {});
    stream.on('data', (b: Buffer) => acks.push(ConnectResponse.decode(b)));
    stream.on('error', () => undefined);
    stream.write(hello('same', ['report']));
    await waitFor('welcome', () => acks.find((a) => a.message?.$case === 'welcome'), 5_000, 20);
    stream.write(
      Buffer.from(
        ConnectRequest.encode({ message: { $case: 'result', result: { runId, fencingToken: running.fencingToken, outcome: { $case: 'success', success: { output: Buffer.alloc(0) } } } } }).finish(),
      ),
    );
    const ack = await waitFor('result ack', () => acks.find((a) => a.message?.$case === 'resultAck'), 5_000, 20);
    expect(ack.message?.$case === 'resultAck' && ack.message.resultAck).toMatchObject({ runId, accepted: false, reason: expect.stringMatching(/billing-a:same, not billing-b:same/) });
    stream.cancel();
    expect((await cluster.client.getRun(runId)).state).toBe(RunState.RUN_STATE_RUNNING);

    release();
    await waitFor('report run succeeded', async () => ((await cluster.client.getRun(runId)).state === RunState.RUN_STATE_SUCCEEDED ? true : undefined), 10_000, 50);
    // The email run stays PENDING: no worker credential for email is connected.
    const mail = await cluster.client.listRuns({ jobId: 'mail' });
    expect(mail.items.map((r) => r.state)).toEqual([RunState.RUN_STATE_PENDING]);
    expect(started).toEqual([runId]);
  }, 30_000);

  it('ends a revoked token\'s worker stream', async () => {
    const { secret } = await cluster.client.createToken('short-worker', 'worker', ['report']);
    const errors: unknown[] = [];
    const stream = raw.makeBidiStreamRequest(CONNECT, (b: Buffer) => b, (b: Buffer) => b, metadataWith(secret), {});
    const welcomed: boolean[] = [];
    stream.on('data', (b: Buffer) => {
      if (ConnectResponse.decode(b).message?.$case === 'welcome') welcomed.push(true);
    });
    stream.on('error', (e) => errors.push(e));
    stream.write(hello('x', ['report']));
    await waitFor('welcome', () => welcomed[0], 5_000, 20);
    await cluster.client.revokeToken('short-worker');
    const err = await waitFor('stream ended', () => errors[0], 5_000, 20);
    expect(err).toMatchObject({ code: status.UNAUTHENTICATED, details: expect.stringMatching(/revoked/) });
  }, 15_000);
});

function metadataWith(token: string): Metadata {
  const md = new Metadata();
  md.set('authorization', `Bearer ${token}`);
  return md;
}
