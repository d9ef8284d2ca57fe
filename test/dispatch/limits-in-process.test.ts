// Dispatch limits end to end on in-process nodes with a raw worker: a job's max_concurrent holds
// across manual triggers and shows on its pending runs; a task type's rate paces starts; after the
// leader is stopped the new leader counts the runs it adopts and admits no more than the limit.
import { afterEach, describe, expect, it } from 'vitest';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { sleep, waitFor } from '../raft-runtime/helpers/cluster.js';
import { RawWorker, type TimedEvent } from './fixtures/raw-worker.js';
import { startInProcessCluster, type InProcessCluster } from './helpers/in-process-cluster.js';

/** Most handlers running at once, from assignment to finish (per run id and token). */
function maxConcurrent(events: readonly TimedEvent[]): number {
  const points: { t: number; d: number }[] = [];
  for (const e of events) {
    if (e.type === 'assigned') points.push({ t: e.at, d: 1 });
    if (e.type === 'finished') points.push({ t: e.at, d: -1 });
  }
  points.sort((a, b) => a.t - b.t || a.d - b.d);
  let open = 0;
  let max = 0;
  for (const p of points) max = Math.max(max, (open += p.d));
  return max;
}

const manualJob = (taskType: string, p: object = {}) =>
  JobSpec.fromPartial({ taskType, schedule: { kind: { $case: 'every', every: { intervalMs: 3_600_000, anchorUnixMs: 0 } } }, startUnixMs: Date.now() + 3_600_000, ...p });

describe('dispatch limits (in-process)', () => {
  let c: InProcessCluster | undefined;
  const workers: RawWorker[] = [];
  afterEach(async () => {
    for (const w of workers.splice(0)) w.stop();
    await c?.stop();
    c = undefined;
  });

  it('holds a job to max_concurrent across manual runs and says so on its pending runs', { timeout: 60_000 }, async () => {
    c = await startInProcessCluster(1);
    await c.client.createJob(manualJob('mc', { maxConcurrent: 1 }), { id: 'one-at-a-time' });
    await c.client.createJob(manualJob('mc'), { id: 'free' });
    const w = new RawWorker({ endpoints: c.endpoints, workerId: 'w', taskTypes: ['mc'], capacity: 10, handler: () => sleep(1_000).then(() => true) });
    workers.push(w);
    w.start();
    await Promise.all([
      ...Array.from({ length: 4 }, () => c!.client.triggerJob('one-at-a-time', { ignoreOverlap: true })),
      ...Array.from({ length: 3 }, () => c!.client.triggerJob('free', { ignoreOverlap: true })),
    ]);
    const reason = await waitFor(
      'a held run with its reason',
      async () => (await c!.client.listRuns({ jobId: 'one-at-a-time', state: 'pending' })).items.find((r) => r.waitingFor)?.waitingFor,
      20_000,
      20,
    );
    expect(reason).toBe('job one-at-a-time at max_concurrent 1');
    await waitFor('7 runs finished', () => w.events.filter((e) => e.type === 'finished').length >= 7, 40_000);
    const of = (job: string) => w.events.filter((e) => ('jobId' in e ? e.jobId === job : false) || ('runId' in e && e.runId.startsWith(`${job}@`)));
    expect(maxConcurrent(of('one-at-a-time'))).toBe(1);
    // The other job's runs were not held behind it.
    expect(maxConcurrent(of('free'))).toBeGreaterThan(1);
  });

  it('starts a rate-limited task type at its rate', { timeout: 60_000 }, async () => {
    c = await startInProcessCluster(1);
    await c.client.setTaskType('paced', { ratePerSecond: 5, burst: 1 });
    await c.client.createJob(manualJob('paced'), { id: 'paced' });
    const w = new RawWorker({ endpoints: c.endpoints, workerId: 'w', taskTypes: ['paced'], capacity: 50, handler: async () => true });
    workers.push(w);
    w.start();
    const N = 11;
    for (let i = 0; i < N; i++) await c.client.triggerJob('paced', { ignoreOverlap: true });
    await waitFor(`${N} runs assigned`, () => w.events.filter((e) => e.type === 'assigned').length >= N, 30_000);
    const starts = w.events.filter((e) => e.type === 'assigned').map((e) => e.at);
    const spanMs = starts[N - 1]! - starts[0]!;
    // Ten gaps of 200 ms at 5/s with a burst of 1: never faster; a loaded machine may be slower.
    expect(spanMs).toBeGreaterThanOrEqual(10 * 200 - 50);
    const perSecond = ((N - 1) / spanMs) * 1000;
    console.log(JSON.stringify({ test: 'rate', configured: 5, observedPerSecond: Number(perSecond.toFixed(2)), spanMs }));
  });

  it('a new leader counts the runs it adopts and admits no more than max_running', { timeout: 90_000 }, async () => {
    c = await startInProcessCluster(3, { defaultLeaseMs: 5_000 });
    await c.client.setTaskType('fo', { maxRunning: 2 });
    await c.client.createJob(manualJob('fo'), { id: 'fo' });
    const w = new RawWorker({ endpoints: c.endpoints, workerId: 'w', taskTypes: ['fo'], capacity: 10, handler: () => sleep(3_000).then(() => true) });
    workers.push(w);
    w.start();
    for (let i = 0; i < 6; i++) await c.client.triggerJob('fo', { ignoreOverlap: true });
    await waitFor('two runs running', () => w.events.filter((e) => e.type === 'assigned').length >= 2, 20_000);
    const old = await c.leader();
    await old.stop({ transfer: false, graceMs: 200 });
    const next = await waitFor('a new leader', () => c!.nodes.find((n) => n !== old && n.leaderServices()?.ready), 20_000, 20);
    // The runs the old leader started are counted before anything is dispatched.
    expect(next.leaderServices()!.leases.running.ofTaskType('fo')).toBeGreaterThanOrEqual(1);
    await waitFor('6 runs finished', () => w.events.filter((e) => e.type === 'finished').length >= 6, 60_000);
    expect(maxConcurrent(w.events)).toBeLessThanOrEqual(2);
    await waitFor(
      'all succeeded',
      async () => (await c!.client.listRuns({ jobId: 'fo', state: 'succeeded' })).items.length === 6,
      20_000,
    );
    expect((await c.client.listRuns({ jobId: 'fo', state: RunState.RUN_STATE_RUNNING })).items).toEqual([]);
  });
});
