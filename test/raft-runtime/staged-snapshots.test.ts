// Two transfers from the leader can be staged at once (a retried transfer, a new leader): the
// install of the older one must leave the newer one, whose install is already on its way
// (found by the scheduler simulator, seeds 104012 and 108676: the newer install found nothing,
// and the node could not restart).
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SnapshotWriter, StagedSnapshots, pruneStagedSnapshots } from '../../src/raft/storage/snapshot-files.js';

const conf = { voters: ['n1', 'n2', 'n3'] };
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'herald-staged-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function stage(index: number, term: number, body: string): Promise<void> {
  const w = await SnapshotWriter.create(dir, { index, term, conf });
  const bytes = Buffer.from(body);
  await w.write(bytes);
  await w.finish(bytes.length, createHash('sha256').update(bytes).digest());
}

async function readAll(staging: StagedSnapshots, index: number, term: number): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of staging.read({ index, term, conf })) parts.push(Buffer.from(c));
  return Buffer.concat(parts).toString();
}

describe('staged snapshots', () => {
  it('installing an older snapshot keeps a newer one staged meanwhile, and a transfer still being written', async () => {
    const staging = new StagedSnapshots(dir);
    await stage(304, 7, 'older');
    await stage(306, 7, 'newer');
    const writing = await SnapshotWriter.create(dir, { index: 320, term: 8, conf });
    await writing.write(Buffer.from('partial'));

    await staging.prune({ index: 304, term: 7, conf });

    expect(await readAll(staging, 306, 7)).toBe('newer');
    const left = (await readdir(dir)).sort();
    expect(left.filter((n) => n.endsWith('.bin'))).toEqual(['snap-7-306.bin']);
    expect(left.some((n) => n.endsWith('.tmp'))).toBe(true);
    await writing.abort();

    await staging.prune({ index: 306, term: 7, conf });
    expect(await readdir(dir)).toEqual([]);
  });

  it('at startup (no index) everything staged goes, unfinished transfers included', async () => {
    await stage(10, 1, 'a');
    const w = await SnapshotWriter.create(dir, { index: 12, term: 1, conf });
    await w.write(Buffer.from('x'));
    await pruneStagedSnapshots(dir);
    expect(await readdir(dir)).toEqual([]);
    await w.abort();
  });
});
