// Streams a whole LevelDB database as snapshot chunks, and loads such a stream back. Any state
// machine kept in one LevelDB (the KV test machine, the scheduler FSM) can reuse it.
//
// Format: a sequence of records [u32 keyLen][key][u32 valueLen][value], cut into chunks of about
// CHUNK_BYTES regardless of record boundaries. Reading goes through an explicit LevelDB snapshot
// so the stream is one point in time while applies continue; nothing is copied whole into memory.

import type { ClassicLevel } from 'classic-level';

export const CHUNK_BYTES = 256 * 1024;

type Db = ClassicLevel<Buffer, Buffer>;
type Snap = ReturnType<Db['snapshot']>;

export async function* levelSnapshotChunks(db: Db, snapshot: Snap): AsyncGenerator<Uint8Array> {
  let parts: Buffer[] = [];
  let size = 0;
  for await (const [k, v] of db.iterator({ snapshot })) {
    const h1 = Buffer.allocUnsafe(4);
    h1.writeUInt32BE(k.length, 0);
    const h2 = Buffer.allocUnsafe(4);
    h2.writeUInt32BE(v.length, 0);
    parts.push(h1, k, h2, v);
    size += 8 + k.length + v.length;
    if (size >= CHUNK_BYTES) {
      yield Buffer.concat(parts, size);
      parts = [];
      size = 0;
    }
  }
  if (size > 0) yield Buffer.concat(parts, size);
}

/** Parses the record stream back into key/value pairs, across chunk boundaries. */
export async function* levelSnapshotRecords(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<[Buffer, Buffer]> {
  let pending: Buffer = Buffer.alloc(0);
  for await (const chunk of chunks) {
    pending = pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([pending, chunk]);
    let off = 0;
    for (;;) {
      if (pending.length - off < 4) break;
      const kl = pending.readUInt32BE(off);
      if (pending.length - off < 8 + kl) break;
      const vl = pending.readUInt32BE(off + 4 + kl);
      if (pending.length - off < 8 + kl + vl) break;
      const k = Buffer.from(pending.subarray(off + 4, off + 4 + kl));
      const v = Buffer.from(pending.subarray(off + 8 + kl, off + 8 + kl + vl));
      off += 8 + kl + vl;
      yield [k, v];
    }
    pending = pending.subarray(off);
  }
  if (pending.length !== 0) throw new Error(`snapshot stream ends inside a record (${pending.length} bytes left)`);
}
