// The node's change log: the run and job records each apply call wrote, kept in a bounded ring by
// applied index and shared by every watcher on the node (each holds a cursor, not a copy).
// Records arrive as the stored bytes apply already produced; they are decoded and encoded as
// watch events once, the first time a watcher reaches their batch (change-batch.ts), and those
// bytes are shared by all watchers whose filter they match.
import type { JobWrite, StoreChangeListener } from '../../fsm/index.js';
import { ChangeBatch } from './change-batch.js';

export interface ChangeLogOptions {
  /** The ring holds about this many changes (runs + jobs); older batches are dropped. */
  maxEvents: number;
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

  constructor(
    appliedIndex: number,
    private readonly options: ChangeLogOptions = { maxEvents: DEFAULT_CHANGE_LOG_EVENTS },
  ) {
    this.floorIndex = appliedIndex;
    this.last = appliedIndex;
  }

  /** The oldest index a watch may resume from. */
  get floor(): number {
    return this.floorIndex;
  }

  /** The applied index the newest change (or no-op apply) reached. */
  get lastIndex(): number {
    return this.last;
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

  written(applied: number, runs: readonly Uint8Array[], jobs: readonly JobWrite[]): void {
    if (applied <= this.last) return;
    this.last = applied;
    const n = runs.length + jobs.length;
    if (n > 0) {
      this.seq += n;
      this.batches.push(new ChangeBatch(applied, this.seq, runs, jobs));
      this.events += n;
      this.evict();
    }
    this.notify();
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
