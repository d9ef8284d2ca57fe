// Point reads of the state machine's store. LevelDB answers a read of a block it holds in memory
// in a microsecond or two, but an asynchronous read costs a trip through libuv's pool and back
// (~30 µs of CPU, the wake-ups of two threads): a lone create's apply paid that twice for two
// reads. Small key sets are read synchronously on this thread (getSync); large ones (a herd's
// fire batch) still go to the pool in one getMany, where they do not hold up the event loop.
import type { ClassicLevel } from 'classic-level';

/** The reads used here, of the state machine's store (utf8 keys, view values). */
type PointReads = Pick<ClassicLevel<string, Uint8Array>, 'getSync' | 'getMany'>;

/** The most keys read synchronously in one call (a read that misses the page cache blocks the loop). */
export const SYNC_READ_MAX_KEYS = 16;

/** The values of `keys` (undefined where absent), read on this thread when there are few. */
export function readMany(db: PointReads, keys: readonly string[]): Promise<(Uint8Array | undefined)[]> | (Uint8Array | undefined)[] {
  if (keys.length > SYNC_READ_MAX_KEYS) return db.getMany(keys as string[]);
  const out: (Uint8Array | undefined)[] = new Array(keys.length);
  for (let i = 0; i < keys.length; i++) out[i] = db.getSync(keys[i]!);
  return out;
}

/** The value of `key`, or undefined, read on this thread. */
export function readOne(db: PointReads, key: string): Uint8Array | undefined {
  return db.getSync(key);
}
