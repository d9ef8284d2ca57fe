// The orchestrator's process lifecycle on the KV state machine (no scheduler needed): nodes
// behind per-link proxies elect a leader, survive kill -9 and restart, a partition through the
// proxies isolates the leader and a new one takes over, and close() leaves nothing running.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterProcesses } from '../../chaos/orchestrator/cluster-processes.js';
import { liveManaged } from '../../chaos/orchestrator/managed-process.js';
import { isolate } from '../../chaos/nemesis/partition-shapes.js';
import { sleep, waitFor } from '../../chaos/orchestrator/free-port.js';

describe('chaos orchestrator: cluster processes (KV state machine)', () => {
  let root: string;
  let cluster: ClusterProcesses;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'herald-chaos-orch-'));
    cluster = await ClusterProcesses.create({ nodes: 3, root, clusterId: 'chaos-orch-test', stateMachine: 'kv', seed: 7, tickMs: 50, electionTicks: 10 });
    await cluster.startAll();
  });

  afterAll(async () => {
    await cluster?.close();
    await rm(root, { recursive: true, force: true });
  });

  it('elects a leader through the link proxies, replaces a killed leader, and takes the restarted node back', async () => {
    const { leader } = await cluster.waitLeader(15_000);
    expect(cluster.ids).toContain(leader);
    // Peer traffic really goes through the proxies.
    const forwarded = cluster.ids.filter((id) => id !== leader).map((id) => cluster.peerLink(leader, id).stats.bytesForwarded);
    expect(Math.min(...forwarded)).toBeGreaterThan(0);

    await cluster.kill(leader);
    expect(cluster.isUp(leader)).toBe(false);
    const next = await waitFor('a new leader', async () => {
      const l = await cluster.leader();
      return l !== undefined && l !== leader ? l : undefined;
    }, 15_000);
    expect(next).not.toBe(leader);

    await cluster.start(leader);
    await waitFor('all three nodes agree on the leader', async () => {
      const st = await cluster.statuses();
      return st.size === 3 && [...st.values()].every((s) => s.leaderId === next) ? true : undefined;
    }, 15_000);
    expect(cluster.node(leader).process.starts).toBe(2);
  });

  it('isolating the leader through the proxies elects another; healing reunites them', async () => {
    const { leader } = await cluster.waitLeader(15_000);
    cluster.setBlocked(isolate(leader, cluster.ids));
    const next = await waitFor('a leader on the majority side', async () => {
      const st = await cluster.statuses();
      const majority = [...st.values()].filter((s) => s.nodeId !== leader && s.leaderId !== '' && s.leaderId !== leader);
      return majority.length === 2 && majority[0]!.leaderId === majority[1]!.leaderId ? majority[0]!.leaderId : undefined;
    }, 20_000);
    expect(next).not.toBe(leader);
    cluster.healNetwork();
    await waitFor('the old leader follows the new one', async () => {
      const s = await cluster.status(leader);
      return s.leaderId !== '' && s.leaderId !== leader ? true : undefined;
    }, 20_000);
  });

  it('SIGSTOP of the leader makes the others elect; SIGCONT brings it back as a follower', async () => {
    const { leader } = await cluster.waitLeader(15_000);
    cluster.pause(leader);
    await sleep(cluster.electionTimeoutMs * 2);
    const next = await waitFor('a leader while the old one is stopped', async () => {
      const l = await cluster.leader();
      return l !== undefined && l !== leader ? l : undefined;
    }, 15_000);
    cluster.resume(leader);
    await waitFor('the resumed node follows', async () => ((await cluster.status(leader)).leaderId === next ? true : undefined), 15_000);
  });

  it('close() kills every node process', async () => {
    await cluster.close();
    expect(liveManaged()).toEqual([]);
    for (const id of cluster.ids) expect(cluster.isUp(id)).toBe(false);
  });
});
