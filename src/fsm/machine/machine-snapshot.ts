// The state machine's store as a Raft snapshot: the whole key space streamed in chunks, written
// back on another replica, and hashed for comparing replicas. The format (snapshot-stream.ts
// reads it): a header chunk (format version, applied index), then (key, value) pairs.
import { createHash } from 'node:crypto';
import type { SnapshotMeta } from '../../raft/types.js';
import type { SnapshotSource } from '../../raft/state-machine.js';
import { HeraldError } from '../../herald-error.js';
import type { Db } from '../store/apply-txn.js';
import { ByteWriter } from '../commands/binary-codec.js';
import { DROPPED_INDEX_PREFIXES, SEP, META_APPLIED, META_RESTORING, META_SCHEMA, READABLE_SCHEMAS, SCHEMA_VERSION, TRIM_INDEX_SCHEMA } from '../store/key-layout.js';
import { deriveRetentionIndex } from './retention-upgrade.js';
import { readSnapshotStream } from './snapshot-stream.js';
import { clearAllButMarker } from './open-machine.js';
import { DirectBatch } from '../store/direct-batch.js';

export const SNAPSHOT_FORMAT_VERSION = 1;

const enc = new TextEncoder();
const dec = new TextDecoder();

const SEP_BYTE = SEP.charCodeAt(0);
/** First characters of the keys a restore must look at: 'm' (meta) and the dropped index prefixes. */
const NAMED_FIRST_BYTES = new Set([META_RESTORING, META_SCHEMA, ...DROPPED_INDEX_PREFIXES].map((k) => k.charCodeAt(0)));

/**
 * A snapshot of the store as it is now, at `appliedIndex`. The caller holds the apply lock: the
 * iterator pins a LevelDB snapshot when it is created, so `appliedIndex` matches that view exactly.
 */
export function storeSnapshot(db: Db, appliedIndex: number, chunkBytes: number): SnapshotSource {
  // Keys as their bytes (no string made only to be encoded again), and large native reads: a
  // snapshot of ten million jobs is some forty million records.
  const it = db.iterator<Uint8Array, Uint8Array>({ keyEncoding: 'view', valueEncoding: 'view', highWaterMarkBytes: 1 << 20 });
  let closed = false;
  return {
    appliedIndex,
    async *chunks(): AsyncIterable<Uint8Array> {
      yield new ByteWriter(8).u8(SNAPSHOT_FORMAT_VERSION).uint(appliedIndex).finish();
      let w = new ByteWriter(chunkBytes + 1024);
      let size = 0;
      for (;;) {
        const batch = await it.nextv(1000);
        if (batch.length === 0) break;
        for (const [k, v] of batch) {
          w.bytes(k).bytes(v);
          size += k.length + v.length + 8;
          if (size >= chunkBytes) {
            yield w.finish();
            w = new ByteWriter(chunkBytes + 1024);
            size = 0;
          }
        }
      }
      if (size > 0) yield w.finish();
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await it.close();
    },
  };
}

/** Step one of a restore: the marker goes first (synced) so a crash from here on is recognised at open. */
export async function markRestoring(db: Db, meta: SnapshotMeta): Promise<void> {
  await db.put(META_RESTORING, enc.encode(String(meta.index)), { sync: true });
}

/**
 * Step two: replaces the store's contents with the snapshot's, upgrading an older schema on the
 * way in, and removes the marker in the final (synced) batch. The marker survives the clear, so a
 * crash anywhere before that batch leaves a store that open recognises as half restored.
 */
export async function writeSnapshot(db: Db, meta: SnapshotMeta, chunks: AsyncIterable<Uint8Array>): Promise<void> {
  await clearAllButMarker(db);
  let header = false;
  let batch = new DirectBatch(db);
  let pending = 0;
  let snapshotSchema = SCHEMA_VERSION;
  for await (const parts of readSnapshotStream(chunks)) {
    for (const part of parts) {
      if (part.kind === 'header') {
        if (part.version !== SNAPSHOT_FORMAT_VERSION) throw new HeraldError('CORRUPT_STORAGE', `unknown snapshot format ${part.version}`);
        if (part.appliedIndex !== meta.index) {
          throw new HeraldError('CORRUPT_STORAGE', `snapshot holds index ${part.appliedIndex}, meta says ${meta.index}`);
        }
        header = true;
        continue;
      }
      const key = part.key;
      // Keys go into the batch as the bytes they were read as; only the few a restore looks at
      // (the meta keys, the prefixes of dropped indexes) are decoded.
      if (key.length > 1 && key[1] === SEP_BYTE && NAMED_FIRST_BYTES.has(key[0]!)) {
        const name = dec.decode(key);
        if (name === META_RESTORING) throw new HeraldError('CORRUPT_STORAGE', 'snapshot contains a restore marker');
        if (name === META_SCHEMA) {
          const v = Number(dec.decode(part.value));
          if (!READABLE_SCHEMAS.includes(v)) throw new HeraldError('CORRUPT_STORAGE', `snapshot of state machine schema ${v}; this build reads ${SCHEMA_VERSION}`);
          batch.put(name, enc.encode(String(SCHEMA_VERSION)));
          snapshotSchema = v;
          continue;
        }
        // A schema-1 or -2 snapshot (older leader) carries indexes this schema dropped.
        if (DROPPED_INDEX_PREFIXES.some((p) => name.startsWith(p))) continue;
      }
      batch.putKeyBytes(key, part.value);
      pending += 1;
    }
    if (pending >= 10_000) {
      await batch.write();
      batch = new DirectBatch(db);
      pending = 0;
    }
  }
  if (!header) throw new HeraldError('CORRUPT_STORAGE', 'empty snapshot stream');
  if (snapshotSchema < TRIM_INDEX_SCHEMA) {
    // An older leader's snapshot: its retention state is derived as an upgraded store's is.
    await batch.write();
    batch = new DirectBatch(db);
    await deriveRetentionIndex(db);
  }
  batch.put(META_APPLIED, enc.encode(String(meta.index)));
  batch.del(META_RESTORING);
  await batch.write({ sync: true });
}

/** SHA-256 over every (key, value) of the store, length-prefixed: equal on replicas that agree. */
export async function stateHash(db: Db): Promise<string> {
  const h = createHash('sha256');
  const len = Buffer.alloc(4);
  for await (const [k, v] of db.iterator()) {
    const kb = enc.encode(k);
    len.writeUInt32BE(kb.length);
    h.update(len).update(kb);
    len.writeUInt32BE(v.length);
    h.update(len).update(v);
  }
  return h.digest('hex');
}
