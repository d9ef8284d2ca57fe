import { afterEach, describe, expect, it } from 'vitest';
import { encodeKvCommand } from '../../src/raft/kv/kv-command.js';
import { waitFor } from './helpers/cluster.js';
import { startInProcessKv, type InProcessKv } from './helpers/in-process-kv.js';

let kv: InProcessKv | undefined;
afterEach(async () => {
  await kv?.stop();
  kv = undefined;
});

describe('in-process cluster with the transport fault hook', () => {
  it('a follower cut off from its peers misses commits, then catches up when the link heals', async () => {
    kv = await startInProcessKv('partition');
    const { nodes, members } = kv;
    const leader = await waitFor('a leader', () => nodes.find((n) => n.driver.isLeader()));
    const cut = nodes.find((n) => n !== leader)!;
    for (const n of nodes) {
      if (n === cut) for (const m of members) n.transport.setBlocked(m.id, true);
      else n.transport.setBlocked(cut.id, true);
    }
    let last = 0;
    for (let i = 0; i < 50; i++) last = (await leader.propose(encodeKvCommand({ op: 'put', key: `p${i}`, value: Buffer.from('v') }))).index;
    // The majority commits without it; it has not seen those entries.
    expect(cut.driver.appliedIndex()).toBeLessThan(last);

    for (const n of nodes) for (const m of members) n.transport.setBlocked(m.id, false);
    await waitFor('the healed follower to catch up', () => cut.driver.appliedIndex() >= last || undefined, 15_000);
    // The other follower learns the last commit index with the next append or heartbeat and may
    // apply a window later: compare the states once every node has applied through `last`.
    await waitFor('every node to apply the last put', () => nodes.every((n) => n.driver.appliedIndex() >= last) || undefined, 15_000);
    const hashes = await Promise.all(nodes.map((n) => n.stateMachine.stateHash()));
    expect(new Set(hashes).size).toBe(1);
  }, 60_000);
});
