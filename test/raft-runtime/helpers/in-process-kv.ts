// Three KV nodes in this process on loopback ports and a temp dir: the in-process scenarios'
// cluster (partition, follower apply window, leader shutdown). stop() stops them and removes the dir.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { PeerInfo } from '../../../src/raft/ports.js';
import type { StateMachine } from '../../../src/raft/state-machine.js';
import { KvStateMachine } from '../../../src/raft/kv/kv-state-machine.js';
import { createNode } from '../../../src/server/node/create-node.js';
import type { HeraldNode, NodeOptions } from '../../../src/server/node/herald-node.js';
import { freePort } from './cluster.js';

export interface InProcessKv {
  readonly nodes: HeraldNode[];
  readonly members: readonly PeerInfo[];
  stop(): Promise<void>;
}

export async function startInProcessKv(
  name: string,
  options: { stateMachine?: (id: string, dir: string) => Promise<StateMachine> } & Partial<Pick<NodeOptions, 'followerApplyWindowMs'>> = {},
): Promise<InProcessKv> {
  const dir = await mkdtemp(join(tmpdir(), `herald-${name}-`));
  const members: PeerInfo[] = [];
  for (const id of ['n1', 'n2', 'n3']) members.push({ id, peerAddress: `127.0.0.1:${await freePort()}`, clientAddress: '' });
  const { stateMachine = (_id: string, d: string) => KvStateMachine.open(d), ...rest } = options;
  const nodes = await Promise.all(
    members.map((m) =>
      createNode({
        id: m.id,
        members,
        clientListen: '127.0.0.1:0',
        dataDir: join(dir, m.id),
        stateMachine: (d) => stateMachine(m.id, d),
        logger: pino({ level: 'silent' }),
        tickMs: 20,
        ...rest,
      }),
    ),
  );
  return {
    nodes,
    members,
    stop: async () => {
      await Promise.all(nodes.map((n) => n.stop({ transfer: false }).catch(() => undefined)));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
