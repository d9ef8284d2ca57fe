// The driver runs the pure Raft core: the only place with timers (ticks on the monotonic clock),
// the single ordered writer of the log, and the ready loop, in etcd's order:
//
//   persist (Ready.snapshot + entries + hard state, ONE atomic batch, fsync if mustSync)
//   -> send messages -> install snapshot data / apply committed entries -> advance.
//
// Group commit falls out of the loop: while one batch is being fsynced, proposals and messages
// keep arriving and are stepped into the core; the next Ready carries all of them, so many
// proposals share one fsync. Nothing here touches the wall clock except message stamping in
// the transport.

import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { HeraldError, isHeraldError } from '../../herald-error.js';
import { RaftNode, type RaftStatus } from '../core/raft-node.js';
import type { MemoryStorage } from '../core/memory-storage.js';
import type { EffectsReplication, StateMachine } from '../state-machine.js';
import type { Entry, HardState, Message, NodeId, Ready, Role, SnapshotMeta } from '../types.js';
import type { LogStore } from '../storage/log-store.js';
import { systemMonotonicClock, type MonotonicClock } from './monotonic-clock.js';
import type { PeerInfo, PeerTransport } from '../../server/peer/peer-transport.js';
import { ProposalTracker, type ProposalOutcome } from './proposal-tracker.js';
import { pruneStagedSnapshots, readSnapshotFile, stagedSnapshotPath } from '../storage/snapshot-files.js';
import { sendSnapshot } from '../../server/peer/snapshot-sender.js';
import { unsafeSkipFsyncEnabled, WriteBehindLog } from '../storage/unsafe-durability.js';

export interface RaftTimingOptions {
  /** One core tick, in ms (default 100). */
  tickMs: number;
  /** Election timeout in ticks (default 10; randomized in [n, 2n)). */
  electionTicks: number;
  /** Heartbeat interval in ticks (default 1). */
  heartbeatTicks: number;
}

export interface RaftDriverOptions extends Partial<RaftTimingOptions> {
  id: NodeId;
  clusterId: string;
  members: readonly PeerInfo[];
  logStore: LogStore;
  storage: MemoryStorage;
  stateMachine: StateMachine;
  transport: PeerTransport;
  logger: Logger;
  /** Where received snapshots are staged. */
  snapshotDir: string;
  /** Take a snapshot (and compact) every this many applied entries (default 10000). */
  snapshotEntries?: number;
  /** Entries kept behind the snapshot point for slow followers (default 5000). */
  compactionKeepEntries?: number;
  /**
   * Also snapshot once the entries applied since the last snapshot carry this many bytes of
   * commands (default 64 MiB), and keep at most `compactionKeepBytes` (default 32 MiB) of them
   * behind the snapshot point: the log is held in memory, and batched commands are large (a
   * CreateJobs of 1,000 jobs is ~100 KB), so a count alone let a node hold hundreds of MB.
   */
  snapshotBytes?: number;
  compactionKeepBytes?: number;
  maxSizePerMsg?: number;
  maxInflightMsgs?: number;
  defaultProposalTimeoutMs?: number;
  /** Largest command accepted by propose() (default 4 MiB; the peer stream limit is 16 MiB). */
  maxProposalBytes?: number;
  clock?: MonotonicClock;
  /** Negative control only (unsafe-durability.ts): acknowledge writes before they are durable. */
  unsafeSkipFsync?: boolean;
  /** Applied proposals are answered in groups of this many, yielding between groups (default 32; 0 = all at once). */
  resolveGroup?: number;
  /**
   * A follower gathers committed entries for up to this long before applying them in one call
   * (default 0 = at once; reads, leadership, snapshots and compaction end it early). See queueApply.
   */
  followerApplyWindowMs?: number;
  /**
   * Effects replication (state-machine.ts EffectsReplication; default off here, on in a Herald
   * node): the leader sends the writes of each apply to its followers beside the log
   * (PeerTransport.sendEffects), and a follower writes those instead of evaluating the entries.
   */
  replicateEffects?: boolean;
}

export interface LeaderChange {
  leaderId: NodeId;
  /** The leader's client address ('' when unknown or no leader). */
  leaderAddress: string;
  term: number;
  role: Role;
}

export interface RaftDriverEvents {
  /** The known leader changed (leaderId '' = none known). */
  leaderChanged: [LeaderChange];
  /** This node became leader (the scheduler starts its timing wheel here). */
  becameLeader: [{ term: number }];
  /** This node stopped being leader. */
  lostLeadership: [{ term: number }];
  /** The state machine applied up to this index. */
  applied: [{ index: number }];
  /** Storage or the state machine failed: the node must stop (it cannot continue safely). */
  fatal: [Error];
  /** A local proposal finished: 'ok' once applied here, else the error code (metrics). */
  proposed: [{ outcome: string; ms: number }];
}

export interface DriverStats {
  readies: number;
  syncedWrites: number;
  entriesPersisted: number;
  entriesApplied: number;
  proposals: number;
  snapshotsSent: number;
  snapshotsInstalled: number;
  compactions: number;
  /** Time compactions took, from start to the log range deleted (they run beside the loop). */
  compactMs: number;
  /** Time spent in log writes / state machine applies (ms), for benches and diagnosis. */
  persistMs: number;
  persistMaxMs: number;
  applyMs: number;
  applyMaxMs: number;
  /** Effects replication: effects sent (leader) and received (follower), entries applied by writing effects (follower). */
  effectsSent: number;
  effectsReceived: number;
  entriesAppliedFromEffects: number;
}

interface ReadWaiter {
  resolve: (index: number) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

interface AppliedWaiter {
  index: number;
  resolve: () => void;
  reject: (e: Error) => void;
}

const NO_LEADER = '';
/** A follower's apply window ends early once this many entries, or bytes of them, gathered. */
const MAX_WINDOW_ENTRIES = 1024;
const MAX_WINDOW_BYTES = 16 * 1024 * 1024;
/** Effects a follower holds for entries it has not applied yet (a herd's few seconds fit). */
const MAX_BUFFERED_EFFECTS_BYTES = 64 * 1024 * 1024;

export class RaftDriver {
  readonly events = new EventEmitter<RaftDriverEvents>();
  readonly stats: DriverStats = {
    readies: 0,
    syncedWrites: 0,
    entriesPersisted: 0,
    entriesApplied: 0,
    proposals: 0,
    snapshotsSent: 0,
    snapshotsInstalled: 0,
    compactions: 0,
    compactMs: 0,
    effectsSent: 0,
    effectsReceived: 0,
    entriesAppliedFromEffects: 0,
    persistMs: 0,
    persistMaxMs: 0,
    applyMs: 0,
    applyMaxMs: 0,
  };
  readonly timing: RaftTimingOptions;
  private readonly node: RaftNode;
  private readonly resolveGroup: number;
  private readonly resultWanted = (index: number): boolean => this.proposals.waitsFor(index);
  private readonly proposals = new ProposalTracker();
  private readonly reads = new Map<string, ReadWaiter>();
  private appliedWaiters: AppliedWaiter[] = [];
  private readonly snapshotsInFlight = new Set<NodeId>();
  private readonly addresses = new Map<NodeId, PeerInfo>();
  private readonly clock: MonotonicClock;
  private readonly snapshotEntries: number;
  private readonly keepEntries: number;
  private readonly snapshotBytes: number;
  private readonly keepBytes: number;
  /** Command bytes applied since the last snapshot point (the byte trigger of maybeCompact). */
  private appliedBytesSinceSnapshot = 0;
  /** The log compaction in flight, if any: it runs beside the Ready loop (maybeCompact). */
  private compaction: Promise<void> | undefined;
  private readonly defaultTimeoutMs: number;
  private ticker: NodeJS.Timeout | undefined;
  private loopRunning = false;
  private loopScheduled = false;
  private loopIdle: Array<() => void> = [];
  /** Applies run in order on this chain, overlapping the next Ready's fsync. */
  private applyChain: Promise<void> = Promise.resolve();
  /** Committed entries waiting for the apply link queued on the chain (queueApply). */
  private pendingApply: Entry[] = [];
  private pendingApplyBytes = 0;
  /** An apply link is on the chain and has not yet taken pendingApply. */
  private applyQueued = false;
  private readonly followerApplyWindowMs: number;
  private readonly effects: EffectsReplication | undefined;
  /**
   * Committed entries up to this index already waited one apply window for their effects: if
   * those have not come by the next window, the follower evaluates them itself.
   */
  private carriedUpTo = 0;
  /** Effects from the leader (receiveEffects) by the applied index they start at, until used or stale. */
  private readonly effectsByStart = new Map<number, { readonly toApplied: number; readonly effects: Uint8Array }>();
  private effectsBytes = 0;
  /** Ends a follower's apply window early (it became leader, a snapshot or compaction needs the chain, stop). */
  private endApplyWindow: (() => void) | undefined;
  /** A commit-only hard state not yet written (it rides along with the next write). */
  private pendingHardState: HardState | undefined;
  /** Term and vote as last written to disk. */
  private durableTerm = 0;
  private durableVote = '';
  private applied: number;
  private leader: NodeId = NO_LEADER;
  private role: Role = 'follower';
  private term = 0;
  private readSeq = 0;
  private stopped = false;
  private failed: Error | undefined;
  /** Monotonic ms of the last message received from each peer. */
  private readonly lastHeard = new Map<NodeId, number>();
  /** Only with the skip-fsync negative control: the modelled page cache in front of the log. */
  private readonly writeBehind: WriteBehindLog | undefined;

  constructor(private readonly opts: RaftDriverOptions, applied: number) {
    this.clock = opts.clock ?? systemMonotonicClock;
    // Every proposal or read waiting out an election listens for the next leader change: hundreds
    // can wait at once, which is not a leak (each removes its listener when it resolves).
    this.events.setMaxListeners(0);
    this.resolveGroup = opts.resolveGroup ?? 32;
    this.followerApplyWindowMs = opts.followerApplyWindowMs ?? 0;
    this.effects = opts.replicateEffects ? opts.stateMachine.effects : undefined;
    this.timing = {
      tickMs: opts.tickMs ?? 100,
      electionTicks: opts.electionTicks ?? 10,
      heartbeatTicks: opts.heartbeatTicks ?? 1,
    };
    this.snapshotEntries = opts.snapshotEntries ?? 10_000;
    this.keepEntries = opts.compactionKeepEntries ?? 5_000;
    this.snapshotBytes = opts.snapshotBytes ?? 64 * 1024 * 1024;
    this.keepBytes = opts.compactionKeepBytes ?? 32 * 1024 * 1024;
    this.defaultTimeoutMs = opts.defaultProposalTimeoutMs ?? 10_000;
    for (const m of opts.members) this.addresses.set(m.id, m);
    this.applied = applied;
    if (opts.unsafeSkipFsync ?? unsafeSkipFsyncEnabled()) this.writeBehind = new WriteBehindLog(opts.logStore, () => this.clock.nowMs());
    this.node = new RaftNode({
      id: opts.id,
      storage: opts.storage,
      applied,
      electionTicks: this.timing.electionTicks,
      heartbeatTicks: this.timing.heartbeatTicks,
      maxSizePerMsg: opts.maxSizePerMsg ?? 1024 * 1024,
      maxInflightMsgs: opts.maxInflightMsgs ?? 256,
      preVote: true,
      checkQuorum: true,
      random: Math.random,
    });
    const st = this.node.status();
    this.term = st.term;
    this.durableTerm = st.term;
    this.durableVote = st.vote;
  }

  // ------------------------------------------------------------------ lifecycle

  start(): void {
    this.ticker = setInterval(() => {
      if (this.stopped) return;
      this.node.tick();
      this.scheduleLoop();
    }, this.timing.tickMs);
    this.scheduleLoop();
  }

  /** Stops ticking and fails whatever is still waiting. Storage is closed by the owner. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.ticker) clearInterval(this.ticker);
    await this.waitLoopIdle();
    this.endApplyWindow?.();
    await this.compaction;
    if (this.writeBehind) await this.writeBehind.close().catch(() => undefined);
    await this.applyChain.catch(() => undefined);
    if (this.pendingHardState && !this.failed) {
      await this.opts.logStore.persist({ hardState: this.pendingHardState, entries: [] }, false).catch(() => undefined);
      this.pendingHardState = undefined;
    }
    this.proposals.failAll((i) => new HeraldError('OUTCOME_UNKNOWN', `node stopped before entry ${i} was applied`));
    for (const [, r] of this.reads) {
      clearTimeout(r.timer);
      r.reject(new HeraldError('SHUTTING_DOWN', 'node is shutting down'));
    }
    this.reads.clear();
    for (const w of this.appliedWaiters) w.reject(new HeraldError('SHUTTING_DOWN', 'node is shutting down'));
    this.appliedWaiters = [];
  }

  // ------------------------------------------------------------------ inputs

  /** Messages from the transport. */
  step(messages: readonly Message[]): void {
    if (this.stopped) return;
    const now = this.clock.nowMs();
    for (const m of messages) {
      if (m.to !== this.opts.id) continue;
      this.lastHeard.set(m.from, now);
      if (m.type === 'snap') continue; // only via InstallSnapshot, once the data is staged
      try {
        this.node.step(m);
      } catch (e) {
        this.opts.logger.warn({ err: e, type: m.type, from: m.from }, 'step failed');
      }
    }
    this.scheduleLoop();
  }

  /**
   * Proposes a command; resolves with its apply result once applied here. Rejects with
   * NOT_LEADER (leader id + client address), PROPOSAL_TIMEOUT, OUTCOME_UNKNOWN or SHUTTING_DOWN.
   */
  async propose(data: Uint8Array, options: { timeoutMs?: number } = {}): Promise<ProposalOutcome> {
    const started = this.clock.nowMs();
    try {
      const out = await this.proposeOnce(data, options);
      this.events.emit('proposed', { outcome: 'ok', ms: this.clock.nowMs() - started });
      return out;
    } catch (e) {
      this.events.emit('proposed', { outcome: isHeraldError(e) ? e.code : 'error', ms: this.clock.nowMs() - started });
      throw e;
    }
  }

  /**
   * Proposes commands as adjacent entries, in order (RaftNode.proposeAll): each promise resolves
   * with its command's apply result. No retry across a leadership transfer: every promise rejects
   * (NOT_LEADER, INVALID_STATE, PAYLOAD_TOO_LARGE, SHUTTING_DOWN) and none was appended.
   */
  proposeAll(data: readonly Uint8Array[], options: { timeoutMs?: number } = {}): Promise<ProposalOutcome>[] {
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    const limit = this.opts.maxProposalBytes ?? 4 * 1024 * 1024;
    let tickets;
    try {
      for (const d of data) {
        if (d.length > limit) throw new HeraldError('PAYLOAD_TOO_LARGE', `command of ${d.length} bytes exceeds the ${limit}-byte proposal limit`);
      }
      this.assertRunning();
      tickets = this.node.proposeAll(data);
    } catch (e) {
      const err = isHeraldError(e, 'NOT_LEADER') ? this.notLeader() : e;
      return data.map(() => Promise.reject(err));
    }
    this.stats.proposals += tickets.length;
    this.scheduleLoop();
    return tickets.map((t) => this.proposals.track(t.index, t.term, timeoutMs));
  }

  private async proposeOnce(data: Uint8Array, options: { timeoutMs?: number }): Promise<ProposalOutcome> {
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    const deadline = this.clock.nowMs() + timeoutMs;
    const limit = this.opts.maxProposalBytes ?? 4 * 1024 * 1024;
    if (data.length > limit) {
      throw new HeraldError('PAYLOAD_TOO_LARGE', `command of ${data.length} bytes exceeds the ${limit}-byte proposal limit`);
    }
    for (;;) {
      this.assertRunning();
      try {
        const ticket = this.node.propose(data);
        this.stats.proposals++;
        this.scheduleLoop();
        return await this.proposals.track(ticket.index, ticket.term, Math.max(1, deadline - this.clock.nowMs()));
      } catch (e) {
        if (isHeraldError(e, 'NOT_LEADER')) throw this.notLeader();
        // A leadership transfer is in progress: wait for it to settle, then retry (here or,
        // via NOT_LEADER, at the new leader) instead of failing the caller.
        if (isHeraldError(e, 'INVALID_STATE') && this.clock.nowMs() < deadline) {
          await this.waitForLeaderChange(Math.min(deadline - this.clock.nowMs(), this.electionTimeoutMs()));
          continue;
        }
        if (isHeraldError(e, 'INVALID_STATE')) {
          throw new HeraldError('PROPOSAL_TIMEOUT', 'leadership transfer did not finish before the deadline');
        }
        throw e;
      }
    }
  }

  /**
   * A linearizable read barrier: resolves with a read index once this node's state machine has
   * applied at least that far. Works on followers (the core asks the leader).
   */
  async readIndex(options: { timeoutMs?: number } = {}): Promise<number> {
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    const deadline = this.clock.nowMs() + timeoutMs;
    for (;;) {
      this.assertRunning();
      const ctx = Buffer.allocUnsafe(12);
      ctx.writeUInt32BE(process.pid >>> 0, 0);
      ctx.writeDoubleBE(++this.readSeq, 4);
      const key = ctx.toString('base64');
      const attemptMs = Math.min(deadline - this.clock.nowMs(), Math.max(this.electionTimeoutMs(), 200));
      try {
        const p = new Promise<number>((resolve, reject) => {
          const timer = setTimeout(() => {
            this.reads.delete(key);
            reject(new HeraldError('PROPOSAL_TIMEOUT', 'read index not confirmed in time'));
          }, Math.max(1, attemptMs));
          this.reads.set(key, { resolve, reject, timer });
        });
        try {
          this.node.readIndex(ctx);
        } catch (e) {
          const w = this.reads.get(key);
          if (w) {
            clearTimeout(w.timer);
            this.reads.delete(key);
          }
          throw e;
        }
        this.scheduleLoop();
        const index = await p;
        await this.waitApplied(index);
        return index;
      } catch (e) {
        // No leader yet, or the request was dropped by a leader change: retry until the deadline.
        const retryable = isHeraldError(e, 'NO_LEADER') || isHeraldError(e, 'PROPOSAL_TIMEOUT');
        if (!retryable || this.clock.nowMs() + 10 >= deadline) {
          if (isHeraldError(e, 'NO_LEADER')) throw e;
          throw isHeraldError(e) ? e : new HeraldError('INTERNAL', String(e));
        }
        await this.waitForLeaderChange(Math.min(50, deadline - this.clock.nowMs()));
      }
    }
  }

  /** Resolves once the state machine has applied `index`. */
  waitApplied(index: number): Promise<void> {
    if (this.applied >= index) return Promise.resolve();
    if (this.stopped) return Promise.reject(new HeraldError('SHUTTING_DOWN', 'node is shutting down'));
    // A read waits: a follower's apply window (queueApply) ends now rather than delay it.
    this.endApplyWindow?.();
    return new Promise((resolve, reject) => this.appliedWaiters.push({ index, resolve, reject }));
  }

  /** Starts a leadership transfer (leader only); resolves once another node leads or rejects. */
  async transferLeadership(target?: NodeId, timeoutMs?: number): Promise<LeaderChange> {
    this.assertRunning();
    if (this.role !== 'leader') throw this.notLeader();
    const to = target || this.bestTransferTarget();
    if (!to) throw new HeraldError('NO_LEADER', 'no follower is available to take over');
    if (to === this.opts.id) return this.leaderChange();
    this.node.transferLeadership(to);
    this.scheduleLoop();
    const limit = timeoutMs ?? this.electionTimeoutMs() * 2;
    const deadline = this.clock.nowMs() + limit;
    while (this.clock.nowMs() < deadline) {
      if (this.leader !== NO_LEADER && this.leader !== this.opts.id) return this.leaderChange();
      await this.waitForLeaderChange(deadline - this.clock.nowMs());
    }
    throw new HeraldError('PROPOSAL_TIMEOUT', `leadership transfer to ${to} did not complete within ${limit} ms`);
  }

  /** The transport lost its stream to `peer`: stop pipelining appends to it. */
  reportUnreachable(peer: NodeId): void {
    if (this.stopped) return;
    this.node.reportUnreachable(peer);
    this.scheduleLoop();
  }

  /** Starts an election now (tests, operator use). */
  campaign(): void {
    this.node.campaign();
    this.scheduleLoop();
  }

  /**
   * A snapshot received from the leader was staged at its path: step the 'snap' message and
   * wait until the core has installed it (or declined because it already had the entries).
   */
  async offerSnapshot(from: NodeId, term: number, meta: SnapshotMeta): Promise<boolean> {
    this.assertRunning();
    this.lastHeard.set(from, this.clock.nowMs());
    this.node.step({
      type: 'snap',
      from,
      to: this.opts.id,
      term,
      logTerm: 0,
      index: 0,
      entries: [],
      commit: 0,
      reject: false,
      rejectHint: 0,
      rejectHintTerm: 0,
      snapshot: meta,
    });
    this.scheduleLoop();
    await this.waitLoopIdle();
    return this.node.status().commit >= meta.index;
  }

  // ------------------------------------------------------------------ observation

  status(): RaftStatus {
    return this.node.status();
  }

  leaderChange(): LeaderChange {
    return {
      leaderId: this.leader,
      leaderAddress: this.addresses.get(this.leader)?.clientAddress ?? '',
      term: this.term,
      role: this.role,
    };
  }

  isLeader(): boolean {
    return this.role === 'leader';
  }

  appliedIndex(): number {
    return this.applied;
  }

  /** Milliseconds since a message from `peer` arrived (-1 if never). */
  lastContactMs(peer: NodeId): number {
    const t = this.lastHeard.get(peer);
    return t === undefined ? -1 : this.clock.nowMs() - t;
  }

  electionTimeoutMs(): number {
    return this.timing.tickMs * this.timing.electionTicks;
  }

  snapshotIndex(): number {
    return this.opts.storage.snapshot().index;
  }

  // ------------------------------------------------------------------ the ready loop

  private scheduleLoop(): void {
    if (this.loopRunning || this.loopScheduled || this.failed) return;
    this.loopScheduled = true;
    setImmediate(() => {
      this.loopScheduled = false;
      void this.runLoop();
    });
  }

  private waitLoopIdle(): Promise<void> {
    if (!this.loopRunning && !this.loopScheduled) return Promise.resolve();
    return new Promise((resolve) => this.loopIdle.push(resolve));
  }

  private async runLoop(): Promise<void> {
    if (this.loopRunning || this.failed) return;
    this.loopRunning = true;
    try {
      while (this.node.hasReady() && !this.failed) {
        const rd = this.node.ready();
        await this.handleReady(rd);
        this.node.advance(rd);
        this.maybeCompact();
      }
    } catch (e) {
      this.fail(e);
    } finally {
      this.loopRunning = false;
      if (!this.loopScheduled) {
        const idle = this.loopIdle;
        this.loopIdle = [];
        for (const f of idle) f();
      }
    }
  }

  private async handleReady(rd: Ready): Promise<void> {
    this.stats.readies++;
    if (rd.softState) this.onSoftState(rd.softState.leader, rd.softState.role);
    if (rd.hardState) this.term = rd.hardState.term;

    // 0. A leader may send its appends and heartbeats while its own fsync runs (Raft thesis
    //    10.2.1; etcd does the same): it counts itself toward a commit, but committed entries
    //    only come out of a later Ready, after this write finished. Nothing that carries a
    //    new term or vote goes early.
    let messages = rd.messages;
    const termOrVoteChanged = rd.hardState !== undefined && (rd.hardState.term !== this.durableTerm || rd.hardState.vote !== this.durableVote);
    if (this.role === 'leader' && !termOrVoteChanged && !rd.snapshot && messages.length > 0) {
      const early = messages.filter((m) => m.type === 'app' || m.type === 'heartbeat');
      if (early.length > 0) {
        this.send(early);
        messages = early.length === messages.length ? [] : messages.filter((m) => m.type !== 'app' && m.type !== 'heartbeat');
      }
    }

    // 0b. Committed entries this node already holds durably need not wait for this Ready's
    //     write: they go to the apply chain now and apply while the fsync runs (etcd applies
    //     and saves in parallel too). MemoryStorage mirrors only what was persisted, so its last
    //     index is the durable one; committed entries are never truncated. A follower's entries
    //     committed in the same message that brought them wait for the write (step 5), so the
    //     state machine never gets ahead of the local log.
    let committed = rd.committedEntries;
    if (committed.length > 0 && !rd.snapshot) {
      const durableLast = this.opts.storage.lastIndex();
      let n = 0;
      while (n < committed.length && committed[n]!.index <= durableLast) n++;
      if (n > 0) {
        this.queueApply(n === committed.length ? committed : committed.slice(0, n));
        committed = n === committed.length ? [] : committed.slice(n);
      }
    }

    // 1. Persist (one atomic batch; fsync when the Ready says so) and mirror into MemoryStorage.
    //    A hard state that only moves the commit index needs no write of its own (the commit
    //    index is recomputed after a crash): it rides along with the next write.
    const hardState = rd.hardState ?? this.pendingHardState;
    if (rd.snapshot || rd.entries.length > 0 || rd.mustSync) {
      if (rd.snapshot) {
        // A compaction of our own must not write its older snapshot point over this one.
        this.endApplyWindow?.();
        await this.compaction;
        await this.applyChain;
      }
      const t0 = this.clock.nowMs();
      await (this.writeBehind ?? this.opts.logStore).persist({ hardState, entries: rd.entries, snapshot: rd.snapshot }, rd.mustSync);
      const dt = this.clock.nowMs() - t0;
      this.stats.persistMs += dt;
      if (dt > this.stats.persistMaxMs) this.stats.persistMaxMs = dt;
      this.pendingHardState = undefined;
      if (hardState) {
        this.durableTerm = hardState.term;
        this.durableVote = hardState.vote;
      }
      if (rd.mustSync) this.stats.syncedWrites++;
      this.stats.entriesPersisted += rd.entries.length;
      if (rd.snapshot) this.opts.storage.applySnapshot(rd.snapshot);
      if (rd.entries.length > 0) this.opts.storage.append(rd.entries);
    } else if (rd.hardState) {
      this.pendingHardState = rd.hardState;
    }
    if (rd.hardState) this.opts.storage.setHardState(rd.hardState);

    // 2. Send: only now may peers hear of the term, vote and entries just made durable.
    if (messages.length > 0) this.send(messages);

    // 3. A snapshot from the leader: the log now records it; restore the state machine from
    //    the staged file (if we crash first, startup finishes the restore from the same file).
    if (rd.snapshot) await this.installSnapshot(rd.snapshot);

    // 4. Read states: the reads resolve once applied reaches their index.
    for (const rs of rd.readStates) {
      const key = Buffer.from(rs.context.buffer, rs.context.byteOffset, rs.context.byteLength).toString('base64');
      const w = this.reads.get(key);
      if (!w) continue;
      this.reads.delete(key);
      clearTimeout(w.timer);
      w.resolve(rs.index);
    }

    // 5. Apply committed entries, in order, on the apply chain: the loop moves on to the next
    //    Ready (and its fsync) while the state machine writes. Results go to the proposals.
    if (committed.length > 0) this.queueApply(committed);
  }

  /**
   * Committed entries wait in pendingApply for one link of the apply chain, which takes all that
   * gathered by the time it runs: entries committed while an apply is busy go in the next call
   * together. One call is one state machine transaction and one LevelDB batch, so a run claimed
   * and finished within it is written once. A follower also holds its link open for
   * followerApplyWindowMs to let more gather (a herd's claim and finish of a run come 100–300 ms
   * apart under load): nothing waits on a follower's apply but its own reads, and the window ends
   * at once when a read waits, the follower becomes leader, installs a snapshot, compacts or stops,
   * or MAX_WINDOW_ENTRIES / MAX_WINDOW_BYTES gathered.
   */
  private queueApply(entries: Entry[]): void {
    for (let i = 0; i < entries.length; i++) {
      this.pendingApply.push(entries[i]!);
      this.pendingApplyBytes += entries[i]!.data.length;
    }
    if (this.pendingApply.length >= MAX_WINDOW_ENTRIES || this.pendingApplyBytes >= MAX_WINDOW_BYTES) this.endApplyWindow?.();
    this.queueApplyLink();
  }

  /** One apply link on the chain for whatever pendingApply holds (none if one is queued already). */
  private queueApplyLink(): void {
    if (this.applyQueued) return;
    this.applyQueued = true;
    this.applyChain = this.applyChain.then(() => this.applyPending());
    this.applyChain.catch((e: unknown) => this.fail(e));
  }

  private async applyPending(): Promise<void> {
    if (this.followerApplyWindowMs > 0 && this.role !== 'leader' && !this.stopped && this.appliedWaiters.length === 0) await this.applyWindow();
    this.applyQueued = false;
    const entries = this.pendingApply;
    this.pendingApply = [];
    this.pendingApplyBytes = 0;
    if (entries.length > 0) await this.apply(entries);
  }

  private applyWindow(): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        if (this.endApplyWindow === done) this.endApplyWindow = undefined;
        resolve();
      };
      const timer = setTimeout(done, this.followerApplyWindowMs);
      this.endApplyWindow = done;
    });
  }

  private async apply(entries: Entry[]): Promise<void> {
    // Skip-fsync control: the state machine never gets ahead of what is really on disk.
    if (this.writeBehind) await this.writeBehind.beforeApply(this.role === 'leader');
    // Entries at or below a restored snapshot are already in the state machine.
    const todo = entries[0]!.index <= this.applied ? entries.filter((e) => e.index > this.applied) : entries;
    if (todo.length === 0) return;
    // A follower with proposals of its own still pending (a deposed leader) evaluates: their
    // callers want results, which effects do not carry.
    if (this.effects && this.role !== 'leader' && !this.proposals.hasPending()) return this.applyFromEffects(todo, this.effects);
    await this.evaluate(todo);
  }

  /** Applies by evaluating the entries (the leader, and a follower without effects for them). */
  private async evaluate(todo: Entry[]): Promise<void> {
    const t0 = this.clock.nowMs();
    let results: Uint8Array[];
    if (this.effects && this.role === 'leader') {
      const out = await this.effects.applyCapturing(todo, this.resultWanted);
      results = out.results;
      if (out.effects) {
        this.stats.effectsSent++;
        this.opts.transport.sendEffects(out.effects);
      }
    } else {
      results = await this.opts.stateMachine.apply(todo, this.resultWanted);
    }
    this.noteApplyMs(this.clock.nowMs() - t0);
    this.stats.entriesApplied += todo.length;
    for (let i = 0; i < todo.length; i++) this.appliedBytesSinceSnapshot += todo[i]!.data.length;
    this.setApplied(todo[todo.length - 1]!.index);
    await this.resolveProposals(todo, results);
  }

  private noteApplyMs(dt: number): void {
    this.stats.applyMs += dt;
    if (dt > this.stats.applyMaxMs) this.stats.applyMaxMs = dt;
  }

  /**
   * Effects the leader sent beside the log (peer-server.ts), kept until the entries they cover
   * apply. They come in apply order on one stream; any that are lost (a slow peer, a leader
   * change, a restart) only mean those entries are evaluated here.
   */
  receiveEffects(list: readonly Uint8Array[]): void {
    const fx = this.effects;
    if (!fx || this.stopped || this.role === 'leader') return;
    for (const effects of list) {
      let range: { fromApplied: number; toApplied: number };
      try {
        range = fx.effectsRange(effects);
      } catch {
        continue; // malformed: the entries are evaluated
      }
      if (range.toApplied <= this.applied || this.effectsByStart.has(range.fromApplied)) continue;
      this.effectsByStart.set(range.fromApplied, { toApplied: range.toApplied, effects });
      this.effectsBytes += effects.length;
      this.stats.effectsReceived++;
    }
    // Bounded (a follower far behind): the oldest go first, and their entries are evaluated.
    for (const start of this.effectsByStart.keys()) {
      if (this.effectsBytes <= MAX_BUFFERED_EFFECTS_BYTES) break;
      this.takeEffects(start);
    }
    // What the open window waits for is here: apply it now rather than at the window's end.
    const next = this.effectsByStart.get(this.applied);
    const last = this.pendingApply[this.pendingApply.length - 1];
    if (next && last && last.index >= next.toApplied) this.endApplyWindow?.();
  }

  /** Removes the effects held for `start` (and their bytes from the bound); undefined when none. */
  private takeEffects(start: number): { readonly toApplied: number; readonly effects: Uint8Array } | undefined {
    const e = this.effectsByStart.get(start);
    if (!e) return undefined;
    this.effectsByStart.delete(start);
    this.effectsBytes -= e.effects.length;
    return e;
  }

  private dropStaleEffects(): void {
    for (const [start, e] of this.effectsByStart) if (e.toApplied <= this.applied) this.takeEffects(start);
  }

  /**
   * A follower's apply: entries covered by effects from the leader are written from those. As
   * the effects come in order, entries before the first effects held are evaluated at once (theirs
   * are lost); entries after the last wait one more window for theirs, then are evaluated.
   */
  private async applyFromEffects(todo: Entry[], fx: EffectsReplication): Promise<void> {
    const last = todo[todo.length - 1]!.index;
    for (;;) {
      const next = this.effectsByStart.get(this.applied);
      if (next) {
        // Covers entries this follower does not know are committed yet: they wait.
        if (next.toApplied > last) break;
        this.takeEffects(this.applied);
        const t0 = this.clock.nowMs();
        if ((await fx.applyEffects(next.effects)) !== 'applied') break;
        this.noteApplyMs(this.clock.nowMs() - t0);
        let covered = 0;
        for (const e of todo) {
          if (e.index <= this.applied || e.index > next.toApplied) continue;
          covered++;
          this.appliedBytesSinceSnapshot += e.data.length;
        }
        this.stats.entriesApplied += covered;
        this.stats.entriesAppliedFromEffects += covered;
        this.setApplied(next.toApplied);
        continue;
      }
      let start = Infinity;
      for (const s of this.effectsByStart.keys()) if (s > this.applied && s < start) start = s;
      if (start > last) break;
      await this.evaluate(todo.filter((e) => e.index > this.applied && e.index <= start));
    }
    this.dropStaleEffects();
    const rest = todo.filter((e) => e.index > this.applied);
    if (rest.length === 0) return;
    // Entries that already waited a window are evaluated now; younger ones wait one more for
    // their effects, unless something needs them applied (a read, leadership, stopping).
    const mayWait = this.followerApplyWindowMs > 0 && !this.stopped && this.role !== 'leader';
    // A read needs the entries up to its index now; the rest may still wait.
    let dueBy = this.carriedUpTo;
    for (const w of this.appliedWaiters) dueBy = Math.max(dueBy, w.index);
    const old = mayWait ? rest.filter((e) => e.index <= dueBy) : rest;
    const young = mayWait ? rest.filter((e) => e.index > dueBy) : [];
    if (old.length > 0) await this.evaluate(old);
    if (young.length === 0 || this.applied >= young[young.length - 1]!.index) return;
    this.carriedUpTo = young[young.length - 1]!.index;
    let bytes = 0;
    for (const e of young) bytes += e.data.length;
    this.pendingApply = young.concat(this.pendingApply);
    this.pendingApplyBytes += bytes;
    this.queueApplyLink();
  }

  /**
   * Proposals of a big applied batch are answered in groups, yielding to the event loop between
   * groups, so the first answers are on the wire while the rest are still being written. All
   * answers of a group-committed batch leaving in one burst make closed-loop clients answer in
   * one burst too, and the whole cluster then moves in lockstep (client busy while the servers
   * idle, and back); spreading them keeps the next batch forming while this one is answered.
   */
  private async resolveProposals(entries: Entry[], results: Uint8Array[]): Promise<void> {
    const group = this.resolveGroup;
    if (group <= 0 || entries.length <= group || !this.proposals.hasPending()) {
      this.proposals.applied(entries, results, this.leader);
      return;
    }
    for (let i = 0; i < entries.length; i += group) {
      if (i > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      this.proposals.applied(entries.slice(i, i + group), results.slice(i, i + group), this.leader);
    }
  }

  private setApplied(index: number): void {
    this.applied = index;
    if (this.appliedWaiters.length > 0) {
      const still: AppliedWaiter[] = [];
      for (const w of this.appliedWaiters) (w.index <= index ? w.resolve() : still.push(w));
      this.appliedWaiters = still;
    }
    this.events.emit('applied', { index });
  }

  private send(messages: Message[]): void {
    let regular = messages;
    if (messages.some((m) => m.type === 'snap')) {
      regular = [];
      for (const m of messages) (m.type === 'snap' ? this.startSnapshotSend(m) : regular.push(m));
    }
    this.opts.transport.send(regular);
  }

  private startSnapshotSend(m: Message): void {
    const to = m.to;
    if (this.snapshotsInFlight.has(to)) return;
    const client = this.opts.transport.client(to);
    if (!client) return;
    this.snapshotsInFlight.add(to);
    const log = this.opts.logger.child({ peer: to });
    log.info({ compactedTo: m.snapshot?.index }, 'sending snapshot');
    sendSnapshot({
      client,
      clusterId: this.opts.clusterId,
      from: this.opts.id,
      to,
      term: m.term,
      conf: m.snapshot?.conf ?? this.node.confState(),
      stateMachine: this.opts.stateMachine,
      termOf: (i) => this.opts.storage.term(i),
      timeoutMs: 10 * 60_000,
    }).then(
      (r) => {
        this.stats.snapshotsSent++;
        log.info(r, 'snapshot sent');
        this.snapshotsInFlight.delete(to);
        if (!this.stopped) {
          this.node.reportSnapshot(to, true);
          this.scheduleLoop();
        }
      },
      (e: unknown) => {
        log.warn({ err: e }, 'snapshot send failed');
        this.snapshotsInFlight.delete(to);
        if (!this.stopped) {
          this.node.reportSnapshot(to, false);
          this.scheduleLoop();
        }
      },
    );
  }

  private async installSnapshot(meta: SnapshotMeta): Promise<void> {
    const path = stagedSnapshotPath(this.opts.snapshotDir, meta);
    await this.opts.stateMachine.restore(meta, readSnapshotFile(path));
    this.stats.snapshotsInstalled++;
    this.opts.logger.info({ index: meta.index, term: meta.term }, 'snapshot installed');
    await pruneStagedSnapshots(this.opts.snapshotDir);
    this.proposals.supersededUpTo(meta.index);
    this.setApplied(Math.max(this.applied, meta.index));
  }

  /**
   * Log compaction: every `snapshotEntries` applied entries (or `snapshotBytes` of them), make the
   * state machine durable, record a snapshot point at the applied index and drop entries older
   * than the trailing window (slow followers within it still catch up from the log, not a snapshot).
   */
  private maybeCompact(): void {
    if (this.compaction || this.stopped) return;
    const snapIndex = this.opts.storage.snapshot().index;
    if (this.applied - snapIndex < this.snapshotEntries && this.appliedBytesSinceSnapshot < this.snapshotBytes) return;
    // Beside the loop, not in it: awaited there, its syncs and the log range delete held every
    // append, send and commit back for their whole duration (a 1M-job create compacts ~12 times).
    this.compaction = this.compact().then(
      () => {
        this.compaction = undefined;
      },
      (e: unknown) => {
        this.compaction = undefined;
        this.fail(e);
      },
    );
  }

  private async compact(): Promise<void> {
    const t0 = this.clock.nowMs();
    // sync() must not race an apply batch (both write the applied index): it takes its turn on
    // the apply chain, so only applies wait for it while the loop persists and replicates.
    let index = 0;
    let bytes = 0;
    this.endApplyWindow?.();
    const synced = this.applyChain.then(async () => {
      index = this.applied;
      bytes = this.appliedBytesSinceSnapshot;
      await this.opts.stateMachine.sync();
    });
    this.applyChain = synced;
    await synced;
    const storage = this.opts.storage;
    // Stopping, or a snapshot from the leader got there first (handleReady waits for us before
    // installing one, so this is only a restart of the loop after one).
    if (this.stopped || storage.snapshot().index >= index) return;
    const meta = storage.createSnapshot(index);
    this.appliedBytesSinceSnapshot -= bytes;
    const base = this.compactionBase(index);
    const baseTerm = storage.term(base);
    await this.opts.logStore.compact(meta, { index: base, term: baseTerm });
    storage.compact(base);
    this.stats.compactions++;
    this.stats.compactMs += this.clock.nowMs() - t0;
    this.opts.logger.debug({ snapshot: index, compactedTo: base }, 'log compacted');
  }

  /** The last index compaction drops up to: a window of at most keepEntries entries and keepBytes bytes behind `index`. */
  private compactionBase(index: number): number {
    const storage = this.opts.storage;
    const lowest = Math.max(storage.firstIndex() - 1, index - this.keepEntries);
    if (index <= lowest) return lowest;
    const window = storage.entries(lowest + 1, index + 1);
    let base = index;
    let bytes = 0;
    for (let i = window.length - 1; i >= 0; i--) {
      bytes += window[i]!.data.length;
      if (bytes > this.keepBytes) break;
      base = window[i]!.index - 1;
    }
    return base;
  }

  private onSoftState(leader: NodeId, role: Role): void {
    const wasLeader = this.role === 'leader';
    const leaderChanged = leader !== this.leader;
    this.leader = leader;
    this.role = role;
    const term = this.node.status().term;
    this.term = term;
    if (wasLeader && role !== 'leader') {
      this.opts.logger.info({ term, leader }, 'lost leadership');
      // Appended proposals may still commit under the new leader; give them two election timeouts.
      this.proposals.leadershipLost(this.electionTimeoutMs() * 2);
      this.events.emit('lostLeadership', { term });
    }
    if (!wasLeader && role === 'leader') {
      // The new leader's scheduler reads the state machine: entries held for a window go now.
      // It evaluates them (its services watch their results, which effects do not carry).
      this.endApplyWindow?.();
      this.effectsByStart.clear();
      this.effectsBytes = 0;
      this.opts.logger.info({ term }, 'became leader');
      this.events.emit('becameLeader', { term });
    }
    if (leaderChanged) {
      if (!(role === 'leader')) this.opts.logger.info({ term, leader: leader || null }, 'leader changed');
      this.events.emit('leaderChanged', this.leaderChange());
    }
  }

  private waitForLeaderChange(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.events.off('leaderChanged', done);
        resolve();
      };
      const t = setTimeout(done, Math.max(1, ms));
      this.events.on('leaderChanged', done);
    });
  }

  private bestTransferTarget(): NodeId | undefined {
    const st = this.node.status();
    let best: NodeId | undefined;
    let bestMatch = -1;
    for (const [id, p] of Object.entries(st.progress)) {
      if (id === this.opts.id) continue;
      if (this.lastContactMs(id) < 0 || this.lastContactMs(id) > this.electionTimeoutMs()) continue;
      if (p.match > bestMatch) {
        best = id;
        bestMatch = p.match;
      }
    }
    return best;
  }

  private notLeader(): HeraldError {
    const l = this.leaderChange();
    return new HeraldError(
      'NOT_LEADER',
      l.leaderId ? `node ${this.opts.id} is not the leader; the leader is ${l.leaderId} (${l.leaderAddress || 'address unknown'})` : `node ${this.opts.id} is not the leader and no leader is known`,
      { leaderId: l.leaderId || undefined, leaderAddress: l.leaderAddress || undefined },
    );
  }

  private assertRunning(): void {
    if (this.failed) throw new HeraldError('INTERNAL', `node failed: ${this.failed.message}`);
    if (this.stopped) throw new HeraldError('SHUTTING_DOWN', 'node is shutting down');
  }

  private fail(e: unknown): void {
    const err = e instanceof Error ? e : new Error(String(e));
    if (this.failed) return;
    this.failed = err;
    this.opts.logger.error({ err }, 'raft driver failed; the node must stop');
    this.proposals.failAll((i) => new HeraldError('OUTCOME_UNKNOWN', `node failed before entry ${i} was applied: ${err.message}`));
    this.events.emit('fatal', err);
  }
}
