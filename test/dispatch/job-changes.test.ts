// Jobs changed while this node leads re-enter (or leave) the timing wheel at once, from the
// applied results: pause stops firing, resume restarts it from the next slot, an update of the
// schedule takes effect at the new schedule's first slot, a job far beyond the wheel's horizon
// is loaded by a later due-window read. Also: a follower answers a worker stream with a redirect.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { sleep, waitFor } from '../raft-runtime/helpers/cluster.js';
import { RawWorker } from './fixtures/raw-worker.js';
import { startInProcessCluster, type InProcessCluster } from './helpers/in-process-cluster.js';

const every = (intervalMs: number) => JobSpec.fromPartial({ taskType: 'chg', schedule: { kind: { $case: 'every', every: { intervalMs, anchorUnixMs: 0 } } } });

describe('job changes while leading (in-process, 3 nodes)', () => {
  let c: InProcessCluster;
  let w: RawWorker;
  beforeAll(async () => {
    // A 3 s horizon: a job due later than that is not in the wheel until a due-window read.
    c = await startInProcessCluster(3, { horizonMs: 3000 });
    w = new RawWorker({ endpoints: c.endpoints, workerId: 'cw', taskTypes: ['chg'], capacity: 10, handler: async () => true });
    w.start();
  }, 60_000);
  afterAll(async () => {
    w?.stop();
    await c?.stop();
  });

  const slotsOf = async (jobId: string) => (await c.client.listRuns({ jobId, pageSize: 200 })).items.map((r) => r.slotUnixMs).sort((a, b) => a - b);

  it('a follower redirects a worker stream to the leader', async () => {
    const leader = await c.leader();
    const follower = c.nodes.find((n) => n !== leader)!;
    const probe = new RawWorker({ endpoints: [`127.0.0.1:${follower.node.clientPort}`], workerId: 'probe', taskTypes: ['none'], capacity: 0, handler: async () => true });
    probe.start();
    try {
      const r = await waitFor('a redirect', () => probe.events.find((e) => e.type === 'redirect'), 10_000);
      expect(r.type === 'redirect' && r.leaderId).toBe(leader.node.id);
      expect(r.type === 'redirect' && r.leaderAddress).toBe(`127.0.0.1:${leader.node.clientPort}`);
      await waitFor('welcomed by the leader', () => probe.events.find((e) => e.type === 'welcome'), 10_000);
    } finally {
      probe.stop();
    }
  });

  it('pause stops firing and resume restarts from the next slot without catch-up', async () => {
    await c.client.createJob(every(1000), { id: 'pr' });
    await waitFor('two runs', async () => (await slotsOf('pr')).length >= 2, 10_000);
    await c.client.pauseJob('pr');
    const pausedAt = Date.now();
    const before = await slotsOf('pr');
    await sleep(2_500);
    const during = await slotsOf('pr');
    expect(during.filter((s) => s > pausedAt + 200)).toEqual([]);
    expect(during.length).toBeLessThanOrEqual(before.length + 1);
    const resumedAt = Date.now();
    await c.client.resumeJob('pr');
    await waitFor('firing again', async () => (await slotsOf('pr')).some((s) => s > resumedAt), 5_000);
    // No catch-up of the slots that came due while paused.
    const after = await slotsOf('pr');
    expect(after.filter((s) => s > pausedAt + 200 && s < resumedAt - 200)).toEqual([]);
  });

  it('an update of the schedule takes effect at once', async () => {
    await c.client.createJob(every(5000), { id: 'up' });
    await sleep(300);
    const updatedAt = Date.now();
    await c.client.updateJob('up', every(1000));
    await waitFor('fires at the new 1 s schedule', async () => (await slotsOf('up')).filter((s) => s >= updatedAt).length >= 3, 8_000);
    const s = (await slotsOf('up')).filter((x) => x >= updatedAt);
    for (let i = 1; i < s.length; i++) expect(s[i]! - s[i - 1]!).toBe(1000);
  });

  it('a job first due beyond the wheel horizon is loaded by a later due-window read and fires on time', async () => {
    const at = Date.now() + 5_000; // beyond the 3 s horizon when created
    await c.client.createJob(JobSpec.fromPartial({ taskType: 'chg', schedule: { kind: { $case: 'at', at: { atUnixMs: at } } } }), { id: 'far' });
    const leader = await c.leader();
    await sleep(100);
    expect(leader.leaderServices()!.fire.holds('far')).toBe(false); // past the horizon: not held yet
    await waitFor('loaded into the wheel', () => leader.leaderServices()!.fire.holds('far'), 5_000, 20);
    const a = await waitFor('assigned', () => w.events.find((e) => e.type === 'assigned' && e.jobId === 'far'), 10_000);
    expect(a.type === 'assigned' && a.slotMs).toBe(at);
    expect(a.at - at).toBeLessThan(2_000);
    // Its hint was read as it entered the wheel: fired and claimed up to the dispatch lead (100 ms)
    // ahead, the worker holding the run until its instant.
    expect(a.at).toBeGreaterThanOrEqual(at - 100 - 50);
  });
});
