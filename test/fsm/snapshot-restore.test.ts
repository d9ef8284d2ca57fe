// The state machine's snapshot as bytes: what storeSnapshot streams and writeSnapshot restores,
// however the transport re-chunks it, and what a restore refuses or upgrades on the way in.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openStore } from '../../src/fsm/machine/open-machine.js';
import { markRestoring, stateHash, storeSnapshot, writeSnapshot } from '../../src/fsm/machine/machine-snapshot.js';
import type { Db } from '../../src/fsm/store/apply-txn.js';
import { META_APPLIED, META_RESTORING, META_SCHEMA, SCHEMA_VERSION } from '../../src/fsm/store/key-layout.js';
import { isHeraldError } from '../../src/herald-error.js';
import { MemoryDb } from '../../src/fsm/store/memory-db.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
const dirs: string[] = [];
const dbs: Db[] = [];
afterEach(async () => {
  for (const db of dbs.splice(0)) await db.close().catch(() => undefined);
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function freshStore(): Promise<Db> {
  const dir = await mkdtemp(join(tmpdir(), 'herald-snap-'));
  dirs.push(dir);
  const { db } = await openStore(dir);
  dbs.push(db);
  return db;
}

/** The snapshot of `db` as one byte string. */
async function snapshotBytes(db: Db, index: number, chunkBytes = 4096): Promise<Uint8Array> {
  const src = storeSnapshot(db, index, chunkBytes);
  const parts: Uint8Array[] = [];
  try {
    for await (const c of src.chunks()) parts.push(Uint8Array.from(c));
  } finally {
    await src.close();
  }
  return Buffer.concat(parts);
}

/** `bytes` handed over in pieces of `size` (the transport and the staged file chunk freely). */
async function* pieces(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.slice(i, i + size);
}

async function restore(bytes: Uint8Array, index: number, size: number): Promise<Db> {
  const db = await freshStore();
  await markRestoring(db, { index, term: 1, conf: { voters: ['n1'] } });
  await writeSnapshot(db, { index, term: 1, conf: { voters: ['n1'] } }, pieces(bytes, size));
  return db;
}

async function storeWith(entries: Array<[string, Uint8Array]>): Promise<Db> {
  const db = await freshStore();
  const b = db.batch();
  for (const [k, v] of entries) b.put(k, v);
  await b.write();
  return db;
}

const many = (n: number): Array<[string, Uint8Array]> =>
  Array.from({ length: n }, (_, i) => [`j\0job-${String(i).padStart(5, '0')}`, enc.encode(`record ${i} ${'é'.repeat(i % 50)}`)]);

describe('snapshot restore', () => {
  it('restores the source store byte for byte, whatever the chunking (1 byte, 7 bytes, whole records, all at once)', async () => {
    const src = await storeWith([
      ...many(3000),
      ['d\u0000000000000001000\u0000job-00001', new Uint8Array([0])],
      ['x\u0000empty', new Uint8Array()],
      [META_APPLIED, enc.encode('42')],
    ]);
    const bytes = await snapshotBytes(src, 42);
    const want = await stateHash(src);
    for (const size of [1, 7, 4096, bytes.length]) {
      const db = await restore(bytes, 42, size);
      expect(await stateHash(db), `pieces of ${size}`).toBe(want);
      expect(dec.decode((await db.get(META_APPLIED))!)).toBe('42');
      expect(await db.get(META_RESTORING)).toBeUndefined();
    }
  });

  it('streams the same bytes from the simulator\'s in-memory store as from LevelDB, and restores into it alike', async () => {
    const entries: Array<[string, Uint8Array]> = [...many(500), ['d\u0000000000000001000\u0000job-00001', new Uint8Array([0])], [META_APPLIED, enc.encode('7')]];
    const level = await storeWith(entries);
    const memory = new MemoryDb() as unknown as Db;
    const b = memory.batch();
    for (const [k, v] of entries) b.put(k, v);
    await b.write();
    // The LevelDB store also holds what openStore wrote (its schema); the memory store gets it too.
    await memory.put(META_SCHEMA, (await level.get(META_SCHEMA))!);
    const bytes = await snapshotBytes(level, 7);
    expect(Buffer.from(await snapshotBytes(memory, 7)).equals(Buffer.from(bytes))).toBe(true);
    const restored = new MemoryDb() as unknown as Db;
    await markRestoring(restored, { index: 7, term: 1, conf: { voters: ['n1'] } });
    await writeSnapshot(restored, { index: 7, term: 1, conf: { voters: ['n1'] } }, pieces(bytes, 13));
    expect(await stateHash(restored)).toBe(await stateHash(level));
  });

  it('refuses a snapshot that carries a restore marker, one of another index, a truncated one and an unknown format', async () => {
    const marked = await snapshotBytes(await storeWith([[META_RESTORING, enc.encode('9')], ...many(10)]), 5);
    const plain = await snapshotBytes(await storeWith(many(10)), 5);
    const refusals: Array<[Uint8Array, number, RegExp]> = [
      [marked, 5, /restore marker/],
      [plain, 6, /snapshot holds index 5, meta says 6/],
      [plain.subarray(0, plain.length - 3), 5, /ends inside a record/],
      [Uint8Array.from([9, ...plain.subarray(1)]), 5, /unknown snapshot format 9/],
      [new Uint8Array(), 5, /empty snapshot stream/],
    ];
    for (const [bytes, index, message] of refusals) {
      const err = await restore(bytes, index, 3).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isHeraldError(err) && err.code === 'CORRUPT_STORAGE', String(err)).toBe(true);
      expect((err as Error).message).toMatch(message);
    }
  });

  it('leaves out the indexes older schemas kept (a, l, q, t) and writes this build\'s schema', async () => {
    const older = await storeWith([[META_SCHEMA, enc.encode('4')], ['a\u0000old-index', new Uint8Array([1])], ['q\u0000old', new Uint8Array([2])], ...many(20)]);
    const db = await restore(await snapshotBytes(older, 8), 8, 5);
    expect(await db.get('a\u0000old-index')).toBeUndefined();
    expect(await db.get('q\u0000old')).toBeUndefined();
    expect(dec.decode((await db.get(META_SCHEMA))!)).toBe(String(SCHEMA_VERSION));
    expect(dec.decode((await db.get('j\u0000job-00019'))!)).toBe(`record 19 ${'é'.repeat(19)}`);
  });
});
