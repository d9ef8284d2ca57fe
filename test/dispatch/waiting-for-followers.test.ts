// Run.waiting_for on reads served by a follower (in-process nodes, a raw worker): the dispatcher's
// held-run reasons live on the leader, so a follower whose answer holds due PENDING runs has the
// leader answer the read; a STALE read stays local and leaves the reason empty.
import { credentials } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { JobServiceClient, ReadConsistency, type GetRunResponse, type ListRunsRequest, type ListRunsResponse } from '../../src/gen/herald/v1/job_service.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { sleep, waitFor } from '../raft-runtime/helpers/cluster.js';
import { RawWorker } from './fixtures/raw-worker.js';
import { startInProcessCluster, type InProcessCluster } from './helpers/in-process-cluster.js';

function unary<Req, Res>(fn: (req: Req, cb: (err: Error | null, res: Res) => void) => unknown, req: Req): Promise<Res> {
  return new Promise((resolve, reject) => fn(req, (err, res) => (err ? reject(err) : resolve(res))));
}

describe('waiting_for on follower reads (in-process)', () => {
  let c: InProcessCluster | undefined;
  let worker: RawWorker | undefined;
  let follower: JobServiceClient | undefined;
  afterEach(async () => {
    follower?.close();
    worker?.stop();
    await c?.stop();
    c = undefined;
  });

  it('a follower has the leader answer reads holding due PENDING runs; a stale read stays local', { timeout: 40_000 }, async () => {
    c = await startInProcessCluster(3);
    const spec = JobSpec.fromPartial({ taskType: 'held', maxConcurrent: 1, schedule: { kind: { $case: 'every', every: { intervalMs: 3_600_000, anchorUnixMs: 0 } } }, startUnixMs: Date.now() + 3_600_000 });
    await c.client.createJob(spec, { id: 'one-at-a-time' });
    worker = new RawWorker({ endpoints: c.endpoints, workerId: 'w', taskTypes: ['held'], capacity: 10, handler: () => sleep(30_000).then(() => true) });
    worker.start();
    for (let i = 0; i < 3; i++) await c.client.triggerJob('one-at-a-time', { ignoreOverlap: true });
    const leader = await c.leader();
    const index = c.nodes.findIndex((n) => n !== leader);
    follower = new JobServiceClient(c.endpoints[index]!, credentials.createInsecure());
    const f = follower;
    const list = (consistency: ReadConsistency) =>
      unary<ListRunsRequest, ListRunsResponse>(f.listRuns.bind(f), { jobId: 'one-at-a-time', state: RunState.RUN_STATE_PENDING, pageSize: 10, pageToken: '', consistency });
    // One run is RUNNING; the other two wait for it, and the follower's answer says so.
    const held = await waitFor(
      'two held runs with their reason, read on a follower',
      async () => {
        const runs = (await list(ReadConsistency.READ_CONSISTENCY_UNSPECIFIED)).runs;
        return runs.length === 2 && runs.every((r) => r.waitingFor !== '') ? runs : undefined;
      },
      20_000,
      50,
    );
    expect(held.map((r) => r.waitingFor)).toEqual(['job one-at-a-time at max_concurrent 1', 'job one-at-a-time at max_concurrent 1']);
    const one = await unary<{ runId: string; consistency: ReadConsistency }, GetRunResponse>(f.getRun.bind(f), { runId: held[0]!.id, consistency: ReadConsistency.READ_CONSISTENCY_UNSPECIFIED });
    expect(one.run!.waitingFor).toBe('job one-at-a-time at max_concurrent 1');
    // A stale read is the follower's own: the same runs, no reason.
    const stale = (await list(ReadConsistency.READ_CONSISTENCY_STALE)).runs;
    expect(stale.map((r) => [r.id, r.waitingFor])).toEqual(held.map((r) => [r.id, '']));
  });
});
