// What a watcher sees of apply: the run and job records each apply call wrote, taken from the
// writes apply makes anyway (evaluated commands, or another replica's effects), never by reading
// the store again. The state machine hands each write to the listener's recorder as it goes into
// the batch, and tells the listener once the batch is in the store (or that it never got there).
// Only when a listener is set: without one, apply does nothing more than test for it.
import type { BatchSink } from '../store/index-key-writes.js';

const R = 0x72; // 'r': run records ("r\0<jobId>\0<slot>\0<suffix>")
const J = 0x6a; // 'j': job records ("j\0<jobId>")

/**
 * Takes one apply call's record writes as they go into the batch. The bytes passed are the
 * caller's (slab slices, views into a peer's message): a recorder copies what it keeps.
 */
export interface ChangeRecorder {
  /** A run record's stored bytes (decodeRunRecord). */
  run(value: Uint8Array): void;
  /** A job record's store key ("j\0<jobId>", as text or UTF-8 bytes) and stored bytes; null when deleted. */
  job(key: string | Uint8Array, value: Uint8Array | null): void;
}

export interface StoreChangeListener {
  /** Starts one apply call's changes; ends with written() or discarded() before the next begin(). */
  begin(): ChangeRecorder;
  /** What was recorded since begin() is in the store, which is now at `applied`. Must not throw. */
  written(applied: number): void;
  /** What was recorded since begin() never reached the store. */
  discarded(): void;
  /** The store was replaced by a snapshot at `applied`, or changes up to it are not known. */
  reset(applied: number): void;
}

/** The record writes of one apply call, handed to the listener's recorder beside the batch they go to. */
export class ChangeCollector implements BatchSink {
  private readonly rec: ChangeRecorder;
  /** A recorder that threw: this call's changes are unknown (the listener is reset, apply goes on). */
  failed = false;

  constructor(
    private readonly listener: StoreChangeListener,
    private readonly out: BatchSink,
  ) {
    this.rec = listener.begin();
  }

  put(key: string, value: Uint8Array): void {
    this.out.put(key, value);
    if (key.charCodeAt(1) !== 0) return;
    const c = key.charCodeAt(0);
    if (c === R) this.run(value);
    else if (c === J) this.job(key, value);
  }

  del(key: string): void {
    this.out.del(key);
    // A run leaves the store only when history is trimmed: not a state change.
    if (key.charCodeAt(0) === J && key.charCodeAt(1) === 0) this.job(key, null);
  }

  /** A write of another replica's effects (keys as bytes; values view the peer's message). */
  effect(key: Uint8Array, value: Uint8Array | null): void {
    if (key.length < 2 || key[1] !== 0) return;
    if (key[0] === R) {
      if (value !== null) this.run(value);
    } else if (key[0] === J) this.job(key, value);
  }

  /** The batch is in the store at `applied` (or, with applied undefined, it never got there). */
  finish(applied: number | undefined): void {
    try {
      if (applied === undefined) this.listener.discarded();
      else if (this.failed) this.listener.reset(applied);
      else this.listener.written(applied);
    } catch {
      // The listener's own bug: its watchers resume or re-list; the store is what counts.
    }
  }

  private run(value: Uint8Array): void {
    if (this.failed) return;
    try {
      this.rec.run(value);
    } catch {
      this.failed = true;
    }
  }

  private job(key: string | Uint8Array, value: Uint8Array | null): void {
    if (this.failed) return;
    try {
      this.rec.job(key, value);
    } catch {
      this.failed = true;
    }
  }
}

const NO_SINK: BatchSink = { put: () => undefined, del: () => undefined };

/** A collector for the effects path, which writes its batch itself. */
export function effectsCollector(listener: StoreChangeListener): ChangeCollector {
  return new ChangeCollector(listener, NO_SINK);
}
