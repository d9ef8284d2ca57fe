import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isHeraldError } from '../../src/herald-error.js';
import { encodeKvCommand } from '../../src/raft/kv/kv-command.js';
import { KvStateMachine } from '../../src/raft/kv/kv-state-machine.js';
import { LogStore } from '../../src/raft/storage/log-store.js';
import { SnapshotWriter } from '../../src/raft/storage/snapshot-files.js';
import { createHash } from 'node:crypto';
import { createNode } from '../../src/server/node/create-node.js';

const logger = pino({ level: 'silent' });
const members = [{ id: 'n1', peerAddress: '127.0.0.1:0', clientAddress: '127.0.0.1:0' }];
const conf = { voters: ['n1'] };

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'herald-startup-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A log that recorded an installed snapshot at index 40 (term 3) whose restore never ran. */
async function logWithSnapshot(dataDir: string, stage: boolean): Promise<string> {
  const src = await KvStateMachine.open(join(dir, 'source'));
  await src.apply(
    Array.from({ length: 40 }, (_, i) => ({ index: i + 1, term: 3, type: 'normal' as const, data: encodeKvCommand({ op: 'put', key: `k${i}`, value: Buffer.from(`v${i}`) }) })),
  );
  const hash = await src.stateHash();
  const meta = { index: 40, term: 3, conf };
  if (stage) {
    const snap = await src.snapshot();
    const w = await SnapshotWriter.create(join(dataDir, 'snapshots'), meta);
    const h = createHash('sha256');
    let n = 0;
    for await (const c of snap.chunks()) {
      h.update(c);
      n += c.length;
      await w.write(c);
    }
    await w.finish(n, h.digest());
    await snap.close();
  }
  await src.close();
  const log = await LogStore.open(join(dataDir, 'raft'));
  await log.writeIdentity({ clusterId: 'c-test', voters: ['n1'] });
  await log.persist({ entries: [], snapshot: meta, hardState: { term: 3, vote: 'n1', commit: 40 } }, true);
  await log.close();
  return hash;
}

describe('createNode startup', () => {
  it('finishes a snapshot restore that a crash interrupted, from the staged file', async () => {
    const dataDir = join(dir, 'node');
    const hash = await logWithSnapshot(dataDir, true);
    const node = await createNode({ id: 'n1', members, dataDir, stateMachine: (d) => KvStateMachine.open(d), logger, tickMs: 10 });
    try {
      expect(node.driver.appliedIndex()).toBe(40);
      expect(await node.stateMachine.stateHash()).toBe(hash);
      // And it serves: a single member elects itself and commits.
      const out = await node.propose(encodeKvCommand({ op: 'put', key: 'new', value: Buffer.from('x') }), { timeoutMs: 5000 });
      expect(out.index).toBeGreaterThan(40);
      const big = node.propose(new Uint8Array(4 * 1024 * 1024 + 1));
      await expect(big).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    } finally {
      await node.stop();
    }
  });

  it('refuses (CORRUPT_STORAGE) when the state machine is behind the compaction point and nothing is staged', async () => {
    const dataDir = join(dir, 'node');
    await logWithSnapshot(dataDir, false);
    const err = await createNode({ id: 'n1', members, dataDir, stateMachine: (d) => KvStateMachine.open(d), logger }).catch((e: unknown) => e);
    expect(isHeraldError(err, 'CORRUPT_STORAGE')).toBe(true);
    expect((err as Error).message).toMatch(/applied index 0 is behind the log's compaction point 40/);
  });

  it('refuses (CLUSTER_MISMATCH) data written for another member list', async () => {
    const dataDir = join(dir, 'node');
    await logWithSnapshot(dataDir, true);
    const other = [...members, { id: 'n2', peerAddress: '127.0.0.1:1', clientAddress: '' }];
    const err = await createNode({ id: 'n1', members: other, dataDir, stateMachine: (d) => KvStateMachine.open(d), logger }).catch((e: unknown) => e);
    expect(isHeraldError(err, 'CLUSTER_MISMATCH')).toBe(true);
    expect((err as Error).message).toMatch(/belongs to cluster c-test with members \[n1\], not \[n1, n2\]/);
  });
});
