// In-process scheduler nodes (createSchedulerNode) on 127.0.0.1 with ephemeral ports and a temp
// dir, for dispatch tests where a separate process is not the point. stop() removes everything.
import type { ClientLimits } from '../../../src/server/auth/client-limits.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { HeraldClient } from '../../../src/client/herald-client.js';
import { createSchedulerNode, type SchedulerNode } from '../../../src/server/scheduler-node.js';
import type { SchedulerConfig } from '../../../src/server/leader/leader-config.js';
import { freePort, waitFor } from '../../raft-runtime/helpers/cluster.js';
import type { NodeTls } from '../../../src/server/grpc/tls/node-tls.js';
import type { ClientTls } from '../../../src/client/tls-options.js';

export interface InProcessCluster {
  nodes: SchedulerNode[];
  endpoints: string[];
  client: HeraldClient;
  leader(): Promise<SchedulerNode>;
  stop(): Promise<void>;
}

export async function startInProcessCluster(
  size: number,
  scheduler: Partial<SchedulerConfig> = {},
  node: { replicateEffects?: boolean; auth?: { bootstrapToken?: string; ratePerSecond?: number }; tls?: (id: string) => NodeTls; clientLimits?: Partial<ClientLimits>; http?: boolean } = {},
  clientToken?: string,
  clientTls?: ClientTls,
): Promise<InProcessCluster> {
  const root = await mkdtemp(join(tmpdir(), 'herald-dispatch-'));
  const ports = await Promise.all(Array.from({ length: size * 2 }, () => freePort()));
  const members = Array.from({ length: size }, (_, i) => ({
    id: `n${i + 1}`,
    peerAddress: `127.0.0.1:${ports[i * 2]}`,
    clientAddress: `127.0.0.1:${ports[i * 2 + 1]}`,
  }));
  const logger = pino({ level: process.env.HERALD_TEST_LOG ?? 'warn' });
  const nodes: SchedulerNode[] = [];
  let client: HeraldClient | undefined;
  const stop = async () => {
    client?.close();
    await Promise.all(nodes.map((n) => n.stop({ transfer: false, graceMs: 500 }).catch(() => undefined)));
    await rm(root, { recursive: true, force: true });
  };
  try {
    for (const m of members) {
      nodes.push(
        await createSchedulerNode({
          id: m.id,
          members,
          dataDir: join(root, m.id),
          logger: logger.child({ node: m.id }),
          tickMs: 20,
          electionTicks: 10,
          scheduler: { heartbeatIntervalMs: 300, defaultLeaseMs: 3000, ...scheduler },
          ...(node.replicateEffects !== undefined ? { replicateEffects: node.replicateEffects } : {}),
          ...(node.auth ? { auth: node.auth } : {}),
          ...(node.tls ? { tls: node.tls(m.id) } : {}),
          ...(node.clientLimits ? { clientLimits: node.clientLimits } : {}),
          ...(node.http ? { httpListen: '127.0.0.1:0' } : {}),
        }),
      );
    }
    const endpoints = members.map((m) => m.clientAddress);
    client = new HeraldClient({ endpoints, ...(clientToken !== undefined ? { token: clientToken } : {}), ...(clientTls ? { tls: clientTls } : {}) });
    const leader = () => waitFor('a leader with services ready', () => nodes.find((n) => n.leaderServices()?.ready), 15_000, 20);
    await leader();
    return { nodes, endpoints, client, leader, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
