// An in-memory store with the slice of LevelDB's (abstract-level's) interface the state machine
// uses: get / getSync / getMany / put / del, array and chained batches (with the private `_put`/`_del` the
// DirectBatch fills), clear over a range, and iterators (entries, keys, values; gt/gte/lt/lte,
// reverse, limit; next / nextv / all / async iteration) that see the store as it was when they
// were created, as LevelDB's snapshot-pinning iterators do. The scheduler simulator runs the real
// SchedulerStateMachine on it (SchedulerStateMachine.openOn), so no apply path differs from
// production's. Keys order by UTF-16 code units, which matches LevelDB's byte order for the
// store's keys (ASCII ids and separators).
//
// A write is in memory at once: the store models a process crash (what was written survives,
// as it does in the OS page cache), not a power loss.
//
// `faults` injects I/O errors (the scheduler simulator's storage faults): a read that fails, a
// write that fails before it lands, or one that lands and still reports failure (its outcome
// unknown to the caller), as LevelDB's LEVEL_IO_ERROR.
import type { Db } from './apply-txn.js';

/** What a store operation is, for `MemoryDb.faults`. */
export type StoreOp = 'read' | 'write';
/** An injected failure: before the operation takes effect, or after a write landed. */
export type StoreFault = 'before' | 'after';

/** The error an injected fault throws: like classic-level's, never one of Herald's typed errors. */
export class StoreIoError extends Error {
  readonly code = 'LEVEL_IO_ERROR';
  constructor(op: StoreOp, when: StoreFault) {
    super(`injected I/O error (${op}, ${when === 'after' ? 'after the write landed' : 'nothing done'})`);
  }
}

type Key = string | Uint8Array;
const keyBytes = new TextEncoder();

interface Range {
  gt?: string;
  gte?: string;
  lt?: string;
  lte?: string;
  reverse?: boolean;
  limit?: number;
  /** 'view' (or 'buffer'): keys come out as their UTF-8 bytes, as classic-level gives them. */
  keyEncoding?: string;
}

type BatchOp = { type: 'put'; key: string; value: Uint8Array } | { type: 'del'; key: string };

const utf8 = new TextDecoder();

function keyOf(k: Key): string {
  return typeof k === 'string' ? k : utf8.decode(k);
}

/** An iterator over a copy of the entries in range, taken at creation. */
class MemoryIterator<T> {
  private i = 0;
  constructor(
    private readonly items: T[],
    private readonly reading: () => void = () => undefined,
  ) {}
  async next(): Promise<T | undefined> {
    this.reading();
    return this.items[this.i++];
  }
  async nextv(n: number): Promise<T[]> {
    this.reading();
    const out = this.items.slice(this.i, this.i + n);
    this.i += out.length;
    return out;
  }
  async all(): Promise<T[]> {
    this.reading();
    const out = this.items.slice(this.i);
    this.i = this.items.length;
    return out;
  }
  async close(): Promise<void> {
    this.i = this.items.length;
  }
  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    while (this.i < this.items.length) {
      this.reading();
      yield this.items[this.i++]!;
    }
  }
}

class MemoryChainedBatch {
  private ops: BatchOp[] = [];
  /** abstract-level counts only the public operations; the DirectBatch relies on that. */
  length = 0;
  constructor(private readonly db: MemoryDb) {}
  put(key: string, value: Uint8Array): this {
    this.length++;
    this._put(key, value);
    return this;
  }
  del(key: string): this {
    this.length++;
    this._del(key);
    return this;
  }
  _put(key: Key, value: Uint8Array): void {
    this.ops.push({ type: 'put', key: keyOf(key), value: value.slice() });
  }
  _del(key: Key): void {
    this.ops.push({ type: 'del', key: keyOf(key) });
  }
  async write(): Promise<void> {
    const ops = this.ops;
    this.ops = [];
    this.db.writeOps(ops);
  }
  async close(): Promise<void> {
    this.ops = [];
  }
}

export class MemoryDb {
  private readonly map = new Map<string, Uint8Array>();
  /** The keys in order. */
  private keysSorted: string[] = [];
  status: 'open' | 'closed' = 'open';
  /** Injected I/O errors, asked once per operation (undefined: none). */
  faults: ((op: StoreOp) => StoreFault | undefined) | undefined;
  /** Told the keys of every write that landed (the scheduler simulator's record of trimmed runs). */
  onWrite: ((keys: readonly string[]) => void) | undefined;

  /** The state machine's encodings: utf8 keys, view values (what DirectBatch checks for). */
  keyEncoding(): { format: string } {
    return { format: 'utf8' };
  }
  valueEncoding(): { format: string } {
    return { format: 'view' };
  }

  async open(): Promise<void> {
    this.status = 'open';
  }
  async close(): Promise<void> {
    this.status = 'closed';
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    this.reading();
    return this.map.get(key);
  }
  getSync(key: string): Uint8Array | undefined {
    this.reading();
    return this.map.get(key);
  }
  async getMany(keys: readonly string[]): Promise<Array<Uint8Array | undefined>> {
    this.reading();
    return keys.map((k) => this.map.get(k));
  }
  async put(key: string, value: Uint8Array): Promise<void> {
    this.writeOps([{ type: 'put', key, value: value.slice() }]);
  }
  async del(key: string): Promise<void> {
    this.writeOps([{ type: 'del', key }]);
  }

  /** Throws an injected read error, if one is drawn. */
  private readonly reading = (): void => {
    if (this.faults?.('read') !== undefined) throw new StoreIoError('read', 'before');
  };

  /** A write of the store's callers: all at once, or (injected) not at all, or landed and reported failed. */
  writeOps(ops: readonly BatchOp[]): void {
    const fault = this.faults?.('write');
    if (fault === 'before') throw new StoreIoError('write', fault);
    this.applyOps(ops);
    this.onWrite?.(ops.map((o) => o.key));
    if (fault === 'after') throw new StoreIoError('write', fault);
  }

  batch(): MemoryChainedBatch;
  batch(ops: ReadonlyArray<{ type: 'put' | 'del'; key: string; value?: Uint8Array }>, options?: unknown): Promise<void>;
  batch(ops?: ReadonlyArray<{ type: 'put' | 'del'; key: string; value?: Uint8Array }>): MemoryChainedBatch | Promise<void> {
    if (ops === undefined) return new MemoryChainedBatch(this);
    try {
      this.writeOps(ops.map((o) => (o.type === 'put' ? { type: 'put', key: o.key, value: o.value!.slice() } : { type: 'del', key: o.key })));
    } catch (e) {
      return Promise.reject(e);
    }
    return Promise.resolve();
  }

  async clear(range: Range = {}): Promise<void> {
    this.writeOps(this.rangeKeys(range).map((key) => ({ type: 'del', key })));
  }

  iterator(range: Range = {}): MemoryIterator<[Key, Uint8Array]> {
    const asBytes = range.keyEncoding === 'view' || range.keyEncoding === 'buffer';
    return new MemoryIterator(this.rangeKeys(range).map((k) => [asBytes ? keyBytes.encode(k) : k, this.map.get(k)!]), this.reading);
  }
  keys(range: Range = {}): MemoryIterator<string> {
    return new MemoryIterator(this.rangeKeys(range), this.reading);
  }
  values(range: Range = {}): MemoryIterator<Uint8Array> {
    return new MemoryIterator(this.rangeKeys(range).map((k) => this.map.get(k)!), this.reading);
  }

  async compactRange(): Promise<void> {}

  /** The number of keys (tests). */
  get size(): number {
    return this.map.size;
  }

  /** Applies a batch's operations in order, all at once. */
  applyOps(ops: readonly BatchOp[]): void {
    for (const op of ops) {
      const had = this.map.has(op.key);
      if (op.type === 'put') {
        this.map.set(op.key, op.value);
        if (!had) this.keysSorted.splice(this.lowerBound(op.key), 0, op.key);
      } else if (had) {
        this.map.delete(op.key);
        this.keysSorted.splice(this.lowerBound(op.key), 1);
      }
    }
  }

  /** Index of the first key >= k. */
  private lowerBound(k: string): number {
    const a = this.keysSorted;
    let lo = 0;
    let hi = a.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (a[mid]! < k) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private rangeKeys(r: Range): string[] {
    const a = this.keysSorted;
    let from = 0;
    let to = a.length;
    if (r.gte !== undefined) from = this.lowerBound(r.gte);
    if (r.gt !== undefined) {
      from = this.lowerBound(r.gt);
      if (a[from] === r.gt) from++;
    }
    if (r.lt !== undefined) to = Math.min(to, this.lowerBound(r.lt));
    if (r.lte !== undefined) {
      let i = this.lowerBound(r.lte);
      if (a[i] === r.lte) i++;
      to = Math.min(to, i);
    }
    if (to <= from) return [];
    const keys = a.slice(from, to);
    if (r.reverse) keys.reverse();
    const limit = r.limit === undefined || r.limit < 0 ? Infinity : r.limit;
    return keys.length > limit ? keys.slice(0, limit) : keys;
  }

  /** This store where the state machine expects its LevelDB (the subset above is all it calls). */
  asDb(): Db {
    return this as unknown as Db;
  }
}
