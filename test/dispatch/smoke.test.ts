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

  it('speaks batches to workers that take them and single messages to those that do not', async () => {
    cluster = await startInProcessCluster(1);
    const handler = async (_a: unknown, s: AbortSignal) => (await sleepAbortable(20, s), true);
    const batched = new RawWorker({ endpoints: cluster.endpoints, workerId: 'wb', taskTypes: ['t'], capacity: 40, handler });
    const single = new RawWorker({ endpoints: cluster.endpoints, workerId: 'ws', taskTypes: ['t'], capacity: 40, handler, batches: false });
    workers.push(batched, single);
    batched.start();
    single.start();
    await waitFor('both welcomed', () => batched.connected && single.connected, 10_000);
    const at = Date.now() + 1500;
    const spec = JobSpec.fromPartial({ taskType: 't', schedule: { kind: { $case: 'at', at: { atUnixMs: at } } } });
    await cluster.client.createJobs(Array.from({ length: 60 }, (_, i) => ({ id: `b${i}`, spec })));
    const acked = (w: RawWorker) => w.events.flatMap((e) => (e.type === 'ack' && e.accepted ? [e.runId] : []));
    await waitFor('60 acks', () => acked(batched).length + acked(single).length >= 60, 20_000);
    const all = [...acked(batched), ...acked(single)];
    expect(new Set(all).size).toBe(60);
    // Both kinds of worker got work; only the one that asked got (and sent) batched messages.
    expect(acked(batched).length).toBeGreaterThan(0);
    expect(acked(single).length).toBeGreaterThan(0);
    expect(batched.received.assignments ?? 0).toBeGreaterThan(0);
    expect(batched.received.assignment ?? 0).toBeLessThan(acked(batched).length);
    expect(batched.sent.batch ?? 0).toBeGreaterThan(0);
    expect(batched.sent.result ?? 0).toBe(0);
    expect(single.received.assignments ?? 0).toBe(0);
    expect(single.received.resultAcks ?? 0).toBe(0);
    expect(single.received.assignment).toBe(acked(single).length);
    expect(single.sent.batch ?? 0).toBe(0);
  });
});
