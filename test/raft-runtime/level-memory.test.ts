// A store's memory as LevelDB estimates it (herald_store_memory_bytes): grows with what a store
// holds in its memtable, and reads 0 where there is nothing to ask.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { afterEach, describe, expect, it } from 'vitest';
import { levelMemoryBytes } from '../../src/raft/storage/level-memory.js';

describe('levelMemoryBytes', () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('grows as the memtable fills, and is 0 for a closed store or one that cannot tell', async () => {
    dir = await mkdtemp(join(tmpdir(), 'herald-level-memory-'));
    const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer', writeBufferSize: 64 << 20 });
    await db.open();
    const empty = levelMemoryBytes(db);
    const batch = db.batch();
    for (let i = 0; i < 5000; i++) batch.put(Buffer.from(`key-${i}`), Buffer.alloc(1000, i));
    await batch.write();
    const full = levelMemoryBytes(db);
    expect(full - empty).toBeGreaterThan(5_000_000); // 5,000 values of 1,000 bytes sit in the memtable
    await db.close();
    expect(levelMemoryBytes(db)).toBe(0);
    expect(levelMemoryBytes({ status: 'open' })).toBe(0);
  });
});
