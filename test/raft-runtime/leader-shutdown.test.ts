// Stopping a leader while proposals are in flight: every proposal gets an answer its caller can
// act on (applied, or not appended and safe to retry), never OUTCOME_UNKNOWN, whether the node
// hands leadership over itself (stop) or its caller did it first (the scheduler node's order).
import { afterEach, describe, expect, it } from 'vitest';
import { isHeraldError } from '../../src/herald-error.js';
import { encodeKvCommand } from '../../src/raft/kv/kv-command.js';
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

async function startCluster(): Promise<HeraldNode> {
  kv = await startInProcessKv('leader-shutdown');
  nodes = kv.nodes;
  return waitFor('a leader', () => nodes.find((n) => n.driver.isLeader()));
}

/** Closed-loop writers on `node` (as the public services propose: on the leader, never forwarded) until one is refused. */
function writers(node: HeraldNode, count: number): { outcomes: Promise<string[]>; acked: () => number } {
  let acked = 0;
  let seq = 0;
  const one = async (): Promise<string> => {
    for (;;) {
      try {
        await node.propose(encodeKvCommand({ op: 'put', key: `k${seq++}`, value: Buffer.from('v') }), { forward: false, timeoutMs: 10_000 });
        acked++;
      } catch (e) {
        return isHeraldError(e) ? e.code : String(e);
      }
    }
  };
  return { outcomes: Promise.all(Array.from({ length: count }, one)), acked: () => acked };
}

const RETRYABLE = new Set(['NOT_LEADER', 'NO_LEADER', 'SHUTTING_DOWN']);

describe('stopping a leader with proposals in flight', () => {
  it('stop() lets them apply, hands over, and leaves none OUTCOME_UNKNOWN', async () => {
    const leader = await startCluster();
    const w = writers(leader, 32);
    await waitFor('writes under way', () => w.acked() >= 200 || undefined, 20_000);
    await leader.stop();
    const ends = await w.outcomes;
    expect(ends.filter((c) => !RETRYABLE.has(c))).toEqual([]);
  }, 60_000);

  it('a caller that hands leadership over before stop() (the scheduler node) loses none either', async () => {
    const leader = await startCluster();
    const w = writers(leader, 32);
    await waitFor('writes under way', () => w.acked() >= 200 || undefined, 20_000);
    await leader.handOver();
    expect(leader.driver.isLeader()).toBe(false);
    await leader.stop();
    const ends = await w.outcomes;
    expect(ends.filter((c) => !RETRYABLE.has(c))).toEqual([]);
  }, 60_000);

  it('nor does a stop right after an operator transferred leadership', async () => {
    const leader = await startCluster();
    const w = writers(leader, 32);
    await waitFor('writes under way', () => w.acked() >= 200 || undefined, 20_000);
    await leader.transferLeadership();
    await leader.stop();
    const ends = await w.outcomes;
    expect(ends.filter((c) => !RETRYABLE.has(c))).toEqual([]);
  }, 60_000);
});
