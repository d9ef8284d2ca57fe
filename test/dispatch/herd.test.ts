// A round-time herd: 10,000 one-off jobs due at the same instant on a real 3-node cluster with
// two worker processes. All fire, all complete, none runs twice.
import { afterAll, describe, expect, it } from 'vitest';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { waitFor } from '../raft-runtime/helpers/cluster.js';
import { createJobsReliably, SchedulerCluster } from './helpers/process-cluster.js';

const N = 10_000;

describe('herd (processes)', () => {
  let c: SchedulerCluster | undefined;
  afterAll(async () => c?.cleanup());

  it('10,000 one-off jobs due at one instant all fire and complete exactly once', { timeout: 240_000 }, async () => {
    c = await SchedulerCluster.start({ leaseMs: 30_000, misfireThresholdMs: 60_000 });
    const workers = [c.startWorker('ha', { capacity: 200, sleepMs: 5, quiet: true }), c.startWorker('hb', { capacity: 200, sleepMs: 5, quiet: true })];
    await c.waitWorkersConnected(workers);
    // The instant is fixed up front; jobs created after it (slow machine) fire at once instead.
    const at = Date.now() + 20_000;
    const t0 = Date.now();
    const spec = JobSpec.fromPartial({ taskType: 'test', schedule: { kind: { $case: 'at', at: { atUnixMs: at } } } });
    await createJobsReliably(c.client, Array.from({ length: N }, (_, k) => ({ id: `herd-${k}`, spec })));
    const createdMs = Date.now() - t0;
    const acked = () => workers.reduce((n, w) => n + w.of('ack').filter((a) => a.accepted).length, 0);
    await waitFor(`${N} accepted results`, () => acked() >= N, 200_000, 200);
    const drainedAt = Date.now();

    const assigned = workers.flatMap((w) => w.of('assigned'));
    expect(assigned.length).toBe(N);
    expect(new Set(assigned.map((a) => a.runId)).size).toBe(N);
    expect(assigned.every((a) => a.attempt === 1 && a.slotMs === at)).toBe(true);
    // Paced by credits, yet both workers shared the herd.
    for (const w of workers) expect(w.of('assigned').length).toBeGreaterThan(N / 10);

    const counts = await c.stopAndInspect((fsm) => fsm.runCounts());
    expect(counts.get(RunState.RUN_STATE_SUCCEEDED)).toBe(N);
    expect(counts.get(RunState.RUN_STATE_RUNNING) ?? 0).toBe(0);
    expect(counts.get(RunState.RUN_STATE_PENDING) ?? 0).toBe(0);
    console.log(JSON.stringify({ test: 'herd', runs: N, drainMsAfterDue: drainedAt - at, createdMs }));
  });
});
