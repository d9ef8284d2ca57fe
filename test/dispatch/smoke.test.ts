import { afterEach, describe, expect, it } from 'vitest';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { startInProcessCluster, type InProcessCluster } from './helpers/in-process-cluster.js';
import { RawWorker, sleepAbortable } from './fixtures/raw-worker.js';
import { waitFor } from '../raft-runtime/helpers/cluster.js';

describe('scheduler smoke (in-process)', () => {
  let cluster: InProcessCluster | undefined;
  const workers: RawWorker[] = [];
  afterEach(async () => {
    for (const w of workers.splice(0)) w.stop();
    await cluster?.stop();
    cluster = undefined;
  });

  it('fires an every-1s job once per slot and a worker completes the runs', async () => {
    cluster = await startInProcessCluster(1);
    const w = new RawWorker({ endpoints: cluster.endpoints, workerId: 'w1', taskTypes: ['t'], capacity: 2, handler: async (_a, s) => (await sleepAbortable(50, s), true) });
    workers.push(w);
    w.start();
    const spec = JobSpec.fromPartial({ taskType: 't', schedule: { kind: { $case: 'every', every: { intervalMs: 1000, anchorUnixMs: 0 } } } });
    await cluster.client.createJob(spec, { id: 'j1' });
    await waitFor('4 acks', () => w.events.filter((e) => e.type === 'ack' && e.accepted).length >= 4, 10_000);
    const assigned = w.events.filter((e) => e.type === 'assigned');
    const ids = assigned.map((e) => e.runId);
    expect(new Set(ids).size).toBe(ids.length);
    const runs = await cluster.client.listRuns({ jobId: 'j1' });
    expect(runs.items.length).toBeGreaterThanOrEqual(4);
    // Lateness is recorded per run (FSM) and in the fire lateness histogram.
    expect(runs.items.filter((r) => r.attempt > 0).every((r) => r.latenessMs >= 0 && r.attempts[0]!.startedUnixMs > 0)).toBe(true);
    const hist = await cluster.nodes[0]!.metrics.registry.getSingleMetricAsString('herald_fire_lateness_seconds');
    const count = Number(/herald_fire_lateness_seconds_count\{[^}]*\} (\d+)/.exec(hist)?.[1] ?? 0);
    expect(count).toBeGreaterThanOrEqual(4);
  });
});
