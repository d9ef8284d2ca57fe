// What one apply's batch wrote, as the state machine needs to know it after the write: deleted
// index keys (counted toward compacting their range, tombstone-compactor.ts) and whether any
// dispatch limit (a y\0 key: task type configs, jobs' max_concurrent) was written or deleted, so
// the leader reads its limits again only then. DirectBatch reports every key, whether the batch
// was filled by evaluating commands or by writing a leader's effects.
import type { TombstoneCompactor } from './tombstone-compactor.js';

const Y = 'y'.charCodeAt(0);

/** A key of the dispatch limits (LIMITS_PREFIX, "y\0"), given as a string or as its UTF-8 bytes. */
function isLimitsKey(key: string | Uint8Array): boolean {
  return typeof key === 'string' ? key.charCodeAt(0) === Y && key.charCodeAt(1) === 0 : key[0] === Y && key[1] === 0;
}

export class WrittenKeys {
  /** Set once a dispatch limit was written or deleted. */
  limits = false;

  constructor(private readonly tombstones: Pick<TombstoneCompactor, 'noteDelete'>) {}

  written(key: string | Uint8Array, deleted: boolean): void {
    if (deleted) this.tombstones.noteDelete(key);
    if (isLimitsKey(key)) this.limits = true;
  }
}
