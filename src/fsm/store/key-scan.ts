// Range scans of the state machine's store that want keys only.
//
// classic-level's key iterator still hands every entry over as a [key, value] pair and converts
// the (empty) value in the store's value encoding: with 'view' that is a zero-length Buffer per
// key — an ArrayBuffer, its backing store, a typed-array view and later the GC's sweeping — about
// half the main thread's cost of a key scan (a 7,000-key due window: bench/README.md, "Ten million
// jobs"). Asking for utf8 values turns each of them into the empty string.
import type { ClassicLevel, KeyIterator, KeyIteratorOptions } from 'classic-level';

type KeyScans = Pick<ClassicLevel<string, Uint8Array>, 'keys'>;

// classic-level ends each native read of a scan at 16 KiB of keys and values by default: ~400 due
// keys, so a 7,000-key due window took 18 trips to LevelDB's thread pool. Up to 1,000 entries per
// trip (abstract-level's chunk for all() and for-await) fit in this.
const SCAN_CHUNK_BYTES = 1 << 20;

/** The keys in `range` (an iterator: `.all()`, or `for await`), without building a value per key. */
export function scanKeys(db: KeyScans, range: KeyIteratorOptions<string>): KeyIterator<ClassicLevel<string, Uint8Array>, string> {
  // valueEncoding is not in the key iterator's option type, but abstract-level reads it there and
  // forwards it to classic-level (abstract-level.js, keys()).
  return db.keys({ highWaterMarkBytes: SCAN_CHUNK_BYTES, ...range, valueEncoding: 'utf8' } as KeyIteratorOptions<string>);
}
