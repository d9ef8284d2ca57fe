// The stored bytes of live job and run records, kept in memory so the run lifecycle (fire, claim,
// finish) does not read back from LevelDB what the previous command of the same run just wrote:
// in a herd every run is read three times and written three times on every replica.
//
// It is a cache of the store, nothing more: an entry always holds exactly the bytes the store
// holds under its key (entries change only after the batch that wrote them is in the store), so
// reading through it cannot change what apply computes. Only commit admits new entries, and only
// for the commands that will read them again soon (admission is decided by the caller); finished
// runs are dropped, not kept (their next reader is a history trim, much later). Bounded by bytes,
// evicting the oldest entry first.

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
  private bytes = 0;
  /** Reads answered / not answered from memory (tests and benches). */
  readonly stats = { hits: 0, misses: 0 };

  constructor(private readonly maxBytes = DEFAULT_RECORD_CACHE_BYTES) {}

  get size(): number {
    return this.entries.size;
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
        this.entries.delete(u.key);
        this.bytes -= u.key.length + old.length;
      }
      if (u.value === null || (old === undefined && !u.admit)) continue;
      // Re-inserted at the end: an entry written again is young again.
      this.entries.set(u.key, u.value);
      this.bytes += u.key.length + u.value.length;
    }
    if (this.bytes <= this.maxBytes) return;
    for (const [k, v] of this.entries) {
      this.entries.delete(k);
      this.bytes -= k.length + v.length;
      if (this.bytes <= this.maxBytes * 0.9) break;
    }
  }

  /** The store changed behind the cache's back (snapshot restore, a failed write). */
  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }
}
