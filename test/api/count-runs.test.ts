// JobService.CountRuns on a 3-node cluster (followers write the leader's effects): runs that end
// DEAD and SUCCEEDED on a real worker are counted alike by every node, over gRPC (raw and the
// SDK) and over the HTTP port, which serve the one handler; a bad request fails the same way on
// both transports.
import { credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NonRetryableError, Worker } from '../../src/client/index.js';
import { CountRunsRequest, JobServiceClient, ReadConsistency, type CountRunsResponse } from '../../src/gen/herald/v1/job_service.js';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { ERROR_CODE_KEY } from '../../src/server/grpc/grpc-status-map.js';
import { httpStatusOf } from '../../src/server/http/http-status.js';
import { waitFor } from '../raft-runtime/helpers/cluster.js';
import { startInProcessCluster, type InProcessCluster } from '../dispatch/helpers/in-process-cluster.js';

const HOUR = 3_600_000;

describe('CountRuns', () => {
  let cluster: InProcessCluster;
  let worker: Worker;
  const grpc: JobServiceClient[] = [];

  const countGrpc = (c: JobServiceClient, req: Partial<CountRunsRequest>): Promise<CountRunsResponse> =>
    new Promise((resolve, reject) =>
      c.countRuns(CountRunsRequest.fromPartial(req), new Metadata(), { deadline: new Date(Date.now() + 10_000) }, (e, r) => (e ? reject(e) : resolve(r!))),
    );
  const post = async (port: number, body: unknown): Promise<{ status: number; body: Record<string, string> }> => {
    const res = await fetch(`http://127.0.0.1:${port}/herald.v1.JobService/CountRuns`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
    return { status: res.status, body: (await res.json()) as Record<string, string> };
  };

  beforeAll(async () => {
    cluster = await startInProcessCluster(3, {}, { replicateEffects: true, http: true });
    for (const n of cluster.nodes) grpc.push(new JobServiceClient(`127.0.0.1:${n.node.clientPort}`, credentials.createInsecure()));
    worker = new Worker({
      endpoints: cluster.endpoints,
      workerId: 'count-w',
      concurrency: 4,
      handlers: {
        count: (ctx) => {
          if (ctx.run.jobId.startsWith('dies')) throw new NonRetryableError('broken', { type: 'Broken' });
        },
      },
    });
    worker.start();
    await waitFor('worker connected', () => worker.connected, 30_000);
  }, 60_000);

  afterAll(async () => {
    await worker?.shutdown({ graceMs: 200 }).catch(() => undefined);
    for (const c of grpc) c.close();
    await cluster?.stop();
  }, 30_000);

  it('counts the runs that ended in the last hour on every node, the same over gRPC, the SDK and HTTP', async () => {
    // Every node starts its tally now, before any run ends: followers then count from effects.
    for (const c of grpc) expect(await countGrpc(c, { sinceUnixMs: Date.now() - HOUR })).toMatchObject({ succeeded: 0, dead: 0, failed: 0 });
    const oneOff = () => JobSpec.fromPartial({ taskType: 'count', schedule: { kind: { $case: 'at', at: { atUnixMs: Date.now() + 200 } } }, retry: { maxAttempts: 1 } });
    for (const id of ['dies-1', 'dies-2', 'works-1', 'works-2', 'works-3']) await cluster.client.createJob(oneOff(), { id });
    await waitFor('all five runs ended', async () => (await cluster.client.listRuns({ state: 'succeeded' })).items.length === 3 && (await cluster.client.listRuns({ state: 'dead' })).items.length === 2, 20_000, 50);

    const since = Date.now() - HOUR;
    const fromMs = Math.floor(since / 60_000) * 60_000;
    for (const [i, n] of cluster.nodes.entries()) {
      // Linearizable (the default): a follower answers after the read barrier, so it has the runs.
      const g = await countGrpc(grpc[i]!, { sinceUnixMs: since });
      expect(g, n.node.id).toEqual({ fromUnixMs: fromMs, succeeded: 3, failed: 0, dead: 2, cancelled: 0, skipped: 0, missed: 0 });
      const h = await post(n.httpPort, { sinceUnixMs: String(since) });
      expect(h.status).toBe(200);
      expect(h.body).toEqual({ fromUnixMs: String(fromMs), succeeded: '3', failed: '0', dead: '2', cancelled: '0', skipped: '0', missed: '0' });
    }
    expect(await cluster.client.countRuns(new Date(since))).toEqual({ fromUnixMs: fromMs, succeeded: 3, failed: 0, dead: 2, cancelled: 0, skipped: 0, missed: 0 });
    // Nothing ended after now; stale reads answer from the node's own tally.
    expect(await countGrpc(grpc[1]!, { sinceUnixMs: Date.now() + 60_000, consistency: ReadConsistency.READ_CONSISTENCY_STALE })).toMatchObject({ succeeded: 0, dead: 0 });
  }, 40_000);

  it('a bad instant: the same INVALID_ARGUMENT over gRPC and HTTP', async () => {
    const g = await countGrpc(grpc[0]!, { sinceUnixMs: -5 }).then(
      () => {
        throw new Error('a negative instant was accepted');
      },
      (e: ServiceError) => e,
    );
    expect(g.code).toBe(status.INVALID_ARGUMENT);
    const h = await post(cluster.nodes[0]!.httpPort, { sinceUnixMs: '-5' });
    expect(h.status).toBe(httpStatusOf[status.INVALID_ARGUMENT]);
    expect(h.body.code).toBe('INVALID_ARGUMENT');
    expect(h.body.message).toBe(g.details);
    expect(h.body.heraldCode).toBe(g.metadata.get(ERROR_CODE_KEY)[0]);
  });
});
