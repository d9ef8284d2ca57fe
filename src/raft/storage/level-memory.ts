// What a LevelDB store holds in memory by its own estimate (memtables, the table cache's index and
// filter blocks): the part of a node's native memory the V8 heap figures do not show.
interface PropertySource {
  readonly status: string;
  getProperty?(property: string): string;
}

/** Bytes; 0 for a store that is not open or cannot tell (the simulator's in-memory store). */
export function levelMemoryBytes(db: PropertySource): number {
  if (db.status !== 'open' || typeof db.getProperty !== 'function') return 0;
  try {
    const n = Number(db.getProperty('leveldb.approximate-memory-usage'));
    return Number.isFinite(n) ? n : 0;
  } catch {
    return 0;
  }
}
