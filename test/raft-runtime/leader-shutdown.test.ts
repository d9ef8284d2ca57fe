// Stopping a leader while proposals are in flight: every proposal gets an answer its caller can
// act on (applied, or not appended and safe to retry), never OUTCOME_UNKNOWN, whether the node
// hands leadership over itself (stop) or its caller did it first (the scheduler node's order).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { isHeraldError } from '../../src/herald-error.js';
import { encodeKvCommand } from '../../src/raft/kv/kv-command.js';
import { KvStateMachine } from '../../src/raft/kv/kv-state-machine.js';
import { createNode } from '../../src/server/node/create-node.js';
import type { HeraldNode } from '../../src/server/node/herald-node.js';
import type { PeerInfo } from '../../src/server/peer/peer-transport.js';
import { freePort, waitFor } from './helpers/cluster.js';

let nodes: HeraldNode[] = [];
let dir = '';
afterEach(async () => {
  await Promise.all(nodes.map((n) => n.stop({ transfer: false }).catch(() => undefined)));
  nodes = [];
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function startCluster(): Promise<HeraldNode> {
  dir = await mkdtemp(join(tmpdir(), 'herald-leader-shutdown-'));
  const members: PeerInfo[] = [];
  for (const id of ['n1', 'n2', 'n3']) members.push({ id, peerAddress: `127.0.0.1:${await freePort()}`, clientAddress: '' });
  nodes = await Promise.all(
    members.map((m) =>
      createNode({ id: m.id, members, clientListen: '127.0.0.1:0', dataDir: join(dir, m.id), stateMachine: (d) => KvStateMachine.open(d), logger: pino({ level: 'silent' }), tickMs: 20 }),
    ),
  );
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
