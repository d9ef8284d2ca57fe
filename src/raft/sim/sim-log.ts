// The driver's LogSink over a SimDisk, laid out as storage/log-store.ts lays out LevelDB: one
// atomic batch per Ready (entries, the deletion of a conflicting suffix, the hard state and an
// installed snapshot's point), synced when the Ready says so; and loadSimLog, which rebuilds the
// core's MemoryStorage from what a restart finds on disk, validating it as LogStore.load does.
//
// Keys: "hs" -> HardState, "snap" -> SnapshotMeta, "base" -> compaction point,
// "log/<index>" -> Entry (zero-padded so keys sort in log order).

import { MemoryStorage } from '../core/memory-storage.js';
import type { DriverMutation } from '../driver/mutations.js';
import type { LogSink, PersistInput } from '../ports.js';
import type { ConfState, Entry, HardState, SnapshotMeta } from '../types.js';
import type { DiskOp, SimDisk } from './sim-disk.js';
import type { SimIo } from './sim-io.js';

export type LogValue =
  | { kind: 'hs'; hs: HardState }
  | { kind: 'entry'; entry: Entry }
  | { kind: 'snap'; meta: SnapshotMeta }
  | { kind: 'base'; index: number; term: number };

export const logKey = (i: number): string => `log/${String(i).padStart(12, '0')}`;

/** What the log on disk looked like to a restart that could not use it. */
export class CorruptLog extends Error {}

export class SimLogSink implements LogSink {
  constructor(
    private readonly disk: SimDisk<LogValue>,
    private readonly io: SimIo,
    /** What is on disk: entries (first, last] after the compaction point. */
    private durableFirst: number,
    private durableLast: number,
    private readonly mutations: ReadonlySet<DriverMutation>,
    /** Entries that landed on disk, for the log-matching checker. */
    private readonly landed: (entries: readonly Entry[]) => void,
  ) {}

  persist(input: PersistInput, sync: boolean): Promise<void> {
    const ops: DiskOp<LogValue>[] = [];
    if (input.snapshot) {
      const s = input.snapshot;
      for (let i = this.durableFirst; i <= this.durableLast; i++) ops.push({ key: logKey(i), delete: true });
      ops.push({ key: 'snap', value: { kind: 'snap', meta: s } });
      ops.push({ key: 'base', value: { kind: 'base', index: s.index, term: s.term } });
      this.durableFirst = s.index + 1;
      this.durableLast = s.index;
    }
    const entries = input.entries;
    if (entries.length > 0) {
      for (const e of entries) ops.push({ key: logKey(e.index), value: { kind: 'entry', entry: e } });
      const newLast = entries[entries.length - 1]!.index;
      if (!this.mutations.has('skip-conflict-truncation')) {
        for (let i = newLast + 1; i <= this.durableLast; i++) ops.push({ key: logKey(i), delete: true });
        this.durableLast = newLast;
      } else this.durableLast = Math.max(this.durableLast, newLast);
    }
    if (input.hardState) ops.push({ key: 'hs', value: { kind: 'hs', hs: input.hardState } });
    if (ops.length === 0) return Promise.resolve();
    return this.io.write('log', 'log append', () => {
      this.disk.writeBatch(ops);
      if (sync) this.disk.sync();
      if (entries.length > 0) this.landed(entries);
    });
  }

  async compact(snap: SnapshotMeta, base: { index: number; term: number }): Promise<void> {
    const ops: DiskOp<LogValue>[] = [
      { key: 'snap', value: { kind: 'snap', meta: snap } },
      { key: 'base', value: { kind: 'base', index: base.index, term: base.term } },
    ];
    await this.io.write('log', 'log compaction point', () => {
      this.disk.writeBatch(ops);
      this.disk.sync();
    });
    if (base.index >= this.durableFirst) {
      const dels: DiskOp<LogValue>[] = [];
      for (let i = this.durableFirst; i <= base.index; i++) dels.push({ key: logKey(i), delete: true });
      this.durableFirst = base.index + 1;
      await this.io.write('log', 'log compaction', () => this.disk.writeBatch(dels));
    }
  }
}

/** The log a restart finds (throws CorruptLog when it is inconsistent), and its on-disk range. */
export function loadSimLog(disk: SimDisk<LogValue>, bootstrap: ConfState): { storage: MemoryStorage; first: number; last: number } {
  const hsV = disk.read('hs');
  const snapV = disk.read('snap');
  const baseV = disk.read('base');
  const hard: HardState = hsV?.kind === 'hs' ? hsV.hs : { term: 0, vote: '', commit: 0 };
  const snap: SnapshotMeta = snapV?.kind === 'snap' ? snapV.meta : { index: 0, term: 0, conf: bootstrap };
  const base = baseV?.kind === 'base' ? { index: baseV.index, term: baseV.term } : { index: snap.index, term: snap.term };
  if (base.index > snap.index) throw new CorruptLog(`compaction point ${base.index} is past the snapshot ${snap.index}`);
  const entries: Entry[] = [];
  let prev: Entry | undefined;
  for (const [, v] of disk.entries('log/')) {
    if (v.kind !== 'entry') continue;
    const e = v.entry;
    if (e.index <= base.index) continue; // left behind by a compaction cut short
    if (prev === undefined && e.index !== base.index + 1) throw new CorruptLog(`log starts at ${e.index}, compaction point ${base.index}`);
    if (prev !== undefined && e.index !== prev.index + 1) throw new CorruptLog(`log has a gap after ${prev.index}`);
    const prevTerm = prev ? prev.term : base.term;
    if (e.term < prevTerm) throw new CorruptLog(`entry ${e.index} has term ${e.term} below the previous term ${prevTerm}`);
    entries.push(e);
    prev = e;
  }
  const last = prev ? prev.index : base.index;
  if (last < snap.index) throw new CorruptLog(`log ends at ${last}, before the snapshot point ${snap.index}`);
  if (hard.commit > last) throw new CorruptLog(`commit ${hard.commit} is beyond the last entry ${last}`);
  const ms = new MemoryStorage(snap.conf);
  if (base.index > 0) ms.applySnapshot({ index: base.index, term: base.term, conf: snap.conf });
  ms.append(entries);
  if (snap.index > base.index) ms.createSnapshot(snap.index, snap.conf);
  ms.setHardState({ ...hard, commit: Math.max(hard.commit, base.index) });
  return { storage: ms, first: base.index + 1, last };
}
