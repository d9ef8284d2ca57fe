// The ready loop: ticks the core, and handles each Ready in etcd's order:
//
//   persist (Ready.snapshot + entries + hard state, ONE atomic batch, fsync if mustSync)
//   -> send messages -> install snapshot data / apply committed entries -> advance.
//
// Group commit falls out of the loop: while one batch is being fsynced, proposals and messages
// keep arriving and are stepped into the core; the next Ready carries all of them, so many
// proposals share one fsync.

import type { MemoryStorage } from '../core/memory-storage.js';
import type { RaftNode } from '../core/raft-node.js';
import type { DriverTimers, LogSink, RaftTransport, TimerHandle } from '../ports.js';
import type { HardState, Message, Ready } from '../types.js';
import type { ApplyPipeline } from './apply-pipeline.js';
import type { DriverState } from './driver-state.js';
import type { Leadership } from './leadership.js';
import type { LogCompaction } from './log-compaction.js';
import type { ReadBarrier } from './read-barrier.js';
import type { SnapshotExchange } from './snapshot-exchange.js';

/** The parts a Ready is handed to. */
export interface ReadyParts {
  leadership: Leadership;
  pipeline: ApplyPipeline;
  reads: ReadBarrier;
  snapshots: SnapshotExchange;
  compaction: LogCompaction;
}

export class ReadyLoop {
  private ticker: TimerHandle | undefined;
  private running = false;
  private scheduled = false;
  private idleWaiters: Array<() => void> = [];
  /** A commit-only hard state not yet written (it rides along with the next write). */
  private pendingHardState: HardState | undefined;
  /** Term and vote as last written to disk. */
  private durableTerm: number;
  private durableVote: string;
  private readonly leadership: Leadership;
  private readonly pipeline: ApplyPipeline;
  private readonly reads: ReadBarrier;
  private readonly snapshots: SnapshotExchange;
  private readonly compaction: LogCompaction;
  private readonly runScheduled = (): void => {
    this.scheduled = false;
    void this.run();
  };
  private readonly tick = (): void => {
    if (this.state.stopped) return;
    this.node.tick();
    this.schedule();
  };

  constructor(
    private readonly state: DriverState,
    private readonly node: RaftNode,
    private readonly storage: MemoryStorage,
    private readonly log: LogSink,
    private readonly transport: RaftTransport,
    private readonly timers: DriverTimers,
    parts: ReadyParts,
  ) {
    this.leadership = parts.leadership;
    this.pipeline = parts.pipeline;
    this.reads = parts.reads;
    this.snapshots = parts.snapshots;
    this.compaction = parts.compaction;
    const st = node.status();
    this.durableTerm = st.term;
    this.durableVote = st.vote;
  }

  /** Starts ticking the core. */
  start(): void {
    this.ticker = this.timers.every(this.state.timing.tickMs, this.tick);
    this.schedule();
  }

  stopTicking(): void {
    if (this.ticker) this.timers.cancel(this.ticker);
  }

  /** Runs the loop soon (once, however often asked before it runs). */
  schedule(): void {
    if (this.running || this.scheduled || this.state.failed) return;
    this.scheduled = true;
    this.timers.soon(this.runScheduled);
  }

  /** Resolves once the loop ran out of Readies. */
  waitIdle(): Promise<void> {
    if (!this.running && !this.scheduled) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stop: a commit-only hard state still held is written (best effort). */
  async flushHardState(): Promise<void> {
    if (this.pendingHardState && !this.state.failed) {
      await this.log.persist({ hardState: this.pendingHardState, entries: [] }, false).catch(() => undefined);
      this.pendingHardState = undefined;
    }
  }

  private async run(): Promise<void> {
    const state = this.state;
    if (this.running) return;
    if (state.failed) {
      // A run scheduled before the driver failed: whoever waits for the loop to go idle (stop)
      // must hear it now, as no later run will come.
      if (!this.scheduled) this.wakeIdleWaiters();
      return;
    }
    this.running = true;
    try {
      while (this.node.hasReady() && !state.failed) {
        const rd = this.node.ready();
        await this.handleReady(rd);
        this.node.advance(rd);
        this.compaction.maybeCompact();
      }
    } catch (e) {
      state.fail(e);
    } finally {
      this.running = false;
      if (!this.scheduled) this.wakeIdleWaiters();
    }
  }

  private wakeIdleWaiters(): void {
    const idle = this.idleWaiters;
    this.idleWaiters = [];
    for (const f of idle) f();
  }

  private async handleReady(rd: Ready): Promise<void> {
    const state = this.state;
    state.stats.readies++;
    if (rd.softState) this.leadership.onSoftState(rd.softState.leader, rd.softState.role);
    if (rd.hardState) state.term = rd.hardState.term;

    // 0. A leader may send its appends and heartbeats while its own fsync runs (Raft thesis
    //    10.2.1; etcd does the same): it counts itself toward a commit, but committed entries
    //    only come out of a later Ready, after this write finished. Nothing that carries a
    //    new term or vote goes early.
    let messages = rd.messages;
    if (state.mutations.has('send-vote-before-persist') && messages.length > 0) {
      this.send(messages);
      messages = [];
    }
    const termOrVoteChanged = rd.hardState !== undefined && (rd.hardState.term !== this.durableTerm || rd.hardState.vote !== this.durableVote);
    if (state.role === 'leader' && !termOrVoteChanged && !rd.snapshot && messages.length > 0) {
      const early = messages.filter((m) => m.type === 'app' || m.type === 'heartbeat');
      if (early.length > 0) {
        this.send(early);
        messages = early.length === messages.length ? [] : messages.filter((m) => m.type !== 'app' && m.type !== 'heartbeat');
      }
    }

    // 0b. Committed entries this node already holds durably need not wait for this Ready's
    //     write: they go to the apply chain now and apply while the fsync runs (etcd applies
    //     and saves in parallel too). MemoryStorage mirrors only what was persisted, so its last
    //     index bounds the durable ones; but this Ready's entries replace whatever the disk holds
    //     from their first index on (a follower's conflicting suffix), so those are durable only
    //     once written (etcd bounds it by the unstable offset). A follower's entries committed in
    //     the same message that brought them wait for the write (step 5), so the state machine
    //     never gets ahead of the local log.
    let committed = rd.committedEntries;
    if (committed.length > 0 && !rd.snapshot) {
      let durableLast = this.storage.lastIndex();
      if (rd.entries.length > 0 && !state.mutations.has('apply-before-durable')) durableLast = Math.min(durableLast, rd.entries[0]!.index - 1);
      let n = 0;
      while (n < committed.length && committed[n]!.index <= durableLast) n++;
      if (n > 0) {
        this.pipeline.queue(n === committed.length ? committed : committed.slice(0, n));
        committed = n === committed.length ? [] : committed.slice(n);
      }
    }

    // From the write that drops the log to the end of the restore, no apply may run: entries a
    // follower carried to its next apply window would be evaluated from memory while the disk no
    // longer holds them, beside the restore (found by the Raft simulator, seed 130735).
    let releaseApplies: (() => void) | undefined;
    if (rd.snapshot) {
      // A compaction of our own must not write its older snapshot point over this one.
      this.pipeline.endApplyWindow();
      await this.compaction.inFlight();
      releaseApplies = await this.pipeline.holdForSnapshot();
    }
    try {
      await this.persistSendInstall(rd, messages);
    } finally {
      releaseApplies?.();
    }

    // 4. Read states: the reads resolve once applied reaches their index.
    if (rd.readStates.length > 0) this.reads.confirm(rd.readStates);

    // 5. Apply committed entries, in order, on the apply chain: the loop moves on to the next
    //    Ready (and its fsync) while the state machine writes. Results go to the proposals.
    if (committed.length > 0) this.pipeline.queue(committed);
  }

  /** Steps 1–3 of a Ready: persist, send, install a snapshot from the leader. */
  private async persistSendInstall(rd: Ready, messages: Message[]): Promise<void> {
    const state = this.state;
    // 1. Persist (one atomic batch; fsync when the Ready says so) and mirror into MemoryStorage.
    //    A hard state that only moves the commit index needs no write of its own (the commit
    //    index is recomputed after a crash): it rides along with the next write.
    const hardState = rd.hardState ?? this.pendingHardState;
    if (rd.snapshot || rd.entries.length > 0 || rd.mustSync) {
      const t0 = this.timers.nowMs();
      await this.log.persist({ hardState, entries: rd.entries, snapshot: rd.snapshot }, rd.mustSync);
      const dt = this.timers.nowMs() - t0;
      const stats = state.stats;
      stats.persistMs += dt;
      if (dt > stats.persistMaxMs) stats.persistMaxMs = dt;
      this.pendingHardState = undefined;
      if (hardState) {
        this.durableTerm = hardState.term;
        this.durableVote = hardState.vote;
      }
      if (rd.mustSync) stats.syncedWrites++;
      stats.entriesPersisted += rd.entries.length;
      if (rd.snapshot) this.storage.applySnapshot(rd.snapshot);
      if (rd.entries.length > 0) this.storage.append(rd.entries);
    } else if (rd.hardState) {
      this.pendingHardState = rd.hardState;
    }
    if (rd.hardState) this.storage.setHardState(rd.hardState);

    // 2. Send: only now may peers hear of the term, vote and entries just made durable.
    if (messages.length > 0) this.send(messages);

    // 3. A snapshot from the leader: the log now records it; restore the state machine from
    //    the staged file (if we crash first, startup finishes the restore from the same file).
    if (rd.snapshot) await this.snapshots.install(rd.snapshot);
  }

  /** Messages to the transport; a 'snap' starts a snapshot transfer instead. */
  private send(messages: Message[]): void {
    let regular = messages;
    if (messages.some((m) => m.type === 'snap')) {
      regular = [];
      for (const m of messages) (m.type === 'snap' ? this.snapshots.startSend(m) : regular.push(m));
    }
    this.transport.send(regular);
  }
}
