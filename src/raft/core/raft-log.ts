// The core's view of the log (etcd's raftLog): the stable part lives in LogStorage, the part not
// yet handed to the runtime for persistence lives in `unstable`, plus the commit and applied
// indexes. Entries in `unstable` take precedence over storage at the same index (a truncation
// on a follower is visible here before the runtime rewrites storage).

import { HeraldError } from '../../herald-error.js';
import type { Entry, LogStorage, SnapshotMeta } from '../types.js';
import { limitSize } from './memory-storage.js';

class Unstable {
  snapshot: SnapshotMeta | undefined;
  entries: Entry[] = [];
  constructor(public offset: number) {}

  lastIndex(): number | undefined {
    if (this.entries.length > 0) return this.offset + this.entries.length - 1;
    return this.snapshot?.index;
  }

  maybeTerm(i: number): number | undefined {
    if (i < this.offset) return this.snapshot && this.snapshot.index === i ? this.snapshot.term : undefined;
    const last = this.lastIndex();
    if (last === undefined || i > last) return undefined;
    return this.entries[i - this.offset]!.term;
  }

  truncateAndAppend(ents: readonly Entry[]): void {
    const after = ents[0]!.index;
    if (after === this.offset + this.entries.length) {
      this.entries.push(...ents);
    } else if (after <= this.offset) {
      // Replaces everything unstable (and, once persisted, storage's suffix from `after`).
      this.offset = after;
      this.entries = ents.slice();
    } else {
      this.entries = this.entries.slice(0, after - this.offset).concat(ents);
    }
  }
}

export type SliceResult = Entry[] | 'compacted';

export class RaftLog {
  readonly unstable: Unstable;
  committed: number;
  applied: number;

  constructor(readonly storage: LogStorage) {
    const first = storage.firstIndex();
    this.unstable = new Unstable(storage.lastIndex() + 1);
    this.committed = first - 1;
    this.applied = first - 1;
  }

  firstIndex(): number {
    const s = this.unstable.snapshot;
    return s ? s.index + 1 : this.storage.firstIndex();
  }

  lastIndex(): number {
    return this.unstable.lastIndex() ?? this.storage.lastIndex();
  }

  /** The term at `i`, or undefined when it is compacted or beyond the log. */
  term(i: number): number | undefined {
    if (i < this.firstIndex() - 1 || i > this.lastIndex()) return undefined;
    const t = this.unstable.maybeTerm(i);
    if (t !== undefined) return t;
    try {
      return this.storage.term(i);
    } catch {
      return undefined;
    }
  }

  lastTerm(): number {
    return this.term(this.lastIndex()) ?? 0;
  }

  matchTerm(i: number, t: number): boolean {
    return this.term(i) === t;
  }

  /** Whether a candidate's log (last index/term) is at least as up to date as ours (§5.4.1). */
  isUpToDate(lastIndex: number, term: number): boolean {
    const lt = this.lastTerm();
    return term > lt || (term === lt && lastIndex >= this.lastIndex());
  }

  /**
   * Appends entries from the leader after the entry (index, logTerm) if our log has it. Returns
   * the index of the last new entry, or undefined when the log-matching check fails.
   */
  maybeAppend(index: number, logTerm: number, committed: number, ents: readonly Entry[], skipMatch = false): number | undefined {
    // The mutation still refuses gaps (index beyond our log) but trusts the previous term.
    const matches = skipMatch ? index <= this.lastIndex() : this.matchTerm(index, logTerm);
    if (!matches) return undefined;
    const lastNew = index + ents.length;
    const ci = this.findConflict(ents);
    if (ci !== 0) {
      if (ci <= this.committed) {
        throw new HeraldError('INTERNAL', `entry ${ci} conflicts with committed entry (committed ${this.committed})`);
      }
      this.append(ents.slice(ci - (index + 1)));
    }
    this.commitTo(Math.min(committed, lastNew));
    return lastNew;
  }

  append(ents: readonly Entry[]): number {
    if (ents.length === 0) return this.lastIndex();
    const after = ents[0]!.index - 1;
    if (after < this.committed) {
      throw new HeraldError('INTERNAL', `append after ${after} is below committed ${this.committed}`);
    }
    this.unstable.truncateAndAppend(ents);
    return this.lastIndex();
  }

  /** The first entry whose term differs from ours (or that we lack), 0 when all match. */
  findConflict(ents: readonly Entry[]): number {
    for (const e of ents) if (!this.matchTerm(e.index, e.term)) return e.index;
    return 0;
  }

  /**
   * The largest index <= `index` whose term is <= `term`, with that term (0 when unknown):
   * everything after it cannot match a log whose entry at `index` has `term`.
   */
  findConflictByTerm(index: number, term: number): [number, number] {
    for (let i = index; i > 0; i--) {
      const t = this.term(i);
      if (t === undefined) return [i, 0];
      if (t <= term) return [i, t];
    }
    return [0, 0];
  }

  /** Entries from `lo` to the end, at most maxBytes (at least one), or 'compacted'. */
  entriesFrom(lo: number, maxBytes: number): SliceResult {
    const last = this.lastIndex();
    if (lo > last) return [];
    return this.slice(lo, last + 1, maxBytes);
  }

  slice(lo: number, hi: number, maxBytes = Infinity): SliceResult {
    if (lo < this.firstIndex()) return 'compacted';
    if (hi > this.lastIndex() + 1) throw new HeraldError('INTERNAL', `slice(${lo},${hi}) beyond last ${this.lastIndex()}`);
    if (lo === hi) return [];
    let ents: Entry[] = [];
    const off = this.unstable.offset;
    if (lo < off) {
      let stored: Entry[];
      try {
        stored = this.storage.entries(lo, Math.min(hi, off), maxBytes);
      } catch {
        return 'compacted';
      }
      // Storage applied a size limit: stop there.
      if (stored.length < Math.min(hi, off) - lo) return stored;
      ents = stored;
    }
    if (hi > off) {
      const from = Math.max(lo, off);
      ents = ents.concat(this.unstable.entries.slice(from - off, hi - off));
    }
    return limitSize(ents, maxBytes);
  }

  unstableEntries(): Entry[] {
    return this.unstable.entries.slice();
  }

  hasNextCommittedEnts(): boolean {
    if (this.unstable.snapshot) return false;
    return this.committed > Math.max(this.applied, this.firstIndex() - 1);
  }

  nextCommittedEnts(): Entry[] {
    if (!this.hasNextCommittedEnts()) return [];
    const off = Math.max(this.applied + 1, this.firstIndex());
    const ents = this.slice(off, this.committed + 1);
    if (ents === 'compacted') throw new HeraldError('INTERNAL', `committed entries from ${off} are compacted`);
    return ents;
  }

  /** Commits up to maxIndex if that entry is from `term` (the Figure 8 rule). */
  maybeCommit(maxIndex: number, term: number, anyTerm = false): boolean {
    if (maxIndex > this.committed && (anyTerm || this.term(maxIndex) === term)) {
      this.commitTo(maxIndex);
      return true;
    }
    return false;
  }

  commitTo(index: number): void {
    if (this.committed >= index) return;
    if (this.lastIndex() < index) {
      throw new HeraldError('INTERNAL', `commit ${index} beyond last index ${this.lastIndex()}`);
    }
    this.committed = index;
  }

  appliedTo(index: number): void {
    if (index === 0 || index <= this.applied) return;
    if (index > this.committed) {
      throw new HeraldError('INTERNAL', `applied ${index} beyond committed ${this.committed}`);
    }
    this.applied = index;
  }

  stableTo(index: number, term: number): void {
    const u = this.unstable;
    if (index < u.offset || u.maybeTerm(index) !== term) return;
    u.entries = u.entries.slice(index + 1 - u.offset);
    u.offset = index + 1;
  }

  stableSnapTo(index: number): void {
    if (this.unstable.snapshot?.index === index) this.unstable.snapshot = undefined;
  }

  restore(s: SnapshotMeta): void {
    this.committed = s.index;
    this.unstable.offset = s.index + 1;
    this.unstable.entries = [];
    this.unstable.snapshot = s;
  }

  snapshot(): SnapshotMeta {
    return this.unstable.snapshot ?? this.storage.snapshot();
  }
}
