// What a watcher sees of apply: the run and job records each apply call wrote, taken from the
// writes apply makes anyway (evaluated commands, or another replica's effects), never by reading
// the store again. The state machine calls the listener after the batch is in the store, only
// when one is set: without a listener, apply does nothing more than test for it.
import type { BatchSink } from '../store/index-key-writes.js';

const R = 0x72; // 'r': run records ("r\0<jobId>\0<slot>\0<suffix>")
const J = 0x6a; // 'j': job records ("j\0<jobId>")

export interface JobWrite {
  readonly jobId: string;
  /** The stored job record; null when the job was deleted. */
  readonly value: Uint8Array | null;
}

export interface StoreChangeListener {
  /**
   * The run records (stored bytes, decodeRunRecord) and job writes of one apply call that left
   * the store at `applied`. Must not throw (a throw is swallowed: apply never fails for it).
   */
  written(applied: number, runs: readonly Uint8Array[], jobs: readonly JobWrite[]): void;
  /** The store was replaced by a snapshot at `applied`: changes up to it are not known. */
  reset(applied: number): void;
}

/** The record writes of one apply call, collected beside the batch they go to. */
export class ChangeCollector implements BatchSink {
  readonly runs: Uint8Array[] = [];
  readonly jobs: JobWrite[] = [];

  constructor(private readonly out: BatchSink) {}

  put(key: string, value: Uint8Array): void {
    this.out.put(key, value);
    if (key.charCodeAt(1) !== 0) return;
    const c = key.charCodeAt(0);
    if (c === R) this.runs.push(value);
    else if (c === J) this.jobs.push({ jobId: key.slice(2), value });
  }

  del(key: string): void {
    this.out.del(key);
    // A run leaves the store only when history is trimmed: not a state change.
    if (key.charCodeAt(0) === J && key.charCodeAt(1) === 0) this.jobs.push({ jobId: key.slice(2), value: null });
  }

  /** A write of another replica's effects (keys as bytes; values copied, they view a message). */
  effect(key: Uint8Array, value: Uint8Array | null): void {
    if (key.length < 2 || key[1] !== 0) return;
    if (key[0] === R) {
      if (value !== null) this.runs.push(value.slice());
    } else if (key[0] === J) {
      this.jobs.push({ jobId: Buffer.from(key.buffer, key.byteOffset + 2, key.length - 2).toString('utf8'), value: value && value.slice() });
    }
  }
}

const NO_SINK: BatchSink = { put: () => undefined, del: () => undefined };

/** A collector for the effects path, which writes its batch itself. */
export function effectsCollector(): ChangeCollector {
  return new ChangeCollector(NO_SINK);
}
