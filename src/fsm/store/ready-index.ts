// Runs waiting for a worker (PENDING, or FAILED with a retry scheduled, and not held), kept in
// memory on every replica instead of as q\0 / t\0 keys in LevelDB.
//
// Why: in a herd every run put two ready keys at fire and deleted them at claim — 4 of the 15
// LevelDB writes a run cost on each of three replicas — and the dispatcher read them back with a
// range scan plus a getMany of the records. The index is derived state, like the per-state
// counters: a pure function of the stored run records, updated by apply after each batch is in
// the store and rebuilt from the s\0 PENDING / FAILED ranges when the store is opened or
// restored, so every replica (and every future leader) holds the same entries and nothing is
// lost across restart, snapshot or leader change. It never feeds back into apply (no command
// reads it), so it cannot make replicas diverge.
//
// Order, as the old key layout had it: priority (high first), then not-before (oldest first),
// then run id. Memory is one small entry per waiting run; a run no worker can take yet costs
// this memory until it is claimed or ends.

export interface ReadyEntry {
  readonly runId: string;
  readonly jobId: string;
  readonly taskType: string;
  readonly priority: number;
  readonly notBeforeMs: number;
}

/** Same position in the index (every ordering field equal). */
export function sameReadyEntry(a: ReadyEntry | undefined, b: ReadyEntry | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.runId === b.runId && a.taskType === b.taskType && a.priority === b.priority && a.notBeforeMs === b.notBeforeMs;
}

/** Within one priority: not-before, then run id (string order, as the stored keys sorted). */
function cmp(a: ReadyEntry, b: ReadyEntry): number {
  if (a.notBeforeMs !== b.notBeforeMs) return a.notBeforeMs - b.notBeforeMs;
  return a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0;
}

/** Full dispatch order across priorities. */
export function compareReady(a: ReadyEntry, b: ReadyEntry): number {
  return b.priority - a.priority || cmp(a, b);
}

/** Chunks at most this long: inserts and deletes move at most a chunk, never the whole list. */
const MAX_CHUNK = 512;

/**
 * A sorted list in chunks. A herd inserts at the end and claims from the front; a plain sorted
 * array would shift every entry on each claim (quadratic over a 100k herd).
 */
class SortedChunks {
  private readonly chunks: ReadyEntry[][] = [];
  size = 0;

  /** The chunk that holds `e` or where it belongs: the first whose last entry is ≥ e (else the last). */
  private chunkOf(e: ReadyEntry): number {
    let lo = 0;
    let hi = this.chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const c = this.chunks[mid]!;
      if (cmp(c[c.length - 1]!, e) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private static lowerBound(c: readonly ReadyEntry[], e: ReadyEntry): number {
    let lo = 0;
    let hi = c.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cmp(c[mid]!, e) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Adds `e`; an entry at the same position (same run) is replaced. True when it was new. */
  add(e: ReadyEntry): boolean {
    if (this.chunks.length === 0) {
      this.chunks.push([e]);
      this.size = 1;
      return true;
    }
    const ci = this.chunkOf(e);
    const c = this.chunks[ci]!;
    const i = SortedChunks.lowerBound(c, e);
    if (i < c.length && cmp(c[i]!, e) === 0) {
      c[i] = e;
      return false;
    }
    c.splice(i, 0, e);
    this.size++;
    if (c.length > MAX_CHUNK) this.chunks.splice(ci + 1, 0, c.splice(MAX_CHUNK >> 1));
    return true;
  }

  /** Removes the entry at `e`'s position; false when there is none. */
  remove(e: ReadyEntry): boolean {
    if (this.chunks.length === 0) return false;
    const ci = this.chunkOf(e);
    const c = this.chunks[ci]!;
    const i = SortedChunks.lowerBound(c, e);
    if (i >= c.length || cmp(c[i]!, e) !== 0) return false;
    c.splice(i, 1);
    this.size--;
    if (c.length === 0) this.chunks.splice(ci, 1);
    return true;
  }

  /** Entries in order while not-before ≤ nowMs, at most `limit`, appended to `out`. */
  collect(out: ReadyEntry[], limit: number, nowMs: number): void {
    for (const c of this.chunks) {
      for (const e of c) {
        if (out.length >= limit || e.notBeforeMs > nowMs) return;
        out.push(e);
      }
    }
  }
}

/** One task type's runs: a sorted list per priority, priorities highest first. */
class TypeQueue {
  private readonly byPriority = new Map<number, SortedChunks>();
  /** Priorities present, highest first. */
  private readonly priorities: number[] = [];

  get empty(): boolean {
    return this.priorities.length === 0;
  }

  get size(): number {
    let n = 0;
    this.byPriority.forEach((l) => (n += l.size));
    return n;
  }

  add(e: ReadyEntry): boolean {
    let list = this.byPriority.get(e.priority);
    if (!list) {
      list = new SortedChunks();
      this.byPriority.set(e.priority, list);
      let i = 0;
      while (i < this.priorities.length && this.priorities[i]! > e.priority) i++;
      this.priorities.splice(i, 0, e.priority);
    }
    return list.add(e);
  }

  remove(e: ReadyEntry): boolean {
    const list = this.byPriority.get(e.priority);
    if (!list || !list.remove(e)) return false;
    if (list.size === 0) {
      this.byPriority.delete(e.priority);
      this.priorities.splice(this.priorities.indexOf(e.priority), 1);
    }
    return true;
  }

  /** Due entries in dispatch order: a priority's runs not yet due do not hold back lower ones. */
  collect(limit: number, nowMs: number): ReadyEntry[] {
    const out: ReadyEntry[] = [];
    for (const p of this.priorities) {
      if (out.length >= limit) break;
      this.byPriority.get(p)!.collect(out, limit, nowMs);
    }
    return out;
  }
}

export class ReadyIndex {
  private readonly byType = new Map<string, TypeQueue>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  add(e: ReadyEntry): void {
    let q = this.byType.get(e.taskType);
    if (!q) this.byType.set(e.taskType, (q = new TypeQueue()));
    if (q.add(e)) this.count++;
  }

  /** Removes `e` (matched by position: run id, task type, priority, not-before). */
  remove(e: ReadyEntry): void {
    const q = this.byType.get(e.taskType);
    if (!q || !q.remove(e)) return;
    this.count--;
    if (q.empty) this.byType.delete(e.taskType);
  }

  /**
   * The first `limit` entries in dispatch order, of these task types (all when absent), with
   * not-before at or before `nowMs` (all when absent).
   */
  scan(limit: number, taskTypes?: readonly string[], nowMs = Number.MAX_SAFE_INTEGER): ReadyEntry[] {
    if (limit <= 0) return [];
    const types = taskTypes ?? [...this.byType.keys()];
    const parts: ReadyEntry[] = [];
    for (const t of new Set(types)) {
      const q = this.byType.get(t);
      if (q) parts.push(...q.collect(limit, nowMs));
    }
    if (types.length <= 1) return parts;
    return parts.sort(compareReady).slice(0, limit);
  }

  /** Task types with at least one run waiting, and how many wait (the watchdog's unserved check). */
  waitingByType(): Map<string, number> {
    const out = new Map<string, number>();
    this.byType.forEach((q, t) => out.set(t, q.size));
    return out;
  }

  clear(): void {
    this.byType.clear();
    this.count = 0;
  }
}
