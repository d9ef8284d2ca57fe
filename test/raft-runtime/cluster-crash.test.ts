import { afterEach, describe, expect, it } from 'vitest';
import { NodeRole } from '../../src/gen/herald/v1/cluster_service.js';
import { TestCluster, sleep, waitFor } from './helpers/cluster.js';
import { PutLoad } from './helpers/put-load.js';

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.cleanup();
  cluster = undefined;
});

async function checkAllAcked(c: TestCluster, acked: Map<string, string>): Promise<string[]> {
  const hashes: string[] = [];
  for (const id of c.nodes.keys()) {
    hashes.push(
      await c.withStateMachine(id, async (sm) => {
        const missing: string[] = [];
        for (const [k, v] of acked) {
          const got = await sm.getLocal(k);
          if (!got || got.toString() !== v) missing.push(k);
        }
        expect(missing, `acknowledged puts missing on ${id}`).toEqual([]);
        return sm.stateHash();
      }),
    );
  }
  return hashes;
}

describe('herald server: crashes', () => {
  it('kill -9 of the leader under load: a new leader within ~2 election timeouts, no acknowledged put lost, equal replicas; then kill -9 of every node keeps the state', async () => {
    cluster = await TestCluster.create({ size: 3 });
    await cluster.startAll();
    const leader = await cluster.waitForLeader();
    const others = ['n1', 'n2', 'n3'].filter((id) => id !== leader);
    const load = new PutLoad(cluster.kv, () => cluster!.runningIds(), { concurrency: 32, prefix: 'crash', timeoutMs: 3000 }).start();
    await waitFor('100 acknowledged puts', () => load.acked.size >= 100 || undefined, 30_000);

    const killedAt = Date.now();
    await cluster.kill(leader, 'SIGKILL');
    const newLeader = await cluster.waitForLeader(10_000, others);
    const electedAfterMs = Date.now() - killedAt;
    expect(others).toContain(newLeader);
    // Followers notice after one (randomized, <= 2x) election timeout and elect within another.
    expect(electedAfterMs).toBeLessThan(2 * cluster.maxElectionMs + 1500);

    const before = load.acked.size;
    await waitFor('puts acknowledged by the new leader', () => load.acked.size >= before + 100 || undefined, 30_000);

    // Heal: the old leader comes back as a follower and catches up.
    await cluster.start(leader);
    await sleep(300);
    await load.stop();
    await cluster.waitConverged();
    const st = await cluster.status(leader);
    expect(st.role).toBe(NodeRole.NODE_ROLE_FOLLOWER);

    await cluster.stopAll('SIGTERM');
    const hashes = await checkAllAcked(cluster, load.acked);
    expect(new Set(hashes).size).toBe(1);

    // kill -9 of every node at once (under load), restart: the same acknowledged state.
    await cluster.startAll();
    await cluster.waitForLeader();
    const load2 = new PutLoad(cluster.kv, () => cluster!.runningIds(), { concurrency: 16, prefix: 'all', timeoutMs: 3000 }).start();
    await waitFor('puts before the mass kill', () => load2.acked.size >= 60 || undefined, 30_000);
    await Promise.all(['n1', 'n2', 'n3'].map((id) => cluster!.kill(id, 'SIGKILL')));
    await load2.stop();
    await cluster.startAll();
    await cluster.waitForLeader();
    await cluster.waitConverged();
    await cluster.stopAll('SIGTERM');
    const all = new Map([...load.acked, ...load2.acked]);
    const hashes2 = await checkAllAcked(cluster, all);
    expect(new Set(hashes2).size).toBe(1);
  }, 150_000);
});
