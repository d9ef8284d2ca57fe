// Worker failures on a real 3-node cluster with real worker processes: a worker killed mid-run
// loses its lease and another worker gets the run with a higher fencing token; a worker paused
// with SIGSTOP past its lease has its late result rejected after SIGCONT; a leader stopped with
// SIGTERM hands leadership over and redirects its workers, which keep their runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { waitFor } from '../raft-runtime/helpers/cluster.js';
import { SchedulerCluster } from './helpers/process-cluster.js';

const LEASE_MS = 1500;

function oneOff(taskType: string, inMs: number, leaseDurationMs = LEASE_MS): JobSpec {
  return JobSpec.fromPartial({ taskType, leaseDurationMs, schedule: { kind: { $case: 'at', at: { atUnixMs: Date.now() + inMs } } } });
}

describe('worker failures (processes)', () => {
  let c: SchedulerCluster;
  beforeAll(async () => {
    c = await SchedulerCluster.start({ leaseMs: LEASE_MS, heartbeatMs: 300 });
  }, 90_000);
  afterAll(async () => c?.cleanup());

  it('kill -9 of a worker mid-run: after lease expiry another worker runs it with a higher token', { timeout: 90_000 }, async () => {
    const a = c.startWorker('kill-a', { types: ['kill'], capacity: 1, sleepMs: 60_000 });
    await c.waitWorkersConnected([a]);
    await c.client.createJob(oneOff('kill', 200), { id: 'kill-job' });
    const first = await waitFor('worker a assigned', () => a.of('assigned')[0], 15_000);
    const b = c.startWorker('kill-b', { types: ['kill'], capacity: 1, sleepMs: 100 });
    await c.waitWorkersConnected([b]);
    const killedAt = Date.now();
    a.signal('SIGKILL');
    await a.exit;
    const second = await waitFor('worker b assigned', () => b.of('assigned').find((e) => e.runId === first.runId), 15_000);
    expect(second.token).toBeGreaterThan(first.token);
    expect(second.attempt).toBe(2);
    // Not before the lease could have expired (heartbeats stopped at the kill).
    expect(second.at - killedAt).toBeGreaterThanOrEqual(LEASE_MS - 400);
    await waitFor('b result accepted', () => b.of('ack').find((e) => e.runId === first.runId && e.accepted), 10_000);
    const run = await c.client.getRun(first.runId);
    expect(run.state).toBe(RunState.RUN_STATE_SUCCEEDED);
    expect(run.attempts.map((x) => x.fencingToken)).toEqual([first.token, second.token]);
  });

  it('a SIGSTOPped worker resumed after its lease expired has its late result rejected', { timeout: 90_000 }, async () => {
    const a = c.startWorker('stop-a', { types: ['stop'], capacity: 1, sleepMs: 800, reportAfterLoss: true });
    await c.waitWorkersConnected([a]);
    await c.client.createJob(oneOff('stop', 200), { id: 'stop-job' });
    const first = await waitFor('worker a assigned', () => a.of('assigned')[0], 15_000, 5);
    a.signal('SIGSTOP');
    const b = c.startWorker('stop-b', { types: ['stop'], capacity: 1, sleepMs: 100 });
    let secondToken = 0;
    try {
      const second = await waitFor('worker b assigned', () => b.of('assigned').find((e) => e.runId === first.runId), 15_000);
      secondToken = second.token;
      expect(second.token).toBeGreaterThan(first.token);
      await waitFor('b result accepted', () => b.of('ack').find((e) => e.runId === first.runId && e.accepted), 10_000);
    } finally {
      a.signal('SIGCONT');
    }
    const late = await waitFor('a late result answered', () => a.of('ack').find((e) => e.runId === first.runId && e.token === first.token), 10_000);
    expect(late.accepted).toBe(false);
    expect(a.of('finished').some((e) => e.runId === first.runId)).toBe(true); // it did report
    expect(a.of('leaseLost').some((e) => e.runId === first.runId && e.token === first.token)).toBe(true);
    const run = await c.client.getRun(first.runId);
    expect(run.state).toBe(RunState.RUN_STATE_SUCCEEDED);
    expect(run.attempts.map((x) => x.fencingToken)).toEqual([first.token, secondToken]);
  });

  it('SIGTERM of the leader hands leadership over; its workers are redirected and keep their runs', { timeout: 90_000 }, async () => {
    const w = c.startWorker('term-w', { types: ['term'], capacity: 1, sleepMs: 3000 });
    await c.waitWorkersConnected([w]);
    // A lease long enough to cover the hand-over and the reconnect on a loaded machine: the new
    // leader grants one lease duration from its takeover.
    await c.client.createJob(oneOff('term', 200, 10_000), { id: 'term-job' });
    const first = await waitFor('worker assigned', () => w.of('assigned')[0], 15_000);
    const leader = await c.raft.waitForLeader();
    const exit = await c.raft.kill(leader, 'SIGTERM');
    expect(exit.code).toBe(0);
    const redirect = w.of('redirect').find((r) => r.at >= first.at);
    expect(redirect?.leaderAddress).toBeTruthy();
    expect(redirect?.leaderId).not.toBe(leader);
    // Re-attached at the new leader, finished there: executed once, on its first attempt.
    await waitFor('result accepted', () => w.of('ack').find((e) => e.runId === first.runId && e.accepted), 20_000);
    expect(w.of('welcome').some((x) => x.adopted.some((h) => h.runId === first.runId)), JSON.stringify(w.events)).toBe(true);
    expect(w.of('assigned').filter((a) => a.runId === first.runId)).toHaveLength(1);
    expect(w.of('leaseLost')).toEqual([]);
    const run = await c.client.getRun(first.runId);
    expect(run.state).toBe(RunState.RUN_STATE_SUCCEEDED);
    expect(run.attempt).toBe(1);
  });
});
