// The stored bytes of live job and run records, kept in memory so the run lifecycle (fire, claim,
// finish) does not read back from LevelDB what the previous command of the same run just wrote:
// in a herd every run is read three times and written three times on every replica.
//
// It is a cache of the store, nothing more: an entry always holds exactly the bytes the store
// holds under its key (entries change only after the batch that wrote them is in the store), so
// reading through it cannot change what apply computes. Only commit admits new entries, and only
// for the commands that will read them again soon (admission is decided by the caller); finished
// runs are dropped, not kept (their next reader is a history trim, much later). Bounded by the
// bytes its entries keep alive (a value sliced from a shared slab counts the slab once), evicting
// the entry admitted first.

/** The default budget: key and value bytes of the entries (the Map's own overhead comes on top). */
export const DEFAULT_RECORD_CACHE_BYTES = 48 * 1024 * 1024;

/** A change to publish once its batch is in the store: bytes, or null for a delete. */
export interface CacheUpdate {
  readonly key: string;
  readonly value: Uint8Array | null;
  /** May create an entry (otherwise only an entry already cached is updated or dropped). */
  readonly admit: boolean;
}

export class RecordCache {
  private readonly entries = new Map<string, Uint8Array>();
  /** Memory the entries keep alive: key bytes, plus each buffer they hold once, at its full size. */
  private bytes = 0;
  /** Entries per shared buffer (values that are slices of a larger slab, binary-codec.ts). */
  private readonly slabs = new Map<ArrayBufferLike, number>();
  /** Reads answered / not answered from memory (tests and benches). */
  readonly stats = { hits: 0, misses: 0 };

  constructor(private readonly maxBytes = DEFAULT_RECORD_CACHE_BYTES) {}

  get size(): number {
    return this.entries.size;
  }

  /** What the budget is measured in (tests). */
  get retainedBytes(): number {
    return this.bytes;
  }

  /** Bytes a value newly keeps alive: its own length, or its whole slab for the slab's first entry. */
  private hold(v: Uint8Array): number {
    if (v.byteLength === v.buffer.byteLength) return v.byteLength;
    const n = this.slabs.get(v.buffer) ?? 0;
    this.slabs.set(v.buffer, n + 1);
    return n === 0 ? v.buffer.byteLength : 0;
  }

  /** Bytes no longer kept alive once `v` leaves. */
  private release(v: Uint8Array): number {
    if (v.byteLength === v.buffer.byteLength) return v.byteLength;
    const n = this.slabs.get(v.buffer)!;
    if (n > 1) {
      this.slabs.set(v.buffer, n - 1);
      return 0;
    }
    this.slabs.delete(v.buffer);
    return v.buffer.byteLength;
  }

  get(key: string): Uint8Array | undefined {
    const v = this.entries.get(key);
    if (v === undefined) this.stats.misses++;
    else this.stats.hits++;
    return v;
  }

  /** The entry, without counting a hit or miss: for readers outside apply (their reads are not apply's). */
  peek(key: string): Uint8Array | undefined {
    return this.entries.get(key);
  }

  /** Publishes the changes of a batch that is now in the store. */
  publish(updates: readonly CacheUpdate[]): void {
    for (const u of updates) {
      const old = this.entries.get(u.key);
      if (old !== undefined) {
        if (u.value !== null) {
          // Replaced in place: eviction goes by first admission, which for the run lifecycle
          // (fire, claim, finish within seconds) is as good as by last write, and saves moving
          // the entry on every write of a big map.
          this.entries.set(u.key, u.value);
          this.bytes += this.hold(u.value) - this.release(old);
          continue;
        }
        this.entries.delete(u.key);
        this.bytes -= u.key.length + this.release(old);
        continue;
      }
      if (u.value === null || !u.admit) continue;
      this.entries.set(u.key, u.value);
      this.bytes += u.key.length + this.hold(u.value);
    }
    if (this.bytes <= this.maxBytes) return;
    for (const [k, v] of this.entries) {
      this.entries.delete(k);
      this.bytes -= k.length + this.release(v);
      if (this.bytes <= this.maxBytes * 0.9) break;
    }
  }

  /** The store changed behind the cache's back (snapshot restore, a failed write). */
  clear(): void {
    this.entries.clear();
    this.slabs.clear();
    this.bytes = 0;
  }
}
