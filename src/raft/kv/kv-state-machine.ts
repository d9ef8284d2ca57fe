// A small key-value StateMachine on classic-level, for Raft tests and benches (the scheduler FSM
// plugs into the same contract later).
//
// Layout: "d/" + key -> value; "m/applied" -> applied index (u64, in the SAME batch as the data,
// so a restart neither loses nor re-applies an entry); "m/restoring" marks an interrupted restore.
//
// Write-behind: apply computes its results and queues its one atomic batch on an ordered write
// chain instead of waiting for LevelDB's thread pool, so a proposal's result is not delayed by
// an extra thread round trip. Keys of batches still in flight are served from `pending`; every
// reader of LevelDB (snapshot, sync, hash, restore, close) waits for the chain first. A crash
// loses only batches whose entries are still in the Raft log (applied index rides in the same
// batch), so they are re-applied on restart, exactly once. A write that fails fails every later
// apply, snapshot and sync (never a result): the runtime stops the node, and a restart applies
// again from the index in the store.

import { createHash } from 'node:crypto';
import { ClassicLevel } from 'classic-level';
import type { Entry, SnapshotMeta } from '../types.js';
import type { SnapshotSource, StateMachine } from '../state-machine.js';
import { levelSnapshotChunks, levelSnapshotRecords } from './level-snapshot.js';
import { writeLevelBatch } from '../storage/level-batch-write.js';
import { decodeKvCommand, encodeKvResult, type KvResult } from './kv-command.js';

type Db = ClassicLevel<Buffer, Buffer>;

const DATA = 'd/';
const KEY_APPLIED = Buffer.from('m/applied');
const KEY_RESTORING = Buffer.from('m/restoring');
const KEY_SYNC = Buffer.from('m/sync');
const EMPTY = new Uint8Array(0);

function dataKey(key: string): Buffer {
  return Buffer.from(DATA + key, 'utf8');
}

function encodeIndex(i: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeDoubleBE(i, 0);
  return b;
}

export class KvStateMachine implements StateMachine {
  private applied = 0;
  /** Values written by batches not yet in LevelDB, with the batch that wrote them. */
  private readonly pending = new Map<string, { value: Buffer | null; seq: number }>();
  private writeSeq = 0;
  private writes: Promise<void> = Promise.resolve();
  private writeError: Error | undefined;

  private constructor(private readonly db: Db) {}

  /** Resolves once every applied batch is in LevelDB (not necessarily fsynced). */
  private async flushed(): Promise<void> {
    await this.writes;
    if (this.writeError) throw this.writeError;
  }

  static async open(dir: string): Promise<KvStateMachine> {
    const db: Db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer', writeBufferSize: 16 * 1024 * 1024 });
    await db.open();
    const sm = new KvStateMachine(db);
    if ((await db.get(KEY_RESTORING)) !== undefined) {
      // A restore was cut short: the data is a mix of two states. Start empty at index 0; the
      // runtime re-installs the snapshot it staged (or replays the log).
      await db.clear();
      await db.put(KEY_APPLIED, encodeIndex(0), { sync: true });
    }
    const a = await db.get(KEY_APPLIED);
    sm.applied = a ? a.readDoubleBE(0) : 0;
    return sm;
  }

  async appliedIndex(): Promise<number> {
    return this.applied;
  }

  async apply(entries: readonly Entry[]): Promise<Uint8Array[]> {
    if (entries.length === 0) return [];
    if (this.writeError) throw this.writeError;
    const results: Uint8Array[] = [];
    // Writes earlier in this batch must be visible to reads later in it.
    const overlay = new Map<string, Buffer | null>();
    const ops: Array<{ type: 'put'; key: Buffer; value: Buffer } | { type: 'del'; key: Buffer }> = [];
    const batch = {
      put: (key: Buffer, value: Buffer) => ops.push({ type: 'put', key, value }),
      del: (key: Buffer) => ops.push({ type: 'del', key }),
    };
    const read = async (key: string): Promise<Buffer | null> => {
      if (overlay.has(key)) return overlay.get(key)!;
      const p = this.pending.get(key);
      if (p) return p.value;
      return (await this.db.get(dataKey(key))) ?? null;
    };
    for (const e of entries) {
      if (e.type !== 'normal' || e.data.length === 0) {
        results.push(EMPTY);
        continue;
      }
      let c: ReturnType<typeof decodeKvCommand>;
      try {
        c = decodeKvCommand(e.data);
      } catch {
        // A malformed command is a deterministic no-op on every replica. Only decoding is
        // caught: a read that fails below is this replica's own trouble and fails the apply.
        results.push(encodeKvResult({ ok: false, value: null }));
        continue;
      }
      let r: KvResult;
      switch (c.op) {
        case 'put':
          overlay.set(c.key, Buffer.from(c.value));
          batch.put(dataKey(c.key), Buffer.from(c.value));
          r = { ok: true, value: null };
          break;
        case 'delete': {
          const had = (await read(c.key)) !== null;
          overlay.set(c.key, null);
          batch.del(dataKey(c.key));
          r = { ok: had, value: null };
          break;
        }
        case 'get': {
          const v = await read(c.key);
          r = { ok: v !== null, value: v };
          break;
        }
        case 'cas': {
          const cur = await read(c.key);
          const match = c.expected === null ? cur === null : cur !== null && Buffer.compare(cur, Buffer.from(c.expected)) === 0;
          if (match) {
            overlay.set(c.key, Buffer.from(c.value));
            batch.put(dataKey(c.key), Buffer.from(c.value));
          }
          r = { ok: match, value: match ? null : cur };
          break;
        }
      }
      results.push(encodeKvResult(r));
    }
    const last = entries[entries.length - 1]!.index;
    batch.put(KEY_APPLIED, encodeIndex(last));
    const seq = ++this.writeSeq;
    for (const [k, v] of overlay) this.pending.set(k, { value: v, seq });
    // No fsync: the Raft log is the durable record; sync() runs before compaction.
    this.writes = this.writes.then(async () => {
      if (this.writeError) return;
      try {
        await writeLevelBatch(this.db, ops);
      } catch (e) {
        this.writeError = e instanceof Error ? e : new Error(String(e));
        return;
      }
      for (const k of overlay.keys()) if (this.pending.get(k)?.seq === seq) this.pending.delete(k);
    });
    this.applied = last;
    return results;
  }

  async snapshot(): Promise<SnapshotSource> {
    await this.flushed();
    const snap = this.db.snapshot();
    const a = await this.db.get(KEY_APPLIED, { snapshot: snap });
    const appliedIndex = a ? a.readDoubleBE(0) : 0;
    const db = this.db;
    return {
      appliedIndex,
      chunks: () => levelSnapshotChunks(db, snap),
      close: async () => {
        await snap.close();
      },
    };
  }

  async restore(meta: SnapshotMeta, chunks: AsyncIterable<Uint8Array>): Promise<void> {
    await this.flushed();
    this.pending.clear();
    await this.db.put(KEY_RESTORING, Buffer.from([1]), { sync: true });
    await this.db.clear({ gte: Buffer.from(DATA), lt: Buffer.from('d0') });
    let batch = this.db.batch();
    let n = 0;
    for await (const [k, v] of levelSnapshotRecords(chunks)) {
      if (k.equals(KEY_APPLIED) || k.equals(KEY_RESTORING)) continue;
      batch.put(k, v);
      if (++n % 1000 === 0) {
        await batch.write();
        batch = this.db.batch();
      }
    }
    batch.put(KEY_APPLIED, encodeIndex(meta.index));
    batch.del(KEY_RESTORING);
    await batch.write({ sync: true });
    this.applied = meta.index;
  }

  async sync(): Promise<void> {
    // A synced write flushes LevelDB's log, making every earlier batch durable. It goes on the
    // write chain, behind every batch applied so far.
    const done = this.writes.then(() => (this.writeError ? undefined : this.db.put(KEY_SYNC, Buffer.alloc(0), { sync: true })));
    this.writes = done.catch((e: unknown) => {
      this.writeError ??= e instanceof Error ? e : new Error(String(e));
    });
    await this.flushed();
  }

  async stateHash(): Promise<string> {
    await this.flushed();
    const h = createHash('sha256');
    for await (const [k, v] of this.db.iterator({ gte: Buffer.from(DATA), lt: Buffer.from('d0') })) {
      const len = Buffer.allocUnsafe(8);
      len.writeUInt32BE(k.length, 0);
      len.writeUInt32BE(v.length, 4);
      h.update(len).update(k).update(v);
    }
    return h.digest('hex');
  }

  /** A local, non-linearizable read (tests inspect replicas with it). */
  async getLocal(key: string): Promise<Buffer | undefined> {
    await this.flushed();
    return this.db.get(dataKey(key));
  }

  async close(): Promise<void> {
    await this.writes;
    await this.db.close();
  }
}
