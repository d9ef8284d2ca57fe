import { afterEach, describe, expect, it } from 'vitest';
import { NodeRole, ReplicationState } from '../../src/gen/herald/v1/cluster_service.js';
import { TestCluster, waitFor } from './helpers/cluster.js';
import { PutLoad } from './helpers/put-load.js';

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.cleanup();
  cluster = undefined;
});

describe('herald server: clusters of real processes', () => {
  it('a 3-node cluster elects one leader, commits concurrent proposals from every node, serves ReadIndex and status', async () => {
    cluster = await TestCluster.create({ size: 3 });
    await cluster.startAll();
    const leader = await cluster.waitForLeader();

    // 24 concurrent clients spread over all three nodes (followers forward to the leader).
    const load = new PutLoad(cluster.kv, () => ['n1', 'n2', 'n3'], { concurrency: 24, prefix: 'basic' }).start();
    await waitFor('300 acknowledged puts', () => load.acked.size >= 300 || undefined, 20_000);
    await load.stop();
    expect(load.failures.map((f) => f.error)).toEqual([]);

    // Every acknowledged put is readable through the log from any node.
    const someKey = [...load.acked.keys()][17]!;
    for (const id of ['n1', 'n2', 'n3']) {
      const r = await cluster.kv.forward(id, { op: 'get', key: someKey });
      expect(r.ok).toBe(true);
      expect(Buffer.from(r.value!).toString()).toBe(load.acked.get(someKey));
    }

    // ReadIndex on a follower: at least the index of the last acknowledged write.
    const write = await cluster.kv.forward(leader, { op: 'put', key: 'last', value: Buffer.from('1') });
    const follower = ['n1', 'n2', 'n3'].find((id) => id !== leader)!;
    expect(await cluster.kv.readIndex(follower)).toBeGreaterThanOrEqual(write.index);

    const commit = await cluster.waitConverged();
    const st = await cluster.status(leader);
    expect(st.role).toBe(NodeRole.NODE_ROLE_LEADER);
    expect(st.clusterId).toBe(cluster.clusterId);
    expect(st.members.map((m) => m.id).sort()).toEqual(['n1', 'n2', 'n3']);
    for (const m of st.members) {
      expect(m.healthy).toBe(true);
      expect(m.matchIndex).toBeGreaterThanOrEqual(commit);
      if (m.id !== leader) expect(m.replicationState).toBe(ReplicationState.REPLICATION_STATE_REPLICATE);
    }
    const fst = await cluster.status(follower);
    expect(fst.leaderId).toBe(leader);
    expect(fst.leaderAddress).toBe(`127.0.0.1:${cluster.nodes.get(leader)!.clientPort}`);
    // Cluster time comes from the quorum's heartbeat responses, which only the leader collects.
    expect(Math.abs(st.clusterTimeUnixMs - Date.now())).toBeLessThan(5000);

    // Replicas hold identical state.
    await cluster.stopAll();
    const hashes = await Promise.all(['n1', 'n2', 'n3'].map((id) => cluster!.withStateMachine(id, (sm) => sm.stateHash())));
    expect(new Set(hashes).size).toBe(1);
  }, 120_000);

  it('a 5-node cluster elects a leader and commits; a transfer moves leadership to the chosen node without failed proposals', async () => {
    cluster = await TestCluster.create({ size: 5 });
    await cluster.startAll();
    const leader = await cluster.waitForLeader();
    const ids = [...cluster.nodes.keys()];
    const load = new PutLoad(cluster.kv, () => ids, { concurrency: 16, prefix: 'five' }).start();
    await waitFor('150 acknowledged puts', () => load.acked.size >= 150 || undefined, 20_000);

    const target = ids.find((id) => id !== leader)!;
    // Asked on a follower: it is forwarded to the leader's client port.
    const via = ids.find((id) => id !== leader && id !== target)!;
    const r = await cluster.transfer(via, target);
    expect(r.leaderId).toBe(target);
    expect(await cluster.waitForLeader()).toBe(target);
    const before = load.acked.size;
    await waitFor('puts after the transfer', () => load.acked.size >= before + 100 || undefined, 20_000);
    await load.stop();
    expect(load.failures.map((f) => f.error)).toEqual([]);
  }, 120_000);
});
