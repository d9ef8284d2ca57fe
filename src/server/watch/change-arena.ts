// Where the change log keeps the record bytes of its changes: appended into large chunks, each
// apply call's changes one contiguous region of a chunk. Why not one array per change: a busy
// node writes several records per run, and retaining each as its own buffer (or a view pinning a
// write slab) left every replica a stream of objects to promote and later collect — about a third
// more CPU per run on followers with nobody watching. A chunk is one allocation for thousands of
// changes, freed when the last batch viewing it leaves the ring.
//
// Region layout, per change: tag (1 byte); a job's id: length (2 bytes) and UTF-8 bytes; value
// length (4 bytes) and bytes (none for a deleted job).
import type { ChangeRecorder } from '../../fsm/index.js';

export const RUN_CHANGE = 1;
export const JOB_CHANGE = 2;
export const JOB_DELETED = 3;

export const DEFAULT_CHUNK_BYTES = 1 << 20;

/** Store keys of job records start "j\0". */
const KEY_PREFIX = 2;

export class ChangeArena implements ChangeRecorder {
  private chunk: Buffer;
  private pos = 0;
  private start = 0;
  private count = 0;

  constructor(private readonly chunkBytes = DEFAULT_CHUNK_BYTES) {
    this.chunk = Buffer.allocUnsafeSlow(chunkBytes);
  }

  /** Starts a region (a region not taken is overwritten). */
  begin(): void {
    this.pos = this.start;
    this.count = 0;
  }

  run(value: Uint8Array): void {
    this.reserve(5 + value.length);
    const c = this.chunk;
    c[this.pos] = RUN_CHANGE;
    c.writeUInt32LE(value.length, this.pos + 1);
    c.set(value, this.pos + 5);
    this.pos += 5 + value.length;
    this.count++;
  }

  job(key: string | Uint8Array, value: Uint8Array | null): void {
    const idMax = typeof key === 'string' ? (key.length - KEY_PREFIX) * 3 : key.length - KEY_PREFIX;
    const valueLen = value === null ? 0 : value.length;
    this.reserve(3 + idMax + 4 + valueLen);
    const c = this.chunk;
    const at = this.pos;
    c[at] = value === null ? JOB_DELETED : JOB_CHANGE;
    let idLen: number;
    if (typeof key === 'string') idLen = c.write(key.slice(KEY_PREFIX), at + 3, idMax, 'utf8');
    else {
      c.set(key.subarray(KEY_PREFIX), at + 3);
      idLen = key.length - KEY_PREFIX;
    }
    c.writeUInt16LE(idLen, at + 1);
    let p = at + 3 + idLen;
    if (value !== null) {
      c.writeUInt32LE(valueLen, p);
      c.set(value, p + 4);
      p += 4 + valueLen;
    }
    this.pos = p;
    this.count++;
  }

  /** The region since begin(), and the number of changes in it; the next region follows it. */
  take(): { bytes: Buffer; count: number } {
    const bytes = this.chunk.subarray(this.start, this.pos);
    this.start = this.pos;
    return { bytes, count: this.count };
  }

  private reserve(n: number): void {
    if (this.pos + n <= this.chunk.length) return;
    // The region moves to a new chunk whole; the old one lives on while batches view it.
    const pending = this.chunk.subarray(this.start, this.pos);
    const next = Buffer.allocUnsafeSlow(Math.max(this.chunkBytes, 2 * (pending.length + n)));
    next.set(pending);
    this.chunk = next;
    this.start = 0;
    this.pos = pending.length;
  }
}

/** Calls `onRun` / `onJob` (either may be left out) for each change of a region, in the order they were recorded. */
export function readRegion(
  bytes: Buffer,
  onRun: ((value: Uint8Array) => void) | undefined,
  onJob?: (jobId: string, value: Uint8Array | null) => void,
): void {
  let p = 0;
  while (p < bytes.length) {
    const tag = bytes[p]!;
    if (tag === RUN_CHANGE) {
      const len = bytes.readUInt32LE(p + 1);
      onRun?.(bytes.subarray(p + 5, p + 5 + len));
      p += 5 + len;
      continue;
    }
    const idLen = bytes.readUInt16LE(p + 1);
    const idAt = p + 3;
    p += 3 + idLen;
    if (tag === JOB_DELETED) {
      onJob?.(bytes.toString('utf8', idAt, idAt + idLen), null);
      continue;
    }
    const len = bytes.readUInt32LE(p);
    onJob?.(bytes.toString('utf8', idAt, idAt + idLen), bytes.subarray(p + 4, p + 4 + len));
    p += 4 + len;
  }
}
