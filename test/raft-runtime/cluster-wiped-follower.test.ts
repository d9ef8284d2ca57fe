// A follower restarted with its data dir wiped rejoins with an empty log while the leader's
// progress still says it matched far ahead. It must be caught up (here with entries: the log is
// not compacted, so no snapshot would ever rescue it) and serve the same state as the others.
import { rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { TestCluster, waitFor } from './helpers/cluster.js';

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.cleanup();
  cluster = undefined;
});

describe('herald server: a follower with a wiped data dir', () => {
  it('is caught up by the leader even though the log was never compacted', async () => {
    cluster = await TestCluster.create({ size: 3, snapshotEntries: 100_000 });
    await cluster.startAll();
    const leader = await cluster.waitForLeader();
    const lagger = ['n1', 'n2', 'n3'].find((id) => id !== leader)!;
    for (let i = 0; i < 250; i++) await cluster.kv.forward(leader, { op: 'put', key: `k${i}`, value: Buffer.alloc(100, i) });
    await cluster.waitConverged();
    await cluster.kill(lagger, 'SIGKILL');
    await rm(cluster.nodes.get(lagger)!.dataDir, { recursive: true, force: true });
    await cluster.start(lagger);
    const w = await cluster.kv.forward(leader, { op: 'put', key: 'after', value: Buffer.from('yes') });
    await waitFor('the wiped follower applies everything', async () => ((await cluster!.status(lagger)).appliedIndex >= w.index) || undefined, 30_000, 100);
    await cluster.stopAll();
    const hashes = await Promise.all(['n1', 'n2', 'n3'].map((id) => cluster!.withStateMachine(id, (sm) => sm.stateHash())));
    expect(new Set(hashes).size).toBe(1);
    await cluster.withStateMachine(lagger, async (sm) => {
      expect((await sm.getLocal('k7'))!.equals(Buffer.alloc(100, 7))).toBe(true);
    });
  }, 90_000);
});
