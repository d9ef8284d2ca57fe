// Effects replication (--replicate-effects) on a real 3-node cluster in one process: the leader
// sends the writes of each apply beside the log and the followers write them instead of evaluating. Runs
// fire and finish exactly once across a leadership transfer in the middle, every replica ends
// byte-identical, and the followers did take effects (not only evaluate). Effects that never
// arrive only mean the follower evaluates those entries; with the option off none are sent.
import { afterEach, describe, expect, it } from 'vitest';
import { Worker } from '../../src/client/worker/worker.js';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { waitFor } from '../raft-runtime/helpers/cluster.js';
import { startInProcessCluster, type InProcessCluster } from './helpers/in-process-cluster.js';

const N = 600;

const spec = (at: number) => JobSpec.fromPartial({ taskType: 'fx', schedule: { kind: { $case: 'at', at: { atUnixMs: at } } } });

/** Creates N one-off jobs due shortly and a worker that records each run it executes. */
async function herdOn(c: InProcessCluster, prefix: string): Promise<{ worker: Worker; done: string[] }> {
  const done: string[] = [];
  const worker = new Worker({
    endpoints: c.endpoints,
    workerId: `${prefix}-w`,
    concurrency: 50,
    shutdownGraceMs: 1000,
    handlers: { fx: (ctx) => void done.push(ctx.run.id) },
  });
  worker.start();
  await waitFor('worker connected', () => worker.connected, 15_000);
  const at = Date.now() + 1500;
  for (let i = 0; i < N; i += 200) {
    const res = await c.client.createJobs(Array.from({ length: 200 }, (_, k) => ({ id: `${prefix}-${i + k}`, spec: spec(at), idempotencyKey: `${prefix}-${i + k}` })));
    expect(res.every((r) => !r.error)).toBe(true);
  }
  return { worker, done };
}

/** Every run recorded succeeded, every replica at one applied index with one state hash. */
async function expectConverged(c: InProcessCluster, done: string[]): Promise<void> {
  await waitFor(`${N} runs done`, () => new Set(done).size >= N, 60_000, 50);
  await waitFor('every run recorded succeeded', async () => (await (await c.leader()).fsm.runCounts()).get(RunState.RUN_STATE_SUCCEEDED) === N, 30_000, 100);
  // Every replica applies everything: a read on each (ReadIndex) waits for its applied index.
  for (const n of c.nodes) await n.node.readIndex({ timeoutMs: 10_000 });
  await waitFor('replicas at one applied index', async () => new Set(await Promise.all(c.nodes.map((n) => n.fsm.appliedIndex()))).size === 1, 10_000, 50);
  const applied = await Promise.all(c.nodes.map((n) => n.fsm.appliedIndex()));
  const hashes = await Promise.all(c.nodes.map((n) => n.fsm.stateHash()));
  expect(new Set(hashes).size, `applied ${applied.join(',')}`).toBe(1);
  expect(new Set(done).size).toBe(done.length); // no run executed twice
}

describe('effects replication (in-process cluster)', () => {
  let c: InProcessCluster | undefined;
  let worker: Worker | undefined;
  afterEach(async () => {
    await worker?.shutdown({ graceMs: 500 }).catch(() => undefined);
    await c?.stop();
    worker = undefined;
    c = undefined;
  });

  it('fires and finishes every run once across a leadership transfer; replicas end identical', { timeout: 120_000 }, async () => {
    c = await startInProcessCluster(3, { misfireThresholdMs: 60_000 }, { replicateEffects: true });
    const herd = await herdOn(c, 'fx');
    worker = herd.worker;
    await waitFor('a third of the runs done', () => herd.done.length >= N / 3, 60_000, 20);
    const first = await c.leader();
    const to = c.nodes.find((n) => n !== first)!;
    // The point is effects across a transfer, not its speed: give it room on a loaded machine.
    await first.node.driver.transferLeadership(to.node.id, 5_000);
    await expectConverged(c, herd.done);
    // Both nodes that were followers for a stretch wrote effects instead of evaluating.
    const fromEffects = c.nodes.map((n) => n.node.driver.stats.entriesAppliedFromEffects);
    expect(fromEffects.filter((x) => x > 0).length, `entries applied from effects per node: ${fromEffects.join(',')}`).toBeGreaterThanOrEqual(2);
    expect(first.node.driver.stats.effectsSent).toBeGreaterThan(0);
    expect(to.node.driver.stats.effectsReceived).toBeGreaterThan(0);
  });

  it('a follower that loses effects evaluates those entries itself and still ends identical', { timeout: 120_000 }, async () => {
    c = await startInProcessCluster(3, { misfireThresholdMs: 60_000 }, { replicateEffects: true });
    const leader = await c.leader();
    const lossy = c.nodes.find((n) => n !== leader)!;
    // Every other batch of effects never arrives (a slow stream drops them the same way).
    const receive = lossy.node.driver.receiveEffects.bind(lossy.node.driver);
    let batches = 0;
    lossy.node.driver.receiveEffects = (list) => {
      if (batches++ % 2 === 0) receive(list);
    };
    const evaluatedBefore = lossy.node.driver.stats.entriesApplied - lossy.node.driver.stats.entriesAppliedFromEffects;
    const herd = await herdOn(c, 'lossy');
    worker = herd.worker;
    await expectConverged(c, herd.done);
    const s = lossy.node.driver.stats;
    expect(batches).toBeGreaterThan(2);
    expect(s.entriesAppliedFromEffects, 'some entries came from the effects that arrived').toBeGreaterThan(0);
    expect(s.entriesApplied - s.entriesAppliedFromEffects - evaluatedBefore, 'the rest were evaluated').toBeGreaterThan(0);
  });

  it('with effects replication off the leader sends none and followers evaluate everything', { timeout: 120_000 }, async () => {
    c = await startInProcessCluster(3, { misfireThresholdMs: 60_000 }, { replicateEffects: false });
    const herd = await herdOn(c, 'off');
    worker = herd.worker;
    await expectConverged(c, herd.done);
    for (const n of c.nodes) {
      expect(n.node.driver.stats.effectsSent).toBe(0);
      expect(n.node.driver.stats.entriesAppliedFromEffects).toBe(0);
    }
  });
});
