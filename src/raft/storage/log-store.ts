// The durable Raft log: a LevelDB database mirrored into the core's MemoryStorage.
//
// The core reads a synchronous LogStorage (etcd's MemoryStorage); this store loads it from
// LevelDB at start (validating every record) and mirrors each Ready into LevelDB as ONE atomic
// batch, fsynced when the Ready says so, before any message that depends on it is sent. The
// driver is the only caller and never overlaps two writes, so the on-disk order is the Ready
// order. Memory stays bounded because the driver compacts (see compact()).

import { ClassicLevel } from 'classic-level';
import { HeraldError } from '../../herald-error.js';
import { MemoryStorage } from '../core/memory-storage.js';
import type { LogSink, PersistInput } from '../ports.js';
import type { ConfState, Entry, HardState, NodeId, SnapshotMeta } from '../types.js';
import { writeLevelBatch } from './level-batch-write.js';
import { levelMemoryBytes } from './level-memory.js';
import {
  ENTRY_KEY_END,
  ENTRY_PREFIX,
  KEY_BASE,
  KEY_CLUSTER,
  KEY_HARD,
  KEY_SNAP,
  corrupt,
  decodeEntry,
  decodeRecord,
  encodeEntry,
  encodeRecord,
  entryKey,
  indexOfEntryKey,
} from './storage-codec.js';

/** Written once at bootstrap; a node refuses to serve another cluster's data. */
export interface ClusterIdentity {
  clusterId: string;
  voters: NodeId[];
  /**
   * Chosen at this member's first start: a node restarted on a wiped data dir is a new
   * incarnation under the same id (absent in data dirs written before incarnations existed).
   */
  incarnation?: string;
}

export interface LogStoreStats {
  /** Batches written with sync:true (each one fsync of LevelDB's WAL). */
  syncedWrites: number;
  /** Entries written. */
  entriesWritten: number;
}

type Db = ClassicLevel<Buffer, Buffer>;
type BatchOp = { type: 'put'; key: Buffer; value: Buffer } | { type: 'del'; key: Buffer };

export class LogStore implements LogSink {
  readonly stats: LogStoreStats = { syncedWrites: 0, entriesWritten: 0 };
  /** What is on disk: entries (base.index, lastIndex]. */
  private durableFirst = 1;
  private durableLast = 0;
  private closed = false;

  private constructor(private readonly db: Db) {}

  /** LevelDB's own estimate of the memory it holds (memtables and table cache); 0 once closed. */
  memoryBytes(): number {
    return this.closed ? 0 : levelMemoryBytes(this.db);
  }

  static async open(dir: string): Promise<LogStore> {
    // A larger memtable means fewer table flushes and compactions (each ends with its own
    // fsyncs) competing with the log's synced writes; entries are small and short-lived.
    const db: Db = new ClassicLevel<Buffer, Buffer>(dir, {
      keyEncoding: 'buffer',
      valueEncoding: 'buffer',
      writeBufferSize: 32 * 1024 * 1024,
      compression: false,
    });
    await db.open();
    return new LogStore(db);
  }

  async readIdentity(): Promise<ClusterIdentity | undefined> {
    const v = await this.db.get(KEY_CLUSTER);
    return v === undefined ? undefined : decodeRecord<ClusterIdentity>(v, 'cluster identity');
  }

  async writeIdentity(id: ClusterIdentity): Promise<void> {
    await this.db.put(KEY_CLUSTER, encodeRecord(id), { sync: true });
  }

  /** True when the log has never been written (a fresh node). */
  async isEmpty(): Promise<boolean> {
    for await (const _ of this.db.keys({ limit: 1 })) return false;
    return true;
  }

  /**
   * Reads and validates everything, and returns the MemoryStorage the core will read.
   * Any inconsistency is CORRUPT_STORAGE: a node must not vote or lead on a damaged log.
   */
  async load(conf: ConfState): Promise<MemoryStorage> {
    const hsRaw = await this.db.get(KEY_HARD);
    const snapRaw = await this.db.get(KEY_SNAP);
    const baseRaw = await this.db.get(KEY_BASE);
    const hard: HardState = hsRaw ? decodeRecord<HardState>(hsRaw, 'hard state') : { term: 0, vote: '', commit: 0 };
    const snap: SnapshotMeta = snapRaw ? decodeRecord<SnapshotMeta>(snapRaw, 'snapshot metadata') : { index: 0, term: 0, conf };
    const base: { index: number; term: number } = baseRaw
      ? decodeRecord<{ index: number; term: number }>(baseRaw, 'compaction point')
      : { index: snap.index, term: snap.term };
    if (!validHard(hard)) throw corrupt(`hard state is malformed: ${JSON.stringify(hard)}`);
    if (!(base.index <= snap.index)) throw corrupt(`compaction point ${base.index} is past the snapshot ${snap.index}`);

    const entries: Entry[] = [];
    const stale: Buffer[] = [];
    let prev: Entry | undefined;
    for await (const [k, v] of this.db.iterator({ gte: ENTRY_PREFIX, lt: ENTRY_KEY_END })) {
      const keyIndex = indexOfEntryKey(k);
      if (keyIndex < 0) throw corrupt(`malformed entry key ${Buffer.from(k).toString('hex')}`);
      const e = decodeEntry(v, `entry ${keyIndex}`);
      if (e.index !== keyIndex) throw corrupt(`entry stored under index ${keyIndex} claims index ${e.index}`);
      if (e.index <= base.index) {
        // Compaction writes the new base first and deletes the old entries after; a crash in
        // between leaves these behind. They are covered by the snapshot: drop them.
        stale.push(Buffer.from(k));
        continue;
      }
      if (prev === undefined && e.index !== base.index + 1) {
        throw corrupt(`log starts at ${e.index} but the compaction point is ${base.index} (missing entries)`);
      }
      if (prev !== undefined && e.index !== prev.index + 1) {
        throw corrupt(`log has a gap: entry ${prev.index} is followed by ${e.index}`);
      }
      const prevTerm = prev ? prev.term : base.term;
      if (e.term < prevTerm) throw corrupt(`entry ${e.index} has term ${e.term} below the previous term ${prevTerm}`);
      entries.push(e);
      prev = e;
    }
    const last = prev ? prev.index : base.index;
    if (last < snap.index) throw corrupt(`log ends at ${last}, before the snapshot point ${snap.index}`);
    if (hard.commit > last) throw corrupt(`commit index ${hard.commit} is beyond the last log entry ${last}`);
    if (prev && hard.term < prev.term) throw corrupt(`hard state term ${hard.term} is below the last entry's term ${prev.term}`);
    if (stale.length > 0) await this.db.batch(stale.map((key) => ({ type: 'del' as const, key })));

    const ms = new MemoryStorage(snap.conf);
    if (base.index > 0) ms.applySnapshot({ index: base.index, term: base.term, conf: snap.conf });
    ms.append(entries);
    if (snap.index > base.index) ms.createSnapshot(snap.index, snap.conf);
    ms.setHardState({ ...hard, commit: Math.max(hard.commit, base.index) });
    this.durableFirst = base.index + 1;
    this.durableLast = last;
    return ms;
  }

  /**
   * Mirrors one Ready (snapshot, entries, hard state) as one atomic batch. `sync` is the
   * Ready's mustSync: term, vote and new entries must be on disk before anyone hears of them.
   */
  async persist(input: PersistInput, sync: boolean): Promise<void> {
    this.assertOpen();
    const ops: BatchOp[] = [];
    if (input.snapshot) {
      const s = input.snapshot;
      // An installed snapshot replaces the whole log.
      for (let i = this.durableFirst; i <= this.durableLast; i++) ops.push({ type: 'del', key: entryKey(i) });
      ops.push({ type: 'put', key: KEY_SNAP, value: encodeRecord(s) });
      ops.push({ type: 'put', key: KEY_BASE, value: encodeRecord({ index: s.index, term: s.term }) });
      this.durableFirst = s.index + 1;
      this.durableLast = s.index;
    }
    if (input.entries.length > 0) {
      const first = input.entries[0]!.index;
      if (first > this.durableLast + 1) {
        throw new HeraldError('INTERNAL', `append at ${first} would leave a gap after ${this.durableLast}`);
      }
      for (const e of input.entries) ops.push({ type: 'put', key: entryKey(e.index), value: encodeEntry(e) });
      const newLast = input.entries[input.entries.length - 1]!.index;
      // A follower's conflicting suffix beyond the new entries is gone for good.
      for (let i = newLast + 1; i <= this.durableLast; i++) ops.push({ type: 'del', key: entryKey(i) });
      this.durableLast = newLast;
      this.stats.entriesWritten += input.entries.length;
    }
    if (input.hardState) ops.push({ type: 'put', key: KEY_HARD, value: encodeRecord(input.hardState) });
    if (ops.length === 0) return;
    await writeLevelBatch(this.db, ops, { sync });
    if (sync) this.stats.syncedWrites++;
  }

  /**
   * Records a local snapshot point and discards entries up to `base` (base <= snap.index).
   * The caller has made the state machine durable up to snap.index first.
   */
  async compact(snap: SnapshotMeta, base: { index: number; term: number }): Promise<void> {
    this.assertOpen();
    await this.db.batch(
      [
        { type: 'put', key: KEY_SNAP, value: encodeRecord(snap) },
        { type: 'put', key: KEY_BASE, value: encodeRecord(base) },
      ],
      { sync: true },
    );
    this.stats.syncedWrites++;
    if (base.index >= this.durableFirst) {
      const from = entryKey(this.durableFirst);
      const to = entryKey(base.index + 1);
      await this.db.clear({ gte: from, lt: to });
      this.durableFirst = base.index + 1;
      // LevelDB keeps the deleted entries' table files (and its maps of them) until a compaction
      // reaches them, and the log's sequential keys rarely trigger one: a node's log directory
      // grew by a 32 MiB table every few minutes, each mapped into the process. Compacting the
      // dropped range removes them; it runs on LevelDB's thread beside the log's writes.
      await this.db.compactRange(from, to);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.db.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new HeraldError('SHUTTING_DOWN', 'log store is closed');
  }
}

function validHard(h: HardState): boolean {
  return (
    Number.isSafeInteger(h.term) && h.term >= 0 && typeof h.vote === 'string' && Number.isSafeInteger(h.commit) && h.commit >= 0
  );
}
