import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LogStore } from '../../src/raft/storage/log-store.js';
import { entryKey } from '../../src/raft/storage/storage-codec.js';
import type { Entry } from '../../src/raft/types.js';
import { isHeraldError } from '../../src/herald-error.js';

const conf = { voters: ['n1', 'n2', 'n3'] };
const ent = (index: number, term: number, s = `v${index}`): Entry => ({ index, term, type: 'normal', data: Buffer.from(s) });

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'herald-logstore-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('LogStore', () => {
  it('persists entries and hard state and reloads them', async () => {
    const s = await LogStore.open(dir);
    expect(await s.isEmpty()).toBe(true);
    await s.persist({ entries: [ent(1, 1), ent(2, 1), ent(3, 2)], hardState: { term: 2, vote: 'n1', commit: 2 } }, true);
    expect(s.stats.syncedWrites).toBe(1);
    await s.close();
    const s2 = await LogStore.open(dir);
    const ms = await s2.load(conf);
    expect(ms.lastIndex()).toBe(3);
    expect(ms.firstIndex()).toBe(1);
    expect(ms.term(3)).toBe(2);
    expect(Buffer.from(ms.entries(2, 3)[0]!.data).toString()).toBe('v2');
    expect(ms.initialState().hardState).toEqual({ term: 2, vote: 'n1', commit: 2 });
    await s2.close();
  });

  it('truncates a conflicting suffix', async () => {
    const s = await LogStore.open(dir);
    await s.persist({ entries: [ent(1, 1), ent(2, 1), ent(3, 1), ent(4, 1)], hardState: { term: 1, vote: '', commit: 1 } }, true);
    await s.persist({ entries: [ent(2, 2, 'x')], hardState: { term: 2, vote: '', commit: 1 } }, true);
    await s.close();
    const s2 = await LogStore.open(dir);
    const ms = await s2.load(conf);
    expect(ms.lastIndex()).toBe(2);
    expect(Buffer.from(ms.entries(2, 3)[0]!.data).toString()).toBe('x');
    await s2.close();
  });

  it('compacts and reloads with the snapshot point and the trailing window', async () => {
    const s = await LogStore.open(dir);
    const es = Array.from({ length: 20 }, (_, i) => ent(i + 1, 1));
    await s.persist({ entries: es, hardState: { term: 1, vote: 'n1', commit: 20 } }, true);
    await s.compact({ index: 15, term: 1, conf }, { index: 10, term: 1 });
    await s.close();
    const s2 = await LogStore.open(dir);
    const ms = await s2.load(conf);
    expect(ms.firstIndex()).toBe(11);
    expect(ms.snapshot().index).toBe(15);
    expect(ms.lastIndex()).toBe(20);
    await s2.close();
  });

  it('compacting gives the dropped entries\' disk space back (LevelDB tables are not left behind)', async () => {
    const s = await LogStore.open(dir);
    // 96 MiB of entries in 1 MiB batches: three memtables' worth, flushed to table files.
    const value = 'x'.repeat(64 * 1024);
    let index = 0;
    for (let batch = 0; batch < 96; batch++) {
      const es = Array.from({ length: 16 }, () => ent(++index, 1, value));
      await s.persist({ entries: es, hardState: { term: 1, vote: 'n1', commit: index } }, false);
    }
    const full = await dirBytes(dir);
    expect(full).toBeGreaterThan(64 * 1024 * 1024);
    // Keep the last 64 entries (4 MiB).
    await s.compact({ index, term: 1, conf }, { index: index - 64, term: 1 });
    const after = await dirBytes(dir);
    expect(after).toBeLessThan(16 * 1024 * 1024);
    const ms = await s.load(conf);
    expect(ms.firstIndex()).toBe(index - 63);
    expect(ms.lastIndex()).toBe(index);
    await s.close();
  }, 60_000);

  it('installs a received snapshot, replacing the log', async () => {
    const s = await LogStore.open(dir);
    await s.persist({ entries: [ent(1, 1), ent(2, 1)], hardState: { term: 1, vote: '', commit: 2 } }, true);
    await s.persist({ entries: [], snapshot: { index: 50, term: 3, conf }, hardState: { term: 3, vote: '', commit: 50 } }, true);
    await s.persist({ entries: [ent(51, 3)], hardState: { term: 3, vote: '', commit: 50 } }, true);
    await s.close();
    const s2 = await LogStore.open(dir);
    const ms = await s2.load(conf);
    expect(ms.firstIndex()).toBe(51);
    expect(ms.lastIndex()).toBe(51);
    expect(ms.term(50)).toBe(3);
    await s2.close();
  });

  it('refuses a log with a flipped byte (checksum)', async () => {
    const s = await LogStore.open(dir);
    await s.persist({ entries: [ent(1, 1), ent(2, 1)], hardState: { term: 1, vote: '', commit: 2 } }, true);
    await s.close();
    const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    const v = (await db.get(entryKey(2)))!;
    v[v.length - 1] ^= 0xff;
    await db.put(entryKey(2), v);
    await db.close();
    const s2 = await LogStore.open(dir);
    const err = await s2.load(conf).catch((e: unknown) => e);
    expect(isHeraldError(err, 'CORRUPT_STORAGE')).toBe(true);
    expect(String((err as Error).message)).toMatch(/entry 2: entry checksum mismatch/);
    await s2.close();
  });

  it('refuses a log with a gap', async () => {
    const s = await LogStore.open(dir);
    await s.persist({ entries: [ent(1, 1), ent(2, 1), ent(3, 1)], hardState: { term: 1, vote: '', commit: 1 } }, true);
    await s.close();
    const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    await db.del(entryKey(2));
    await db.close();
    const s2 = await LogStore.open(dir);
    await expect(s2.load(conf)).rejects.toThrow(/gap: entry 1 is followed by 3/);
    await s2.close();
  });
});

async function dirBytes(d: string): Promise<number> {
  let total = 0;
  for (const f of await readdir(d)) total += (await stat(join(d, f))).size;
  return total;
}
