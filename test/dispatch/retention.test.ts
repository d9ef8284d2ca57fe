// Retention and a bounded backlog on a real 3-node cluster with no worker at all (issue 30): runs
// that end MISSED (starting deadline), SKIPPED (FORBID behind a run that never starts), CANCELLED
// (REPLACE), MISSED "backlog full" or DEAD (a worker whose handler fails, no retries) are trimmed
// to max_runs on every replica, also across a kill -9 of the leader in the middle (the new leader
// reads what is due from the replicated trim index); a paused job's runs older than max_age go
// within a trim round, with the leader killed halfway through that age; and the leader's watchdog
// names the task type nobody serves in `cluster status`.
import { afterAll, describe, expect, it } from 'vitest';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { sleep } from '../raft-runtime/helpers/cluster.js';
import { allRuns, SchedulerCluster } from './helpers/process-cluster.js';

const MAX_RUNS = 10;
/** trimSlack(10) = 1 run, plus the runs one trim round and a deadline sweep may leave behind. */
const SLACK = 3;
/** Long enough that the leader kill below falls halfway through the paused job's ageing. */
const MAX_AGE_MS = 10_000;

function every1s(p: Record<string, unknown>): JobSpec {
  return JobSpec.fromPartial({ taskType: 'nobody', schedule: { kind: { $case: 'every', every: { intervalMs: 1000, anchorUnixMs: 0 } } }, ...p } as never);
}

describe('retention and bounded backlog (processes, no worker)', () => {
  let c: SchedulerCluster | undefined;
  afterAll(async () => c?.cleanup());

  it('every outcome is trimmed to max_runs on every replica across a leader kill; backlog stops at max_pending_runs; idle runs age out', { timeout: 120_000 }, async () => {
    c = await SchedulerCluster.start({ extraArgs: ['--trim-interval-ms', '100', '--watchdog-interval-ms', '300'] });
    const retention = { maxRuns: MAX_RUNS };
    const t0 = Date.now();
    await c.client.createJob(every1s({ startingDeadlineMs: 300, retention }), { id: 'missed' });
    await c.client.createJob(every1s({ overlapPolicy: 2, retention }), { id: 'skipped' }); // FORBID
    await c.client.createJob(every1s({ overlapPolicy: 4, retention }), { id: 'cancelled' }); // REPLACE
    await c.client.createJob(every1s({ maxPendingRuns: 4, retention }), { id: 'backlog' });
    await c.client.createJob(every1s({ startingDeadlineMs: 300, retention: { maxAgeMs: MAX_AGE_MS } }), { id: 'aged' });
    // The one served task type: every attempt fails and there are no retries, so each run ends DEAD.
    await c.client.createJob(every1s({ taskType: 'test', payload: Buffer.from('{"fail":true}'), retry: { maxAttempts: 1 }, retention }), { id: 'dead' });
    const worker = c.startWorker('w1', { types: ['test'], capacity: 4, quiet: true });
    await c.waitWorkersConnected([worker]);

    await sleep(8_000);
    // The watchdog flags the task type nobody serves, in the leader's status.
    const leader = await c.raft.waitForLeader();
    const status = await c.client.status({ address: `127.0.0.1:${c.raft.nodes.get(leader)!.clientPort}` });
    expect(status.unservedTaskTypes.map((u) => u.taskType)).toEqual(['nobody']);
    await c.client.pauseJob('aged', 'idle from now on');
    const pausedAt = Date.now();

    // Halfway through the paused job's max_age: the runs that age out after this are the new leader's to trim.
    await sleep(MAX_AGE_MS / 2);
    await c.raft.kill(leader, 'SIGKILL');
    await sleep(2_000);
    // Back as a follower: it catches up (trims included) like every replica.
    await c.raft.start(leader);
    await sleep(10_000);
    const end = Date.now();
    // Idle for longer than max_age plus a trim round: its history is gone.
    expect(end - pausedAt).toBeGreaterThan(MAX_AGE_MS + 2000);
    worker.proc.kill('SIGTERM');

    await c.raft.stopAll('SIGTERM');
    const perNode: Record<string, Record<string, number>> = {};
    for (const id of c.raft.nodes.keys()) {
      perNode[id] = await c.withFsm(id, async (fsm) => {
        const out: Record<string, number> = {};
        for (const job of ['missed', 'skipped', 'cancelled', 'backlog', 'aged', 'dead']) {
          const runs = await allRuns(fsm, job);
          out[job] = runs.length;
          if (job === 'aged') continue;
          // Slots kept coming all along (about one a second): trimming, not a stall, bounds them.
          expect(runs.at(-1)!.slotUnixMs - t0, `${id} ${job}`).toBeGreaterThan(20_000);
          const expected = { missed: RunState.RUN_STATE_MISSED, skipped: RunState.RUN_STATE_SKIPPED, cancelled: RunState.RUN_STATE_CANCELLED, backlog: RunState.RUN_STATE_MISSED, dead: RunState.RUN_STATE_DEAD }[job]!;
          expect(runs.filter((r) => r.state === expected).length, `${id} ${job}`).toBeGreaterThan(MAX_RUNS / 2);
        }
        const backlog = await allRuns(fsm, 'backlog');
        expect(backlog.filter((r) => r.state === RunState.RUN_STATE_PENDING)).toHaveLength(4);
        expect(backlog.filter((r) => r.state === RunState.RUN_STATE_MISSED).every((r) => r.reason === 'backlog full (4 pending)')).toBe(true);
        return out;
      });
    }
    console.log(JSON.stringify({ test: 'retention', elapsedMs: end - t0, runsPerJobPerNode: perNode }));
    for (const [id, counts] of Object.entries(perNode)) {
      // At most max_runs terminal runs (plus the slack), plus the active ones: FORBID's one pending
      // run, REPLACE's newest, the backlog's four.
      expect(counts.missed, id).toBeLessThanOrEqual(MAX_RUNS + SLACK);
      expect(counts.skipped, id).toBeLessThanOrEqual(MAX_RUNS + SLACK + 1);
      expect(counts.cancelled, id).toBeLessThanOrEqual(MAX_RUNS + SLACK + 1);
      expect(counts.backlog, id).toBeLessThanOrEqual(MAX_RUNS + SLACK + 4);
      // DEAD: the one run a worker may hold at the end besides the terminal ones.
      expect(counts.dead, id).toBeLessThanOrEqual(MAX_RUNS + SLACK + 1);
      expect(counts.aged, id).toBe(0);
    }
  });
});
