// `herald dev add-node`, done by the running dev: start node n<k+1> on the next ports of the
// layout with `--join`, add it as a learner with the incarnation it chose, promote it once it
// caught up, and record it in dev.json so the next `herald dev` starts it too — the procedure an
// operator follows on real machines (docs/membership.md), in one command.
import { HeraldClientError } from '../../client/errors.js';
import type { HeraldClient } from '../../client/herald-client.js';
import type { DevCluster } from './dev-cluster.js';
import { devNodePorts, MAX_DEV_NODES, type DevNodePorts } from './dev-ports.js';
import { assertPortsFree } from './port-check.js';

export interface AddNodeContext {
  cluster: DevCluster;
  client: HeraldClient;
  basePort: number;
  withMetrics: boolean;
  withHttp: boolean;
  /** Makes the new node's certificate, when the cluster runs TLS. */
  prepare(node: DevNodePorts): Promise<void>;
  /** Records the node in dev.json once it runs (the next `herald dev` starts it too). */
  record(): void;
  progress(line: string): void;
  timeoutMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function addDevNode(ctx: AddNodeContext): Promise<{ id: string; clientAddress: string; voters: string[] }> {
  const count = ctx.cluster.nodes.length;
  if (count >= MAX_DEV_NODES) throw new Error(`the dev port layout holds ${MAX_DEV_NODES} nodes; this cluster has ${count}`);
  const ports = devNodePorts(ctx.basePort, count + 1)[count]!;
  const { id } = ports;
  const clientAddress = `127.0.0.1:${ports.clientPort}`;
  const peerAddress = `127.0.0.1:${ports.peerPort}`;
  await assertPortsFree([ports], ctx.withMetrics, ctx.withHttp);
  await ctx.prepare(ports);
  ctx.progress(`starting ${id} (client ${clientAddress}, peer ${peerAddress}); it joins the running cluster`);
  await ctx.cluster.addNode(ports, ctx.timeoutMs);
  ctx.record();
  // No incarnation: the leader reads it from the new node (as a member) and checks its id.
  const added = await ctx.client.addMember({ id, peerAddress, clientAddress, incarnation: '' });
  const incarnation = added.find((m) => m.id === id)?.incarnation ?? '';
  ctx.progress(`${id} added as a learner (incarnation ${incarnation}); it receives the log and a snapshot`);
  const deadline = Date.now() + ctx.timeoutMs;
  for (;;) {
    try {
      const members = await ctx.client.promoteMember(id);
      const voters = members.filter((m) => m.memberRole === 1).map((m) => m.id);
      ctx.progress(`${id} promoted: voters ${voters.join(', ')}`);
      return { id, clientAddress, voters };
    } catch (e) {
      const waiting = e instanceof HeraldClientError && (e.heraldCode === 'LEARNER_BEHIND' || e.heraldCode === 'CONF_CHANGE_PENDING');
      if (!waiting || Date.now() > deadline) throw e;
      await sleep(200);
    }
  }
}
