// Whole-cluster stop (kill -9 of every node) for several slots, then restart: each misfire
// policy does what it says, and MISSED records appear where due (I2: every slot has a record).
import { afterAll, describe, expect, it } from 'vitest';
import { JobSpec, MisfirePolicy } from '../../src/gen/herald/v1/job.js';
import { RunState, type Run } from '../../src/gen/herald/v1/run.js';
import { sleep } from '../raft-runtime/helpers/cluster.js';
import { allRuns, SchedulerCluster } from './helpers/process-cluster.js';

const DOWN_MS = 6_000;

function every1s(misfirePolicy: MisfirePolicy, startingDeadlineMs = 0): JobSpec {
  return JobSpec.fromPartial({ taskType: 'test', misfirePolicy, startingDeadlineMs, schedule: { kind: { $case: 'every', every: { intervalMs: 1000, anchorUnixMs: 0 } } } });
}

describe('whole-cluster restart (processes)', () => {
  let c: SchedulerCluster | undefined;
  afterAll(async () => c?.cleanup());

  it('applies SKIP / RUN_ONCE / RUN_ALL and starting deadlines to slots missed while the cluster was down', { timeout: 150_000 }, async () => {
    c = await SchedulerCluster.start({ misfireThresholdMs: 1000 });
    const w = c.startWorker('mw', { capacity: 50, sleepMs: 20 });
    await c.waitWorkersConnected([w]);
    await c.client.createJob(every1s(MisfirePolicy.MISFIRE_POLICY_SKIP), { id: 'skip' });
    await c.client.createJob(every1s(MisfirePolicy.MISFIRE_POLICY_RUN_ONCE), { id: 'once' });
    await c.client.createJob(every1s(MisfirePolicy.MISFIRE_POLICY_RUN_ALL), { id: 'all' });
    await c.client.createJob(every1s(MisfirePolicy.MISFIRE_POLICY_RUN_ALL, 500), { id: 'deadline' });
    await sleep(3_000);
    const ids = [...c.raft.nodes.keys()];
    const downAt = Date.now();
    await Promise.all(ids.map((id) => c!.raft.kill(id, 'SIGKILL')));
    await sleep(DOWN_MS);
    const upAt = Date.now();
    await Promise.all(ids.map((id) => c!.raft.start(id)));
    await c.raft.waitForLeader();
    await sleep(4_000);
    w.signal('SIGTERM');
    await w.exit;

    const runs = await c.stopAndInspect(async (fsm) => {
      const out = new Map<string, Run[]>();
      for (const id of ['skip', 'once', 'all', 'deadline']) out.set(id, await allRuns(fsm, id));
      return out;
    });
    // Slots whose time passed while every node was down (with a margin at both ends).
    const down = (r: Run[]) => r.filter((x) => x.slotUnixMs > downAt + 500 && x.slotUnixMs < upAt - 1500);
    const missedBy = (r: Run[], text: string) => r.filter((x) => x.state === RunState.RUN_STATE_MISSED && x.reason.includes(text));
    for (const [id, r] of runs) {
      // Every slot has a record (a run or an explicit MISSED), none twice.
      expect(r.length, id).toBeGreaterThanOrEqual(10);
      for (let i = 1; i < r.length; i++) expect(r[i]!.slotUnixMs - r[i - 1]!.slotUnixMs, id).toBe(1000);
      expect(down(r).length, id).toBeGreaterThanOrEqual(3);
      // Firing resumed after the restart.
      expect(r.some((x) => x.slotUnixMs > upAt + 1000 && x.state === RunState.RUN_STATE_SUCCEEDED), id).toBe(true);
    }
    const skip = runs.get('skip')!;
    expect(down(skip).every((x) => x.state === RunState.RUN_STATE_MISSED)).toBe(true);
    expect(missedBy(skip, 'MISFIRE_POLICY_SKIP').length).toBeGreaterThanOrEqual(3);

    const once = runs.get('once')!;
    const onceMisfired = missedBy(once, 'MISFIRE_POLICY_RUN_ONCE');
    expect(onceMisfired.length).toBeGreaterThanOrEqual(3);
    // Exactly one catch-up run among the misfired slots (older than the threshold when fired):
    // the latest one, created in the same fire as the MISSED records.
    const firedAt = onceMisfired[0]!.createdUnixMs;
    const catchUp = once.filter((x) => x.state !== RunState.RUN_STATE_MISSED && x.createdUnixMs === firedAt && x.slotUnixMs < firedAt - 1000);
    expect(catchUp.length).toBe(1);
    expect(catchUp[0]!.slotUnixMs).toBeGreaterThan(Math.max(...onceMisfired.map((x) => x.slotUnixMs)));
    expect(catchUp[0]!.state).toBe(RunState.RUN_STATE_SUCCEEDED);

    const all = runs.get('all')!;
    expect(all.filter((x) => x.state === RunState.RUN_STATE_MISSED)).toEqual([]);
    expect(down(all).every((x) => x.state === RunState.RUN_STATE_SUCCEEDED)).toBe(true);

    const deadline = runs.get('deadline')!;
    expect(down(deadline).every((x) => x.state === RunState.RUN_STATE_MISSED && x.reason.includes('starting deadline'))).toBe(true);
  });
});
