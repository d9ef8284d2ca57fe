// An in-memory LogStorage, modelled on etcd's MemoryStorage. The runtime wraps it and mirrors
// every mutation to LevelDB; the simulator uses it directly as the "durable" part of a node.
//
// Layout: `snap` describes everything up to snap.index (compacted away); `ents` holds the
// entries snap.index+1 .. lastIndex in order. Keeping the snapshot point separate from the
// entries (rather than etcd's dummy entry) keeps term(snap.index) answerable after compaction.

import { HeraldError } from '../../herald-error.js';
import type { ConfState, Entry, HardState, LogStorage, NodeId, SnapshotMeta } from '../types.js';

/** Why a storage read failed; the core treats 'compacted' as "send a snapshot instead". */
export type StorageErrorReason = 'compacted' | 'unavailable' | 'snapshot-out-of-date';

export function storageError(reason: StorageErrorReason, message: string): HeraldError {
  return new HeraldError('INVALID_STATE', message, { reason });
}

export function isStorageError(e: unknown, reason: StorageErrorReason): boolean {
  return e instanceof HeraldError && e.code === 'INVALID_STATE' && e.details.reason === reason;
}

export class MemoryStorage implements LogStorage {
  private hardState: HardState = { term: 0, vote: '', commit: 0 };
  /** The latest snapshot point (what a lagging follower is sent). */
  private snap: SnapshotMeta;
  /** The compaction point: entries up to base.index are gone; base.index <= snap.index. */
  private base: { index: number; term: number } = { index: 0, term: 0 };
  /** Entries base.index+1 .. lastIndex. */
  private ents: Entry[] = [];

  /** A fresh log for a cluster of `voters` (or a full ConfState). */
  constructor(voters: readonly NodeId[] | ConfState) {
    const conf: ConfState = Array.isArray(voters) ? { voters: [...(voters as readonly NodeId[])] } : { ...(voters as ConfState) };
    this.snap = { index: 0, term: 0, conf };
  }

  initialState(): { hardState: HardState; conf: ConfState } {
    return { hardState: { ...this.hardState }, conf: this.snap.conf };
  }

  setHardState(hs: HardState): void {
    this.hardState = { ...hs };
  }

  firstIndex(): number {
    return this.base.index + 1;
  }

  lastIndex(): number {
    return this.base.index + this.ents.length;
  }

  snapshot(): SnapshotMeta {
    return this.snap;
  }

  term(index: number): number {
    if (index < this.base.index) {
      throw storageError('compacted', `term(${index}): compacted up to ${this.base.index}`);
    }
    if (index === this.base.index) return this.base.term;
    if (index > this.lastIndex()) {
      throw storageError('unavailable', `term(${index}): last index is ${this.lastIndex()}`);
    }
    return this.ents[index - this.base.index - 1]!.term;
  }

  entries(lo: number, hi: number, maxBytes = Infinity): Entry[] {
    if (lo <= this.base.index) {
      throw storageError('compacted', `entries(${lo}): compacted up to ${this.base.index}`);
    }
    if (hi > this.lastIndex() + 1) {
      throw storageError('unavailable', `entries(..${hi}): last index is ${this.lastIndex()}`);
    }
    return limitSize(this.ents.slice(lo - this.base.index - 1, hi - this.base.index - 1), maxBytes);
  }

  /**
   * Appends entries, replacing any conflicting suffix: the first entry may start anywhere in
   * (base, lastIndex+1]. Entries at or below the compaction point are already covered and skipped.
   */
  append(entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    let es = entries;
    const first = this.firstIndex();
    if (es[es.length - 1]!.index < first) return;
    if (es[0]!.index < first) es = es.slice(first - es[0]!.index);
    const start = es[0]!.index;
    if (start > this.lastIndex() + 1) {
      throw storageError('unavailable', `append at ${start} leaves a gap after ${this.lastIndex()}`);
    }
    if (start === this.lastIndex() + 1) {
      // The usual case, entries following the last: appended in place. Rebuilding the array
      // copied the whole in-memory log (up to snapshot + keep entries) on every Ready.
      for (let i = 0; i < es.length; i++) this.ents.push(es[i]!);
      return;
    }
    this.ents = this.ents.slice(0, start - first).concat(es);
  }

  /** Replaces the whole log with a received snapshot (its data was installed by the caller). */
  applySnapshot(meta: SnapshotMeta): void {
    if (meta.index < this.snap.index) {
      throw storageError('snapshot-out-of-date', `snapshot ${meta.index} older than ${this.snap.index}`);
    }
    this.snap = meta;
    this.base = { index: meta.index, term: meta.term };
    this.ents = [];
    if (this.hardState.commit < meta.index) this.hardState = { ...this.hardState, commit: meta.index };
  }

  /**
   * Records a snapshot point at `index` (the state machine's applied index, made durable first)
   * without discarding entries; compact() releases them afterwards. `conf` defaults to the
   * current configuration.
   */
  createSnapshot(index: number, conf?: ConfState): SnapshotMeta {
    if (index <= this.snap.index) {
      if (index === this.snap.index) return this.snap;
      throw storageError('snapshot-out-of-date', `snapshot ${index} older than ${this.snap.index}`);
    }
    if (index > this.lastIndex()) {
      throw storageError('unavailable', `snapshot ${index} beyond last index ${this.lastIndex()}`);
    }
    this.snap = { index, term: this.term(index), conf: conf ?? this.snap.conf };
    return this.snap;
  }

  /**
   * Discards entries up to and including `index`. A snapshot must cover it, so a follower that
   * needs the discarded entries can always be sent one.
   */
  compact(index: number): void {
    if (index <= this.base.index) return;
    if (index > this.snap.index) {
      throw storageError('unavailable', `compact(${index}) beyond snapshot ${this.snap.index}`);
    }
    const term = this.term(index);
    this.ents = this.ents.slice(index - this.base.index);
    this.base = { index, term };
  }
}

/** Keeps a prefix of `ents` whose data fits in maxBytes, but always at least one entry. */
export function limitSize(ents: Entry[], maxBytes: number): Entry[] {
  if (ents.length === 0 || maxBytes === Infinity) return ents;
  let size = ents[0]!.data.length;
  let n = 1;
  while (n < ents.length) {
    size += ents[n]!.data.length;
    if (size > maxBytes) break;
    n++;
  }
  return n === ents.length ? ents : ents.slice(0, n);
}
