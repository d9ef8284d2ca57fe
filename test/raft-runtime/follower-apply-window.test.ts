// A follower gathers committed entries over its apply window and applies them in one call (one
// state machine transaction), while the leader applies as entries commit; a read on the follower,
// or the follower becoming leader, ends the window at once.
import { afterEach, describe, expect, it } from 'vitest';
import { encodeKvCommand } from '../../src/raft/kv/kv-command.js';
import { KvStateMachine } from '../../src/raft/kv/kv-state-machine.js';
import type { HeraldNode } from '../../src/server/node/herald-node.js';
import { waitFor } from './helpers/cluster.js';
import { startInProcessKv, type InProcessKv } from './helpers/in-process-kv.js';

let kv: InProcessKv | undefined;
let nodes: HeraldNode[] = [];
afterEach(async () => {
  await kv?.stop();
  kv = undefined;
  nodes = [];
});

/** Apply calls per node. */
const calls = new Map<string, number>();

async function cluster(windowMs: number): Promise<{ leader: HeraldNode; followers: HeraldNode[] }> {
  calls.clear();
  kv = await startInProcessKv('apply-window', {
    followerApplyWindowMs: windowMs,
    stateMachine: async (id, d) => {
      const sm = await KvStateMachine.open(d);
      const apply = sm.apply.bind(sm);
      sm.apply = (entries) => {
        calls.set(id, (calls.get(id) ?? 0) + 1);
        return apply(entries);
      };
      return sm;
    },
  });
  nodes = kv.nodes;
  const leader = await waitFor('a leader', () => nodes.find((n) => n.driver.isLeader()));
  // The leader's no-op is applied everywhere before the scenario starts counting (a read on a
  // follower ends its window).
  await Promise.all(nodes.map((n) => n.readIndex({ timeoutMs: 10_000 })));
  calls.clear();
  return { leader, followers: nodes.filter((n) => n !== leader) };
}

const put = (i: number): Uint8Array => encodeKvCommand({ op: 'put', key: `k${i}`, value: Buffer.from(`v${i}`) });

describe('a follower apply window', () => {
  it('applies what committed over the window in few calls, the leader one call per commit, and all converge', async () => {
    const { leader, followers } = await cluster(400);
    let last = 0;
    // One at a time: each commits in its own Ready, so the leader applies each on its own.
    for (let i = 0; i < 30; i++) last = (await leader.propose(put(i))).index;
    await waitFor('the followers to apply everything', () => followers.every((f) => f.driver.appliedIndex() >= last) || undefined, 10_000);

    const leaderCalls = calls.get(leader.id) ?? 0;
    expect(leaderCalls).toBeGreaterThanOrEqual(30);
    for (const f of followers) {
      const n = calls.get(f.id) ?? 0;
      expect(n).toBeGreaterThan(0);
      expect(n).toBeLessThanOrEqual(leaderCalls / 3);
    }
    const hashes = await Promise.all(nodes.map((n) => n.stateMachine.stateHash()));
    expect(new Set(hashes).size).toBe(1);
  }, 60_000);

  it('without a window a follower applies as entries commit', async () => {
    const { leader, followers } = await cluster(0);
    let last = 0;
    for (let i = 0; i < 30; i++) last = (await leader.propose(put(i))).index;
    await waitFor('the followers to apply everything', () => followers.every((f) => f.driver.appliedIndex() >= last) || undefined, 10_000);
    // Each commit reaches a follower with the next append or heartbeat; a few may share one.
    for (const f of followers) expect(calls.get(f.id) ?? 0).toBeGreaterThan(10);
  }, 60_000);

  it('a read on a follower ends its window instead of waiting it out', async () => {
    const { leader, followers } = await cluster(20_000);
    const last = (await leader.propose(put(1))).index;
    const f = followers[0]!;
    const t0 = Date.now();
    const readIndex = await f.readIndex({ timeoutMs: 10_000 });
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(readIndex).toBeGreaterThanOrEqual(last);
    expect(f.driver.appliedIndex()).toBeGreaterThanOrEqual(last);
  }, 60_000);

  it('a follower that becomes leader applies what it held at once', async () => {
    const { leader, followers } = await cluster(20_000);
    let last = 0;
    for (let i = 0; i < 5; i++) last = (await leader.propose(put(i))).index;
    const next = followers[0]!;
    expect(next.driver.appliedIndex()).toBeLessThan(last);
    const t0 = Date.now();
    await leader.transferLeadership(next.id);
    await waitFor('the new leader to apply what it held', () => (next.driver.isLeader() && next.driver.appliedIndex() >= last) || undefined, 10_000);
    expect(Date.now() - t0).toBeLessThan(5_000);
  }, 60_000);
});
