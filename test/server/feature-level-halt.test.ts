// A committed entry this build cannot decode (here: an unknown command tag, as a newer build would
// write) stops the node's apply loop with the operator's message; it is never answered with a
// 'rejected' result (which replicas of a newer build would not give: divergence). The node stays
// up and reports NOT_SERVING. Such bytes cannot come from the public API: the test puts them in
// the log through the driver directly.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { ByteWriter } from '../../src/fsm/commands/binary-codec.js';
import { SUPPORTED_FEATURE_LEVEL } from '../../src/fsm/commands/feature-levels.js';
import { raftReadiness } from '../../src/server/grpc/server-conventions.js';
import { incarnationOf } from '../../src/raft/core/membership.js';
import { createSchedulerNode, type SchedulerNode } from '../../src/server/scheduler-node.js';
import { credentials, status } from '@grpc/grpc-js';
import { PeerRaftClient } from '../../src/server/peer/peer-transport.js';
import { freePort, waitFor } from '../raft-runtime/helpers/cluster.js';

describe('an entry of a newer format halts apply', () => {
  let root = '';
  let sn: SchedulerNode | undefined;
  afterAll(async () => {
    await sn?.stop({ transfer: false, graceMs: 200 }).catch(() => undefined);
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('a peer cannot forward bytes that do not decode into the log (refused before proposing)', async () => {
    root = await mkdtemp(join(tmpdir(), 'herald-halt-'));
    const [peer, api] = [await freePort(), await freePort()];
    sn = await createSchedulerNode({
      id: 'n1',
      members: [{ id: 'n1', peerAddress: `127.0.0.1:${peer}`, clientAddress: `127.0.0.1:${api}` }],
      dataDir: join(root, 'n1'),
      logger: pino({ level: 'silent' }),
      tickMs: 20,
    });
    // Leading, with its own incarnation bound (the binder's configuration change): nothing else
    // is proposed on its own after that, so the commit index can only move by what this test sends.
    await waitFor('leader, bound, raised', () => (sn!.node.driver.isLeader() && incarnationOf(sn!.node.driver.confState(), 'n1') !== '' && sn!.node.clusterFeatureLevel() === SUPPORTED_FEATURE_LEVEL) || undefined, 10_000, 20);
    // And quiet: the commit index still for 300 ms.
    let quiet = sn.node.driver.status().commit;
    await waitFor('a quiet log', async () => {
      await new Promise((r) => setTimeout(r, 300));
      const now = sn!.node.driver.status().commit;
      const still = now === quiet;
      quiet = now;
      return still || undefined;
    }, 10_000, 0);
    const client = new PeerRaftClient(`127.0.0.1:${peer}`, credentials.createInsecure());
    try {
      const lastBefore = sn.node.driver.status().commit;
      for (const command of [Buffer.from([1, 99, 0]), Buffer.from([1, 5, 0, 1, 120, 9, 9, 9])]) {
        const err = await new Promise<{ code?: number; details?: string } | null>((resolve) =>
          client.forward({ clusterId: sn!.node.clusterId, command, timeoutMs: 1000 }, (e) => resolve(e)),
        );
        expect(err?.code).toBe(status.INVALID_ARGUMENT);
        expect(err?.details).toMatch(/forwarded command refused/);
      }
      expect(sn.node.driver.status().commit).toBe(lastBefore);
      expect(sn.node.driver.failure()).toBeUndefined();
    } finally {
      client.close();
      await sn.stop({ transfer: false, graceMs: 200 });
      sn = undefined;
      await rm(root, { recursive: true, force: true });
      root = '';
    }
  }, 30_000);

  it('stops applying at the entry, says which level it needs, and the node is not ready', async () => {
    root = await mkdtemp(join(tmpdir(), 'herald-halt-'));
    const [peer, api] = [await freePort(), await freePort()];
    sn = await createSchedulerNode({
      id: 'n1',
      members: [{ id: 'n1', peerAddress: `127.0.0.1:${peer}`, clientAddress: `127.0.0.1:${api}` }],
      dataDir: join(root, 'n1'),
      logger: pino({ level: 'silent' }),
      tickMs: 20,
    });
    const driver = sn.node.driver;
    await waitFor('leader', () => driver.isLeader() || undefined, 10_000, 20);
    const fatal = new Promise<Error>((resolve) => sn!.node.events.on('fatal', resolve));
    const before = driver.appliedIndex();
    const newer = new ByteWriter().u8(1).u8(99).int(Date.now()).finish();
    const outcome = driver.propose(newer, { timeoutMs: 5_000 }).then(
      () => 'result',
      (e: unknown) => (e as Error).message,
    );
    const err = await fatal;
    expect(err.message).toMatch(new RegExp(`entry \\d+ needs feature level ${SUPPORTED_FEATURE_LEVEL + 1} or higher; this node supports ${SUPPORTED_FEATURE_LEVEL}: upgrade this node`));
    // No result was made of it: the proposal fails with an unknown outcome, nothing applied.
    expect(await outcome).not.toBe('result');
    expect(driver.appliedIndex()).toBeGreaterThanOrEqual(before);
    expect(driver.appliedIndex()).toBeLessThan(driver.status().commit); // committed, never applied
    expect(driver.failure()).toBeDefined();
    expect(raftReadiness(driver).isReady()).toBe(false);
  }, 30_000);
});
