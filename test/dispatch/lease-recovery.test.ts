// Leader safety nets (in-process node): a claim committed without the dispatcher knowing (a
// proposal whose outcome was unknown) is found by the orphan sweep and expires like any lease,
// so the run is executed by a real worker with a higher token; and the watchdog flags a job
// whose due slot got no run record (firing stalled) with a metric and the job id.
import { afterEach, describe, expect, it } from 'vitest';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { sleep, waitFor } from '../raft-runtime/helpers/cluster.js';
import { RawWorker } from './fixtures/raw-worker.js';
import { startInProcessCluster, type InProcessCluster } from './helpers/in-process-cluster.js';

describe('leader safety nets (in-process)', () => {
  let c: InProcessCluster | undefined;
  let w: RawWorker | undefined;
  afterEach(async () => {
    w?.stop();
    await c?.stop();
    c = undefined;
    w = undefined;
  });

  it('adopts a RUNNING run missing from the lease table, expires it and re-dispatches it', async () => {
    c = await startInProcessCluster(1, { defaultLeaseMs: 1000 });
    const at = Date.now() + 100;
    await c.client.createJob(JobSpec.fromPartial({ taskType: 'orph', schedule: { kind: { $case: 'at', at: { atUnixMs: at } } } }), { id: 'orph' });
    const pending = await waitFor('a pending run', async () => (await c!.client.listRuns({ jobId: 'orph' })).items[0], 10_000);
    // The run may be fired up to the dispatch lead before its instant: the ghost claims it once due.
    await sleep(Math.max(0, at + 20 - Date.now()));
    const node = await c.leader();
    const services = node.leaderServices()!;
    const now = services.term.now()!;
    // A claim for a worker that never heard of it, committed behind the dispatcher's back.
    const claim = await services.term.propose({ type: 'claimRuns', nowMs: now, items: [{ runId: pending.id, workerId: 'ghost', leaseDeadlineMs: now + 1000 }] }, 'claim');
    const ghostToken = claim.items[0]!.run!.fencingToken;
    expect(services.leases.get(pending.id)).toBeUndefined();
    expect(await services.leaseKeeper.adoptOrphans()).toBe(1);
    expect(services.leases.get(pending.id)?.fencingToken).toBe(ghostToken);

    w = new RawWorker({ endpoints: c.endpoints, workerId: 'real', taskTypes: ['orph'], capacity: 1, handler: async () => true });
    w.start();
    const a = await waitFor('the run re-dispatched', () => w!.events.find((e) => e.type === 'assigned' && e.runId === pending.id), 10_000);
    expect(a.type === 'assigned' && a.token > ghostToken && a.attempt === 2).toBe(true);
    await waitFor('succeeded', async () => (await c!.client.getRun(pending.id)).state === RunState.RUN_STATE_SUCCEEDED, 10_000);
  });

  it('watchdog flags a job whose due slot has no run record past the grace period', async () => {
    c = await startInProcessCluster(1, { watchdogGraceMs: 300, watchdogIntervalMs: 100_000 });
    const services = (await c.leader()).leaderServices()!;
    await services.watchdog.check();
    expect(services.watchdog.lastSilent).toEqual([]);
    services.fire.stop(); // firing stalls (a bug, or an overloaded leader)
    await c.client.createJob(JobSpec.fromPartial({ taskType: 't', schedule: { kind: { $case: 'every', every: { intervalMs: 1000, anchorUnixMs: 0 } } } }), { id: 'silent' });
    await sleep(1_600);
    await services.watchdog.check();
    expect(services.watchdog.lastSilent.map((s) => s.jobId)).toEqual(['silent']);
    const metrics = await (await c.leader()).metrics.registry.getSingleMetricAsString('herald_watchdog_silent_jobs');
    expect(metrics).toMatch(/herald_watchdog_silent_jobs\{[^}]*\} 1/);
  });
});
