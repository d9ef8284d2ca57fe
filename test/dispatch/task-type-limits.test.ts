// Acceptance of task type limits on a real 3-node cluster: max_running 3 under a herd of 1,000
// runs with three worker processes of capacity 100. Concurrency is observed from the workers
// (assignment to finish, across all three: a superset of each handler's execution), so the
// limit is checked where it matters; every run still finishes exactly once. A held-back run
// shows why it waits (Run.waiting_for).
import { afterAll, describe, expect, it } from 'vitest';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { waitFor } from '../raft-runtime/helpers/cluster.js';
import { createJobsReliably, SchedulerCluster } from './helpers/process-cluster.js';

const N = 1_000;
const MAX_RUNNING = 3;

/** Most intervals open at once (an end at the same instant as a start closes first). */
function maxOverlap(intervals: { start: number; end: number }[]): number {
  const points = intervals.flatMap((i) => [
    { t: i.start, d: 1 },
    { t: i.end, d: -1 },
  ]);
  points.sort((a, b) => a.t - b.t || a.d - b.d);
  let open = 0;
  let max = 0;
  for (const p of points) max = Math.max(max, (open += p.d));
  return max;
}

describe('task type limits (processes)', () => {
  let c: SchedulerCluster | undefined;
  afterAll(async () => c?.cleanup());

  it('max_running 3 holds under a herd of 1,000 runs on 3 workers of capacity 100, and all finish', { timeout: 600_000 }, async () => {
    c = await SchedulerCluster.start({ leaseMs: 30_000, misfireThresholdMs: 60_000 });
    await c.client.setTaskType('test', { maxRunning: MAX_RUNNING });
    expect((await c.client.listTaskTypes()).map((t) => [t.taskType, t.maxRunning])).toEqual([['test', MAX_RUNNING]]);
    const workers = ['la', 'lb', 'lc'].map((id) => c!.startWorker(id, { capacity: 100, sleepMs: 2 }));
    await c.waitWorkersConnected(workers);
    const at = Date.now() + 4_000;
    const spec = JobSpec.fromPartial({ taskType: 'test', schedule: { kind: { $case: 'at', at: { atUnixMs: at } } } });
    await createJobsReliably(
      c.client,
      Array.from({ length: N }, (_, k) => ({ id: `lim-${k}`, spec })),
    );

    // While the herd drains, a pending run says what holds it back.
    let reason = '';
    await waitFor(
      'a pending run with waiting_for',
      async () => {
        const page = await c!.client.listRuns({ state: 'pending' }, { deadlineMs: 5_000 }).catch(() => undefined);
        reason = page?.items.find((r) => r.waitingFor !== '')?.waitingFor ?? reason;
        return reason !== '';
      },
      30_000,
      100,
    );
    expect(reason).toBe(`task type test at max_running ${MAX_RUNNING}`);

    const finished = () => workers.reduce((n, w) => n + w.of('finished').length, 0);
    // Bounded by commit rounds (a run's slot is free again once its result arrives; the next run
    // needs a claim committed): seconds on an idle machine, minutes on an overloaded shared one.
    await waitFor(`${N} runs finished`, () => finished() >= N, 400_000, 100);
    await waitFor(`${N} results accepted`, () => workers.reduce((n, w) => n + w.of('ack').filter((a) => a.accepted).length, 0) >= N, 20_000, 100);

    const intervals = workers.flatMap((w) => {
      const start = new Map(w.of('assigned').map((a) => [`${a.runId}/${a.token}`, a.at]));
      return w.of('finished').map((f) => ({ start: start.get(`${f.runId}/${f.token}`)!, end: f.at }));
    });
    expect(intervals).toHaveLength(N);
    expect(intervals.every((i) => i.start !== undefined && i.start <= i.end)).toBe(true);
    const observed = maxOverlap(intervals);
    expect(observed).toBeLessThanOrEqual(MAX_RUNNING);
    // The limit, not the herd, was the bound: it was reached.
    expect(observed).toBe(MAX_RUNNING);
    const assigned = workers.flatMap((w) => w.of('assigned'));
    expect(new Set(assigned.map((a) => a.runId)).size).toBe(N);
    expect(assigned.length).toBe(N);

    const counts = await c.stopAndInspect((fsm) => fsm.runCounts());
    expect(counts.get(RunState.RUN_STATE_SUCCEEDED)).toBe(N);
    expect(counts.get(RunState.RUN_STATE_PENDING) ?? 0).toBe(0);
    console.log(JSON.stringify({ test: 'task-type-limits', runs: N, maxRunning: MAX_RUNNING, observedMaxConcurrent: observed, drainMsAfterDue: Math.max(...intervals.map((i) => i.end)) - at }));
  });
});
