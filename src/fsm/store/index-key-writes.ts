// How a transaction's index keys and per-state counts are written: the smallest set of puts and
// deletes that turns a record's index keys before into its keys after, and the counters' encoding.
import { FEATURE_LEVEL } from '../commands/feature-levels.js';
import { runIndexKey } from './records.js';

/**
 * Where the transaction's writes go: a LevelDB chained batch. Written straight into it, without
 * an operation object per write in between (~11 per run of a herd, on every node).
 */
export interface BatchSink {
  put(key: string, value: Uint8Array): unknown;
  del(key: string): unknown;
}

const EMPTY = new Uint8Array();
const ONE_BYTE = Uint8Array.of(0);

/**
 * What a key that carries no value (an index key) is stored with at cluster feature level
 * `level`: one byte from INDEX_VALUES on (feature-levels.ts says why), empty below. Readers never
 * look at it.
 */
export function keyOnlyValue(level: number): Uint8Array {
  return level >= FEATURE_LEVEL.INDEX_VALUES ? ONE_BYTE : EMPTY;
}

/**
 * The writes that turn a changed record's index keys `before` into `after`; `value` is
 * keyOnlyValue's. From INDEX_VALUES on (a non-empty value) the keys the record keeps are written
 * again too: a key written empty before the level was raised must end with the same bytes on
 * every replica, and a replica that applied "delete it" and "add it back" in two calls rewrote it
 * with the new value while one that applied them in one call saw it kept (found by the scheduler
 * simulator, seed 734632594). Below the level the writes are what they always were.
 */
export function diffIndexKeys(out: BatchSink, before: readonly string[], after: readonly string[], value: Uint8Array): void {
  // keyOnlyValue is non-empty exactly from INDEX_VALUES on.
  const rewriteKept = value.length > 0;
  // A record has at most three index keys: a scan beats building sets.
  for (let i = 0; i < before.length; i++) if (!after.includes(before[i]!)) out.del(before[i]!);
  for (let i = 0; i < after.length; i++) if (rewriteKept || !before.includes(after[i]!)) out.put(after[i]!, value);
}

/** diffIndexKeys for a changed run's one state key (runIndexKey): states before and after, -1 = no record. */
export function diffRunIndex(out: BatchSink, key: string, before: number, after: number, value: Uint8Array): void {
  if (before === after) {
    // Kept: rewritten from INDEX_VALUES on, for the same reason as in diffIndexKeys.
    if (after >= 0 && value.length > 0) out.put(runIndexKey(after, key), value);
    return;
  }
  if (before >= 0) out.del(runIndexKey(before, key));
  if (after >= 0) out.put(runIndexKey(after, key), value);
}

export function encodeCount(n: number): Uint8Array {
  return new TextEncoder().encode(String(n));
}

export function decodeCount(v: Uint8Array | undefined): number {
  return v === undefined ? 0 : Number(new TextDecoder().decode(v));
}
