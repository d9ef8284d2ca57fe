// writeLevelBatch: a list of puts and dels lands as one batch, in order, like db.batch(ops).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { afterEach, describe, expect, it } from 'vitest';
import { writeLevelBatch } from '../../src/raft/storage/level-batch-write.js';

let dir = '';
let db: ClassicLevel<string, string> | undefined;
afterEach(async () => {
  await db?.close();
  db = undefined;
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('writeLevelBatch', () => {
  it('applies puts and dels in list order (a later op on the same key wins) and writes nothing for an empty list', async () => {
    dir = await mkdtemp(join(tmpdir(), 'herald-batch-'));
    db = new ClassicLevel<string, string>(dir);
    await db.open();
    await db.put('old', 'x');
    await writeLevelBatch(db, [
      { type: 'put', key: 'a', value: '1' },
      { type: 'put', key: 'b', value: '2' },
      { type: 'del', key: 'a' },
      { type: 'del', key: 'old' },
      { type: 'put', key: 'b', value: '3' },
      { type: 'put', key: 'c', value: '4' },
    ], { sync: true });
    expect(await db.keys().all()).toEqual(['b', 'c']);
    expect(await db.getMany(['b', 'c'])).toEqual(['3', '4']);
    await writeLevelBatch(db, []);
    expect(await db.keys().all()).toEqual(['b', 'c']);
  });
});
