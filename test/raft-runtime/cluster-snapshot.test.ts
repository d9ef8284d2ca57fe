import { afterEach, describe, expect, it } from 'vitest';
import { TestCluster, waitFor } from './helpers/cluster.js';
import { PutLoad } from './helpers/put-load.js';

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.cleanup();
  cluster = undefined;
});

describe('herald server: log compaction and InstallSnapshot', () => {
  it('a follower stopped while the log is compacted past it catches up through InstallSnapshot', async () => {
    cluster = await TestCluster.create({ size: 3, snapshotEntries: 100, compactionKeep: 20 });
    await cluster.startAll();
    const leader = await cluster.waitForLeader();
    const lagger = ['n1', 'n2', 'n3'].find((id) => id !== leader)!;
    const live = ['n1', 'n2', 'n3'].filter((id) => id !== lagger);

    // Big values so the snapshot spans several chunks.
    for (let i = 0; i < 20; i++) await cluster.kv.forward(leader, { op: 'put', key: `big${i}`, value: Buffer.alloc(60_000, i) });
    await cluster.waitConverged();
    const laggerApplied = (await cluster.status(lagger)).appliedIndex;
    await cluster.kill(lagger, 'SIGKILL');

    const load = new PutLoad(cluster.kv, () => live, { concurrency: 16, prefix: 'snap' }).start();
    await waitFor('the leader to compact past the stopped follower', async () => {
      const st = await cluster!.status(leader);
      return st.snapshotIndex > laggerApplied + 150 || undefined;
    }, 30_000);
    await load.stop();

    await cluster.start(lagger);
    await cluster.waitConverged();
    const ls = await cluster.status(lagger);
    expect(ls.snapshotIndex).toBeGreaterThan(laggerApplied);
    expect(cluster.nodes.get(lagger)!.stderr).toContain('"msg":"snapshot installed"');
    // Sent by whichever node led at the time (leadership may move on a loaded machine). The
    // sender logs once it has the receiver's answer, which may come after the follower caught up
    // (the snapshot can hold everything committed), so wait for the line rather than expect it.
    await waitFor('a live node to log "snapshot sent"', () => live.some((id) => cluster!.nodes.get(id)!.stderr.includes('"msg":"snapshot sent"')) || undefined, 10_000);

    // Writes after the snapshot replicate normally to the restored follower.
    const w = await cluster.kv.forward(leader, { op: 'put', key: 'after', value: Buffer.from('yes') });
    await waitFor('follower applies the post-snapshot write', async () => ((await cluster!.status(lagger)).appliedIndex >= w.index) || undefined);

    await cluster.stopAll();
    const hashes = await Promise.all(['n1', 'n2', 'n3'].map((id) => cluster!.withStateMachine(id, (sm) => sm.stateHash())));
    expect(new Set(hashes).size).toBe(1);
    await cluster.withStateMachine(lagger, async (sm) => {
      expect((await sm.getLocal('big7'))!.equals(Buffer.alloc(60_000, 7))).toBe(true);
      const missing: string[] = [];
      for (const [k, v] of load.acked) if ((await sm.getLocal(k))?.toString() !== v) missing.push(k);
      expect(missing).toEqual([]);
    });
  }, 120_000);

  it('big commands trigger snapshots by bytes, and the log kept behind one is bounded by bytes too', async () => {
    // Entry counts alone would never snapshot here (100,000) and would keep every entry (5,000):
    // only the byte limits (300 KB applied, 100 KB kept) can make the stopped follower need a snapshot.
    cluster = await TestCluster.create({ size: 3, snapshotEntries: 100_000, snapshotBytes: 300_000, compactionKeepBytes: 100_000 });
    await cluster.startAll();
    const leader = await cluster.waitForLeader();
    const lagger = ['n1', 'n2', 'n3'].find((id) => id !== leader)!;
    await cluster.kv.forward(leader, { op: 'put', key: 'first', value: Buffer.from('x') });
    await cluster.waitConverged();
    await cluster.kill(lagger, 'SIGKILL');

    for (let i = 0; i < 20; i++) await cluster.kv.forward(leader, { op: 'put', key: `big${i}`, value: Buffer.alloc(60_000, i) });
    await waitFor('the leader to snapshot by bytes', async () => ((await cluster!.status(leader)).snapshotIndex > 0) || undefined, 30_000);

    await cluster.start(lagger);
    await cluster.waitConverged();
    // 1.2 MB behind, with at most 100 KB of log kept: it can only have caught up from a snapshot.
    expect(cluster.nodes.get(lagger)!.stderr).toContain('"msg":"snapshot installed"');
    await cluster.stopAll();
    await cluster.withStateMachine(lagger, async (sm) => {
      expect((await sm.getLocal('big19'))!.equals(Buffer.alloc(60_000, 19))).toBe(true);
    });
  }, 120_000);
});
