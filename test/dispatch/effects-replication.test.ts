// Effects replication (--replicate-effects) on a real 3-node cluster in one process: the leader
// sends the writes of each apply beside the log and the followers write them instead of evaluating. Runs
// fire and finish exactly once across a leadership transfer in the middle, every replica ends
// byte-identical, and the followers did take effects (not only evaluate).
import { afterAll, describe, expect, it } from 'vitest';
import { Worker } from '../../src/client/worker.js';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { waitFor } from '../raft-runtime/helpers/cluster.js';
import { startInProcessCluster, type InProcessCluster } from './helpers/in-process-cluster.js';

const N = 600;

describe('effects replication (in-process cluster)', () => {
  let c: InProcessCluster | undefined;
  let worker: Worker | undefined;
  afterAll(async () => {
    await worker?.shutdown({ graceMs: 500 }).catch(() => undefined);
    await c?.stop();
  });

  it('fires and finishes every run once across a leadership transfer; replicas end identical', { timeout: 120_000 }, async () => {
    c = await startInProcessCluster(3, { misfireThresholdMs: 60_000 }, { replicateEffects: true });
    const done: string[] = [];
    worker = new Worker({
      endpoints: c.endpoints,
      workerId: 'fx-w',
      concurrency: 50,
      shutdownGraceMs: 1000,
      handlers: { fx: (ctx) => void done.push(ctx.run.id) },
    });
    worker.start();
    await waitFor('worker connected', () => worker!.connected, 15_000);
    const at = Date.now() + 1500;
    const spec = JobSpec.fromPartial({ taskType: 'fx', schedule: { kind: { $case: 'at', at: { atUnixMs: at } } } });
    for (let i = 0; i < N; i += 200) {
      const res = await c.client.createJobs(Array.from({ length: 200 }, (_, k) => ({ id: `fx-${i + k}`, spec, idempotencyKey: `fx-${i + k}` })));
      expect(res.every((r) => !r.error)).toBe(true);
    }
    await waitFor('a third of the runs done', () => done.length >= N / 3, 60_000, 20);
    const first = await c.leader();
    const to = c.nodes.find((n) => n !== first)!;
    await first.node.driver.transferLeadership(to.node.id);
    await waitFor(`${N} runs done`, () => new Set(done).size >= N, 60_000, 50);
    await waitFor('every run recorded succeeded', async () => (await (await c!.leader()).fsm.runCounts()).get(RunState.RUN_STATE_SUCCEEDED) === N, 30_000, 100);

    // Every replica applies everything: a read on each (ReadIndex) waits for its applied index.
    for (const n of c.nodes) await n.node.readIndex({ timeoutMs: 10_000 });
    const applied = await Promise.all(c.nodes.map((n) => n.fsm.appliedIndex()));
    await waitFor('replicas at one applied index', async () => new Set(await Promise.all(c!.nodes.map((n) => n.fsm.appliedIndex()))).size === 1, 10_000, 50);
    const hashes = await Promise.all(c.nodes.map((n) => n.fsm.stateHash()));
    expect(new Set(hashes).size, `applied ${applied.join(',')}`).toBe(1);
    expect(new Set(done).size).toBe(done.length); // no run executed twice
    // Both nodes that were followers for a stretch wrote effects instead of evaluating.
    const fromEffects = c.nodes.map((n) => n.node.driver.stats.entriesAppliedFromEffects);
    expect(fromEffects.filter((x) => x > 0).length, `entries applied from effects per node: ${fromEffects.join(',')}`).toBeGreaterThanOrEqual(2);
    expect(first.node.driver.stats.effectsSent).toBeGreaterThan(0);
    expect(to.node.driver.stats.effectsReceived).toBeGreaterThan(0);
  });
});
