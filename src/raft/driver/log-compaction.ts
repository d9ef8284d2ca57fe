// Log compaction: every `snapshotEntries` applied entries (or `snapshotBytes` of them), make the
// state machine durable, record a snapshot point at the applied index and drop entries older
// than the trailing window (slow followers within it still catch up from the log, not a snapshot).

import type { MemoryStorage } from '../core/memory-storage.js';
import type { DriverTimers, LogSink } from '../ports.js';
import type { StateMachine } from '../state-machine.js';
import type { ConfState } from '../types.js';
import type { ApplyPipeline } from './apply-pipeline.js';
import type { DriverState } from './driver-state.js';

export interface LogCompactionOptions {
  /** Snapshot every this many applied entries. */
  snapshotEntries: number;
  /** Entries kept behind the snapshot point for slow followers. */
  keepEntries: number;
  /** Also snapshot once the entries applied since the last snapshot carry this many bytes. */
  snapshotBytes: number;
  /** And keep at most this many bytes of entries behind the snapshot point. */
  keepBytes: number;
}

export class LogCompaction {
  /** The compaction in flight, if any: it runs beside the ready loop. */
  private running: Promise<void> | undefined;
  private readonly onDone = (): void => {
    this.running = undefined;
  };
  private readonly onFailed = (e: unknown): void => {
    this.running = undefined;
    this.state.fail(e);
  };

  constructor(
    private readonly state: DriverState,
    private readonly storage: MemoryStorage,
    private readonly log: LogSink,
    private readonly stateMachine: StateMachine,
    private readonly pipeline: ApplyPipeline,
    private readonly timers: DriverTimers,
    private readonly opts: LogCompactionOptions,
    /** The configuration as of a log index: the snapshot point records it. */
    private readonly confAt: (index: number) => ConfState,
  ) {}

  /** The compaction in flight (undefined when none): a snapshot install and stop wait for it. */
  inFlight(): Promise<void> | undefined {
    return this.running;
  }

  /** After each Ready: starts a compaction when enough was applied since the last snapshot point. */
  maybeCompact(): void {
    if (this.running || this.state.stopped) return;
    const snapIndex = this.storage.snapshot().index;
    if (this.state.applied - snapIndex < this.opts.snapshotEntries && this.pipeline.appliedBytesSinceSnapshot < this.opts.snapshotBytes) return;
    // Beside the loop, not in it: awaited there, its syncs and the log range delete held every
    // append, send and commit back for their whole duration (a large create compacts many times).
    this.running = this.compact().then(this.onDone, this.onFailed);
  }

  private async compact(): Promise<void> {
    const t0 = this.timers.nowMs();
    const state = this.state;
    const pipeline = this.pipeline;
    // sync() must not race an apply batch (both write the applied index): it takes its turn on
    // the apply chain, so only applies wait for it while the loop persists and replicates.
    let index = 0;
    let bytes = 0;
    pipeline.endApplyWindow();
    await pipeline.takeTurn(async () => {
      index = state.applied;
      bytes = pipeline.appliedBytesSinceSnapshot;
      await this.stateMachine.sync();
    });
    const storage = this.storage;
    // Stopping, or a snapshot from the leader got there first (the ready loop waits for us before
    // installing one, so this is only a restart of the loop after one).
    if (state.stopped || storage.snapshot().index >= index) return;
    const meta = storage.createSnapshot(index, this.confAt(index));
    pipeline.appliedBytesSinceSnapshot -= bytes;
    const base = this.compactionBase(index);
    const baseTerm = storage.term(base);
    await this.log.compact(meta, { index: base, term: baseTerm });
    storage.compact(base);
    state.stats.compactions++;
    state.stats.compactMs += this.timers.nowMs() - t0;
    state.logger.debug({ snapshot: index, compactedTo: base }, 'log compacted');
  }

  /** The last index compaction drops up to: a window of at most keepEntries entries and keepBytes bytes behind `index`. */
  private compactionBase(index: number): number {
    const storage = this.storage;
    const lowest = Math.max(storage.firstIndex() - 1, index - this.opts.keepEntries);
    if (index <= lowest) return lowest;
    const window = storage.entries(lowest + 1, index + 1);
    let base = index;
    let bytes = 0;
    for (let i = window.length - 1; i >= 0; i--) {
      bytes += window[i]!.data.length;
      if (bytes > this.opts.keepBytes) break;
      base = window[i]!.index - 1;
    }
    return base;
  }
}
