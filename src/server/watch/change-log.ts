// The node's change log: the run and job records each apply call wrote, kept in a bounded ring by
// applied index and shared by every watcher on the node (each holds a cursor, not a copy).
// Records arrive as the stored bytes apply already produced and are copied into the change
// arena (change-arena.ts: recording costs a copy, not an object per change); they are decoded and
// encoded as watch events once, the first time a watcher reaches their batch (change-batch.ts),
// and those bytes are shared by all watchers whose filter they match.
import type { ChangeRecorder, StoreChangeListener } from '../../fsm/index.js';
import { ChangeArena } from './change-arena.js';
import { ChangeBatch } from './change-batch.js';

/** A job write, for append(). */
export interface JobWrite {
  readonly jobId: string;
  /** The stored job record; null when the job was deleted. */
  readonly value: Uint8Array | null;
}

export interface ChangeLogOptions {
  /** The ring holds about this many changes (runs + jobs); older batches are dropped. */
  maxEvents: number;
  /** The arena's chunk size (tests make it small to cross chunks often). */
  arenaChunkBytes?: number;
}

export const DEFAULT_CHANGE_LOG_EVENTS = 100_000;

export class ChangeLog implements StoreChangeListener {
  /** Retained batches, oldest first; batches[i] is batch number firstBatchNo + i. */
  private batches: ChangeBatch[] = [];
  private head = 0;
  private firstBatchNo = 0;
  private events = 0;
  /** Changes after this index are all known (what was before it was dropped, or never seen). */
  private floorIndex: number;
  private last: number;
  /** Cumulative change count through the newest batch (watchers' backlog is measured against it). */
  private seq = 0;
  private readonly listeners = new Set<() => void>();
  private readonly arena: ChangeArena;

  constructor(
    appliedIndex: number,
    private readonly options: ChangeLogOptions = { maxEvents: DEFAULT_CHANGE_LOG_EVENTS },
  ) {
    this.floorIndex = appliedIndex;
    this.last = appliedIndex;
    this.arena = new ChangeArena(options.arenaChunkBytes);
  }

  /** The oldest index a watch may resume from. */
  get floor(): number {
    return this.floorIndex;
  }

  /** The applied index the newest change (or no-op apply) reached. */
  get lastIndex(): number {
    return this.last;
  }

  /** Changes held now. */
  get size(): number {
    return this.events;
  }

  /** Cumulative change count so far. */
  get totalSeq(): number {
    return this.seq;
  }

  /** The number the next appended batch will get. */
  get endBatchNo(): number {
    return this.firstBatchNo + this.batches.length - this.head;
  }

  get startBatchNo(): number {
    return this.firstBatchNo;
  }

  batch(no: number): ChangeBatch | undefined {
    return this.batches[this.head + no - this.firstBatchNo];
  }

  /** The number of the first batch with an index above `index` (endBatchNo when none). */
  batchAfter(index: number): number {
    let lo = this.head;
    let hi = this.batches.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.batches[mid]!.index <= index) lo = mid + 1;
      else hi = mid;
    }
    return this.firstBatchNo + lo - this.head;
  }

  /** Called after each append (and reset); watchers flush on it. */
  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  begin(): ChangeRecorder {
    this.arena.begin();
    return this.arena;
  }

  written(applied: number): void {
    const { bytes, count } = this.arena.take();
    if (applied <= this.last) return;
    this.last = applied;
    if (count > 0) {
      this.seq += count;
      this.batches.push(new ChangeBatch(applied, this.seq, bytes, count));
      this.events += count;
      this.evict();
    }
    this.notify();
  }

  discarded(): void {
    // The next begin() writes over the region.
  }

  /** One apply call's changes in one step (tests, tools). */
  append(applied: number, runs: readonly Uint8Array[], jobs: readonly JobWrite[]): void {
    const rec = this.begin();
    for (const r of runs) rec.run(r);
    for (const j of jobs) rec.job(`j\0${j.jobId}`, j.value);
    this.written(applied);
  }

  reset(applied: number): void {
    // Batch numbers go on past a gap: a watcher whose next batch is gone sees it and is cut.
    const next = this.endBatchNo + 1;
    this.batches = [];
    this.head = 0;
    this.firstBatchNo = next;
    this.events = 0;
    this.floorIndex = applied;
    this.last = applied;
    this.notify();
  }

  private evict(): void {
    while (this.events > this.options.maxEvents && this.batches.length - this.head > 1) {
      const b = this.batches[this.head]!;
      this.batches[this.head] = undefined as unknown as ChangeBatch;
      this.head++;
      this.firstBatchNo++;
      this.events -= b.size;
      this.floorIndex = b.index;
    }
    // Compact the array now and then instead of shifting it per batch.
    if (this.head > 1024 && this.head * 2 > this.batches.length) {
      this.batches = this.batches.slice(this.head);
      this.head = 0;
    }
  }

  private notify(): void {
    for (const fn of this.listeners) fn();
  }
}
