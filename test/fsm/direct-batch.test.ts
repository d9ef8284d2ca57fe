import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../src/fsm/store/apply-txn.js';
import { DirectBatch } from '../../src/fsm/store/direct-batch.js';

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined): string | undefined => (b === undefined ? undefined : new TextDecoder().decode(b));

describe('DirectBatch: the state machine batch without the per-operation wrapper', () => {
  let dir: string;
  let db: Db;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'herald-direct-batch-'));
    db = new ClassicLevel<string, Uint8Array>(dir, { keyEncoding: 'utf8', valueEncoding: 'view' });
    await db.open();
  });

  afterEach(async () => {
    await db.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('writes puts and deletes atomically, in order, with non-ASCII keys intact', async () => {
    await db.put('gone', bytes('old'));
    const b = new DirectBatch(db);
    b.put('a', bytes('1'));
    b.put('ключ\0é', bytes('2'));
    b.put('a', bytes('3')); // a later write of the same key wins
    b.del('gone');
    expect(await db.get('a')).toBeUndefined(); // nothing before write()
    b.putPublic('m', bytes('applied'));
    await b.write();
    expect(text(await db.get('a'))).toBe('3');
    expect(text(await db.get('ключ\0é'))).toBe('2');
    expect(await db.get('gone')).toBeUndefined();
    expect(text(await db.get('m'))).toBe('applied');
  });

  it('writes a batch of direct operations only, though abstract-level counts it empty', async () => {
    await db.put('x', bytes('old'));
    const puts = new DirectBatch(db);
    puts.put('p', bytes('v'));
    await puts.write();
    expect(text(await db.get('p'))).toBe('v');
    const dels = new DirectBatch(db);
    dels.del('x');
    await dels.write();
    expect(await db.get('x')).toBeUndefined();
  });

  it('takes keys as their UTF-8 bytes, the same keys as the strings', async () => {
    const enc = new TextEncoder();
    await db.put('old', bytes('x'));
    const b = new DirectBatch(db);
    b.putKeyBytes(enc.encode('r\0é-1'), bytes('v1'));
    b.delKeyBytes(enc.encode('old'));
    await b.write();
    expect(text(await db.get('r\0é-1'))).toBe('v1');
    expect(await db.get('old')).toBeUndefined();
    // Only byte-keyed operations: the write still happens.
    const only = new DirectBatch(db);
    only.putKeyBytes(enc.encode('k2'), bytes('v2'));
    await only.write();
    expect(text(await db.get('k2'))).toBe('v2');
  });

  it('closes without writing anything', async () => {
    const b = new DirectBatch(db);
    b.put('never', bytes('v'));
    await b.close();
    expect(await db.get('never')).toBeUndefined();
  });

  it('takes the public path where the encodings are not the identity', async () => {
    const jsonDir = await mkdtemp(join(tmpdir(), 'herald-direct-batch-json-'));
    const other = new ClassicLevel<string, unknown>(jsonDir, { keyEncoding: 'utf8', valueEncoding: 'json' });
    await other.open();
    try {
      const b = new DirectBatch(other as unknown as Db);
      b.put('k', { n: 1 } as unknown as Uint8Array);
      b.putKeyBytes(new TextEncoder().encode('k2'), { n: 2 } as unknown as Uint8Array);
      await b.write();
      expect(await other.get('k')).toEqual({ n: 1 });
      expect(await other.get('k2')).toEqual({ n: 2 });
    } finally {
      await other.close();
      await rm(jsonDir, { recursive: true, force: true });
    }
  });
});
