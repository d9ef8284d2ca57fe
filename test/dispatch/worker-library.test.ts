// The Worker library (src/client) against the real WorkerService: runs are assigned, executed
// once and acknowledged; a cancelled run aborts the handler's signal.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from '../../src/client/worker/worker.js';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { waitFor } from '../raft-runtime/helpers/cluster.js';
import { startInProcessCluster, type InProcessCluster } from './helpers/in-process-cluster.js';

describe('Worker library against the server (in-process)', () => {
  let c: InProcessCluster;
  let worker: Worker;
  const seen: { runId: string; token: number; attempt: number }[] = [];
  const aborted: string[] = [];
  beforeAll(async () => {
    c = await startInProcessCluster(1);
    worker = new Worker({
      endpoints: c.endpoints,
      workerId: 'lib-w',
      concurrency: 4,
      shutdownGraceMs: 1000,
      handlers: {
        quick: (ctx) => {
          seen.push({ runId: ctx.run.id, token: ctx.fencingToken, attempt: ctx.attempt });
          return { ok: true };
        },
        slow: (ctx) =>
          new Promise<void>((resolve, reject) => {
            seen.push({ runId: ctx.run.id, token: ctx.fencingToken, attempt: ctx.attempt });
            const t = setTimeout(resolve, 30_000);
            ctx.signal.addEventListener('abort', () => {
              clearTimeout(t);
              aborted.push(ctx.run.id);
              reject(new Error('aborted'));
            });
          }),
      },
    });
    worker.start();
    await waitFor('worker connected', () => worker.connected, 10_000);
  }, 60_000);
  afterAll(async () => {
    await worker?.shutdown({ graceMs: 500 }).catch(() => undefined);
    await c?.stop();
  });

  it('executes every-1s runs once each and the results are accepted', async () => {
    await c.client.createJob(JobSpec.fromPartial({ taskType: 'quick', schedule: { kind: { $case: 'every', every: { intervalMs: 1000, anchorUnixMs: 0 } } } }), { id: 'lib-quick' });
    await waitFor('3 succeeded runs', async () => (await c.client.listRuns({ jobId: 'lib-quick', state: 'succeeded' })).items.length >= 3, 10_000);
    const ids = seen.filter((s) => s.runId.startsWith('lib-quick@')).map((s) => s.runId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('a cancelled run aborts the handler signal and is recorded CANCELLED', async () => {
    await c.client.createJob(JobSpec.fromPartial({ taskType: 'slow', schedule: { kind: { $case: 'at', at: { atUnixMs: Date.now() + 100 } } } }), { id: 'lib-slow' });
    const started = await waitFor('slow run started', () => seen.find((s) => s.runId.startsWith('lib-slow@')), 10_000);
    await c.client.cancelRun(started.runId, 'operator cancel');
    await waitFor('handler aborted', () => aborted.includes(started.runId), 10_000);
    const run = await c.client.getRun(started.runId);
    expect(run.state).toBe(RunState.RUN_STATE_CANCELLED);
  });
});
