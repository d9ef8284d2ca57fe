// A bootstrap member (named by --peers, so the configuration first lists it without an
// incarnation) restarted on a wiped data dir with its original command: the leader bound every
// member's incarnation once it heard it, so the wiped node is a new incarnation the peers take no
// votes or answers from. It cannot vote a second time in a term it voted in, does not disrupt
// the cluster, and gets no entries; the cluster keeps committing with the other two. (Replacing
// it the operator's way is the membership test's: test/membership/membership-change.test.ts.)
import { rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { TestCluster, waitFor } from './helpers/cluster.js';

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.cleanup();
  cluster = undefined;
});

const IDS = ['n1', 'n2', 'n3'];

describe('herald server: a bootstrap member restarted on a wiped data dir', () => {
  it('is refused as a new incarnation once the leader bound the bootstrap members', async () => {
    cluster = await TestCluster.create({ size: 3, snapshotEntries: 100_000 });
    await cluster.startAll();
    const leader = await cluster.waitForLeader();
    const wiped = IDS.find((id) => id !== leader)!;
    const bound = async () => {
      const views = await Promise.all(IDS.map((id) => cluster!.status(id)));
      return views.every((v) => v.members.length === 3 && v.members.every((m) => m.incarnation !== '')) ? views : undefined;
    };
    // Every node's configuration lists an incarnation for every member (the binder's changes).
    const views = await waitFor('every member bound to its incarnation', bound, 15_000, 100);
    const before = views[IDS.indexOf(leader)]!.members.find((m) => m.id === wiped)!.incarnation;
    for (let i = 0; i < 50; i++) await cluster.kv.forward(leader, { op: 'put', key: `k${i}`, value: Buffer.alloc(100, i) });
    await cluster.waitConverged();
    const termBefore = (await cluster.status(leader)).term;

    await cluster.kill(wiped, 'SIGKILL');
    await rm(cluster.nodes.get(wiped)!.dataDir, { recursive: true, force: true });
    await cluster.start(wiped); // its original command: bootstrap flags, an empty data dir
    const fresh = await cluster.status(wiped);
    expect(fresh.members.find((m) => m.id === wiped)!.incarnation).not.toBe(before);

    // The other two keep committing; the wiped node gets nothing and moves no one's term.
    const w = await cluster.kv.forward(leader, { op: 'put', key: 'after', value: Buffer.from('yes') });
    await new Promise((r) => setTimeout(r, 3_000)); // several election timeouts of the wiped node
    const others = IDS.filter((id) => id !== wiped);
    for (const id of others) {
      const st = await cluster.status(id);
      expect(st.appliedIndex).toBeGreaterThanOrEqual(w.index);
      expect(st.term).toBe(termBefore);
      expect(st.members.find((m) => m.id === wiped)!.incarnation).toBe(before);
    }
    expect((await cluster.status(wiped)).appliedIndex).toBeLessThan(w.index);
    expect((await cluster.waitForLeader(5_000, others))).toBe(leader);
  }, 90_000);
});
