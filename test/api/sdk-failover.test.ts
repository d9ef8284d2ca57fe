import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { every } from '../../src/client/job-spec-builders.js';
import { SchedulerCluster } from '../dispatch/helpers/process-cluster.js';

// The SDK against real `herald server` processes: it finds the leader on its own, and its
// retries (same idempotency key) carry creates across a kill -9 of the leader without
// creating any job twice.
describe('HeraldClient against a 3-node cluster with a leader kill', () => {
  let cluster: SchedulerCluster;

  beforeAll(async () => {
    cluster = await SchedulerCluster.start({ size: 3, tickMs: 50, electionTicks: 10 });
  }, 90_000);

  afterAll(async () => {
    await cluster?.cleanup();
  });

  it('discovers the leader, keeps creating through a leader kill, and never duplicates a keyed create', async () => {
    const client = cluster.client;
    const status = await client.status();
    const leaderId = await cluster.raft.waitForLeader();
    expect(status.leaderId).toBe(leaderId);

    const spec = { taskType: 'failover-probe', schedule: every('1h'), labels: { suite: 'sdk-failover' } };
    const total = 60;
    const created = new Map<number, string>();
    let killed = false;
    for (let i = 0; i < total; i++) {
      if (i === 20) {
        // Kill the leader with creates in flight right behind it.
        const pending = Array.from({ length: 5 }, (_, k) =>
          client.createJob(spec, { idempotencyKey: `sdk-failover-${i + k}`, deadlineMs: 30_000 }).then((r) => created.set(i + k, r.job.id)),
        );
        await cluster.raft.kill(leaderId, 'SIGKILL');
        killed = true;
        await Promise.all(pending);
        i += 4;
        continue;
      }
      const r = await client.createJob(spec, { idempotencyKey: `sdk-failover-${i}`, deadlineMs: 30_000 });
      created.set(i, r.job.id);
    }
    expect(killed).toBe(true);
    expect(created.size).toBe(total);

    // A new leader, different from the killed one, serves the same client.
    const after = await client.status();
    expect(after.leaderId).not.toBe('');
    expect(after.leaderId).not.toBe(leaderId);

    // Retrying every create with its key returns the first job: nothing is created twice.
    for (const [i, id] of created) {
      const again = await client.createJob(spec, { idempotencyKey: `sdk-failover-${i}` });
      expect(again.created).toBe(false);
      expect(again.job.id).toBe(id);
    }
    const ids: string[] = [];
    for await (const job of client.iterateJobs({ labels: { suite: 'sdk-failover' } })) ids.push(job.id);
    expect(ids.sort()).toEqual([...created.values()].sort());
  }, 120_000);
});
