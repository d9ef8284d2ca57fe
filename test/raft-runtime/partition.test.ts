import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeKvCommand } from '../../src/raft/kv/kv-command.js';
import { KvStateMachine } from '../../src/raft/kv/kv-state-machine.js';
import { createNode } from '../../src/server/node/create-node.js';
import type { HeraldNode } from '../../src/server/node/herald-node.js';
import type { PeerInfo } from '../../src/raft/ports.js';
import { freePort, waitFor } from './helpers/cluster.js';

let nodes: HeraldNode[] = [];
let dir = '';
afterEach(async () => {
  await Promise.all(nodes.map((n) => n.stop({ transfer: false }).catch(() => undefined)));
  nodes = [];
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('in-process cluster with the transport fault hook', () => {
  it('a follower cut off from its peers misses commits, then catches up when the link heals', async () => {
    dir = await mkdtemp(join(tmpdir(), 'herald-partition-'));
    const members: PeerInfo[] = [];
    for (const id of ['n1', 'n2', 'n3']) members.push({ id, peerAddress: `127.0.0.1:${await freePort()}`, clientAddress: '' });
    nodes = await Promise.all(
      members.map((m) =>
        createNode({ id: m.id, members, clientListen: '127.0.0.1:0', dataDir: join(dir, m.id), stateMachine: (d) => KvStateMachine.open(d), logger: pino({ level: 'silent' }), tickMs: 20 }),
      ),
    );
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
