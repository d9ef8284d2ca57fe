// The driver runs the pure Raft core: the only place with timers (ticks on the injected
// monotonic timers), the single ordered writer of the log, and the ready loop (ready-loop.ts).
// This file is its front: lifecycle, the inputs (proposals, messages, snapshots, effects) and
// what callers observe. Each concern is a part of its own beside it; its outside world (log,
// peers, staged snapshots, timers) comes in through ../ports.ts, so a simulator can stand in.

import type { Logger } from 'pino';
import { HeraldError, isHeraldError } from '../../herald-error.js';
import { RaftNode, type RaftStatus } from '../core/raft-node.js';
import type { MemoryStorage } from '../core/memory-storage.js';
import type { DriverTimers, LogSink, PeerInfo, RaftTransport, SnapshotStaging } from '../ports.js';
import type { StateMachine } from '../state-machine.js';
import type { CoreMutation } from '../core/mutations.js';
import type { ConfState, Message, NodeId, SnapshotMeta } from '../types.js';
import type { ConfChange } from '../core/membership.js';
import { checkUnsafeSkipFsync, WriteBehindLog } from '../storage/unsafe-durability.js';
import { ApplyPipeline } from './apply-pipeline.js';
import { DriverState, type DriverStats, type LeaderChange, type RaftDriverEvents, type RaftTimingOptions } from './driver-state.js';
import { EffectsInbox } from './effects-inbox.js';
import { Leadership } from './leadership.js';
import { LogCompaction } from './log-compaction.js';
import { noDriverMutations, type DriverMutation } from './mutations.js';
import { ProposalTracker, proposalBytes, type ProposalData, type ProposalOutcome } from './proposal-tracker.js';
import { ReadBarrier } from './read-barrier.js';
import { ReadyLoop } from './ready-loop.js';
import { SnapshotExchange, snapshotMessage } from './snapshot-exchange.js';

export type { DriverStats, LeaderChange, RaftDriverEvents, RaftTimingOptions } from './driver-state.js';

export interface RaftDriverOptions extends Partial<RaftTimingOptions> {
  id: NodeId;
  members: readonly PeerInfo[];
  /** The durable log (production: LogStore). */
  log: LogSink;
  storage: MemoryStorage;
  stateMachine: StateMachine;
  transport: RaftTransport;
  /** Where received snapshots are staged (production: StagedSnapshots). */
  snapshots: SnapshotStaging;
  /** Time and timers (production: systemTimers). */
  timers: DriverTimers;
  logger: Logger;
  /** Take a snapshot (and compact) every this many applied entries (default 10000). */
  snapshotEntries?: number;
  /** Entries kept behind the snapshot point for slow followers (default 5000). */
  compactionKeepEntries?: number;
  /**
   * Also snapshot once the entries applied since the last snapshot carry this many bytes of
   * commands (default 16 MiB), and keep at most `compactionKeepBytes` (default 8 MiB) of them
   * behind the snapshot point: the log is held in memory, and batched commands are large, so a
   * count alone let a node hold hundreds of MB, and 64 + 32 MiB kept a busy leader's memory
   * climbing for minutes before each compaction (bench/README.md, retention).
   */
  snapshotBytes?: number;
  compactionKeepBytes?: number;
  maxSizePerMsg?: number;
  /** When followers hear of a new commit index (RaftNodeConfig.commitBroadcast; default 'lazy'). */
  commitBroadcast?: 'eager' | 'lazy';
  maxInflightMsgs?: number;
  /** Catch-up bound: entries a learner may trail the leader by and be promoted (default 1000). */
  promoteMaxLag?: number;
  /** A proposal's deadline when its caller sets none (ms; default 10000). */
  defaultProposalTimeoutMs?: number;
  /** Largest command accepted by propose() (default 4 MiB; the peer stream limit is 16 MiB). */
  maxProposalBytes?: number;
  /**
   * Negative control only (storage/unsafe-durability.ts): acknowledge writes before they are
   * durable. Refused (throws) unless the process has the unsafe opt-in (unsafe-opt-in.ts).
   */
  unsafeSkipFsync?: boolean;
  /** Applied proposals are answered in groups of this many, yielding between groups (default 32; 0 = all at once). */
  resolveGroup?: number;
  /**
   * A follower gathers committed entries for up to this long before applying them in one call
   * (default 0 = at once; reads, leadership, snapshots and compaction end it early). See apply-pipeline.ts.
   */
  followerApplyWindowMs?: number;
  /**
   * Effects replication (state-machine.ts EffectsReplication; default off here, on in a Herald
   * node): the leader sends the writes of each apply to its followers beside the log
   * (RaftTransport.sendEffects), and a follower writes those instead of evaluating the entries.
   */
  replicateEffects?: boolean;
  /** Pre-vote and check-quorum (default on; the simulator turns them off to let deposed leaders live on). */
  preVote?: boolean;
  checkQuorum?: boolean;
  /** Randomness for election timeouts and read nonces (default Math.random; the simulator seeds it). */
  random?: () => number;
  /** Negative controls only (the simulator): deliberate bugs in the core and in the driver. */
  coreMutations?: ReadonlySet<CoreMutation>;
  mutations?: ReadonlySet<DriverMutation>;
}

/** Options of one RaftDriver.propose. */
export interface ProposeCallOptions {
  timeoutMs?: number;
  /** Answer once the entry is evaluated, before the state machine's write of it lands. */
  answerOnceEvaluated?: boolean;
}

export class RaftDriver {
  readonly events: DriverState['events'];
  readonly stats: DriverStats;
  readonly timing: RaftTimingOptions;
  private readonly state: DriverState;
  private readonly node: RaftNode;
  private readonly timers: DriverTimers;
  private readonly log: LogSink;
  private readonly proposals: ProposalTracker;
  private readonly pipeline: ApplyPipeline;
  private readonly inbox: EffectsInbox;
  private readonly leadership: Leadership;
  private readonly reads: ReadBarrier;
  private readonly snapshots: SnapshotExchange;
  private readonly compaction: LogCompaction;
  private readonly loop: ReadyLoop;
  private readonly defaultTimeoutMs: number;
  private readonly maxProposalBytes: number;

  constructor(private readonly opts: RaftDriverOptions, applied: number) {
    const timers = opts.timers;
    this.timers = timers;
    this.timing = {
      tickMs: opts.tickMs ?? 100,
      electionTicks: opts.electionTicks ?? 10,
      heartbeatTicks: opts.heartbeatTicks ?? 1,
    };
    this.defaultTimeoutMs = opts.defaultProposalTimeoutMs ?? 10_000;
    this.maxProposalBytes = opts.maxProposalBytes ?? 4 * 1024 * 1024;
    // The skip-fsync control wraps this driver's log only (other drivers in the process are safe).
    this.log = checkUnsafeSkipFsync(opts.unsafeSkipFsync === true) ? new WriteBehindLog(opts.log, () => timers.nowMs()) : opts.log;
    this.proposals = new ProposalTracker(timers);
    const random = opts.random ?? Math.random;
    const state = new DriverState(opts.id, this.timing, opts.logger, this.proposals, applied, opts.mutations ?? noDriverMutations());
    this.state = state;
    this.events = state.events;
    this.stats = state.stats;
    this.node = new RaftNode({
      id: opts.id,
      storage: opts.storage,
      applied,
      electionTicks: this.timing.electionTicks,
      heartbeatTicks: this.timing.heartbeatTicks,
      maxSizePerMsg: opts.maxSizePerMsg ?? 1024 * 1024,
      maxInflightMsgs: opts.maxInflightMsgs ?? 256,
      preVote: opts.preVote ?? true,
      checkQuorum: opts.checkQuorum ?? true,
      random,
      mutations: opts.coreMutations,
      promoteMaxLag: opts.promoteMaxLag,
      // Followers apply in windows and reads at followers confirm with a heartbeat round: an
      // append only to tell them a new commit index is not worth its two messages.
      commitBroadcast: opts.commitBroadcast ?? 'lazy',
    });
    state.term = this.node.status().term;

    // The parts built before the loop reach it through this (it runs the loop soon).
    const wake = (): void => this.loop.schedule();
    const fx = opts.replicateEffects ? opts.stateMachine.effects : undefined;
    this.inbox = new EffectsInbox(state, fx);
    this.pipeline = new ApplyPipeline(state, opts.stateMachine, fx, this.inbox, this.log, opts.transport, timers, {
      resolveGroup: opts.resolveGroup ?? 32,
      followerApplyWindowMs: opts.followerApplyWindowMs ?? 0,
    });
    this.leadership = new Leadership(state, this.node, opts.members, this.pipeline, this.inbox, timers, wake);
    this.reads = new ReadBarrier(state, this.node, this.pipeline, this.leadership, timers, wake, random() * 0x1_0000_0000, this.defaultTimeoutMs);
    this.snapshots = new SnapshotExchange(state, this.node, opts.storage, opts.stateMachine, opts.transport, opts.snapshots, this.pipeline, wake);
    this.compaction = new LogCompaction(state, opts.storage, this.log, opts.stateMachine, this.pipeline, timers, {
      snapshotEntries: opts.snapshotEntries ?? 10_000,
      keepEntries: opts.compactionKeepEntries ?? 5_000,
      snapshotBytes: opts.snapshotBytes ?? 16 * 1024 * 1024,
      keepBytes: opts.compactionKeepBytes ?? 8 * 1024 * 1024,
    }, (i) => this.node.confStateAt(i));
    this.loop = new ReadyLoop(state, this.node, opts.storage, this.log, opts.transport, timers, {
      leadership: this.leadership,
      pipeline: this.pipeline,
      reads: this.reads,
      snapshots: this.snapshots,
      compaction: this.compaction,
    });
  }

  // ------------------------------------------------------------------ lifecycle

  start(): void {
    this.loop.start();
  }

  /** Stops ticking and fails whatever is still waiting. Storage is closed by the owner. */
  async stop(): Promise<void> {
    const state = this.state;
    if (state.stopped) return;
    state.stopped = true;
    this.loop.stopTicking();
    await this.loop.waitIdle();
    this.pipeline.endApplyWindow();
    await this.compaction.inFlight();
    if (this.log.drain) await this.log.drain().catch(() => undefined);
    await this.pipeline.idle().catch(() => undefined);
    await this.loop.flushHardState();
    this.proposals.failAll((i) => new HeraldError('OUTCOME_UNKNOWN', `node stopped before entry ${i} was applied`));
    this.reads.stop();
    this.pipeline.stop();
  }

  // ------------------------------------------------------------------ inputs

  /** Messages from the transport. */
  step(messages: readonly Message[]): void {
    if (this.state.stopped) return;
    const now = this.timers.nowMs();
    const id = this.opts.id;
    for (const m of messages) {
      if (m.to !== id) continue;
      this.leadership.heardFrom(m.from, now);
      if (m.type === 'snap') continue; // only via InstallSnapshot, once the data is staged
      try {
        this.node.step(m);
      } catch (e) {
        this.opts.logger.warn({ err: e, type: m.type, from: m.from }, 'step failed');
      }
    }
    this.loop.schedule();
  }

  /**
   * Proposes a command; resolves with its apply result once applied here. Rejects with
   * NOT_LEADER (leader id + client address), PROPOSAL_TIMEOUT, OUTCOME_UNKNOWN or SHUTTING_DOWN.
   */
  /**
   * Proposes one command; resolves with its apply result. `answerOnceEvaluated`: resolve as soon
   * as the state machine has evaluated the entry, before its write lands (ProposalTracker.evaluated
   * says why that is safe); for callers that use only the result, not reads of this node's state.
   */
  async propose(data: ProposalData, options: ProposeCallOptions = {}): Promise<ProposalOutcome> {
    const started = this.timers.nowMs();
    try {
      const out = await this.proposeOnce(data, options);
      this.events.emit('proposed', { outcome: 'ok', ms: this.timers.nowMs() - started });
      return out;
    } catch (e) {
      this.events.emit('proposed', { outcome: isHeraldError(e) ? e.code : 'error', ms: this.timers.nowMs() - started });
      throw e;
    }
  }

  /**
   * Proposes commands as adjacent entries, in order (RaftNode.proposeAll): each promise resolves
   * with its command's apply result. The group is appended whole or not at all: across a
   * leadership transfer it waits, as propose() does; otherwise every promise rejects alike
   * (NOT_LEADER, PROPOSAL_TIMEOUT, PAYLOAD_TOO_LARGE, SHUTTING_DOWN).
   */
  proposeAll(data: readonly ProposalData[], options: { timeoutMs?: number } = {}): Promise<ProposalOutcome>[] {
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    const started = this.timers.nowMs();
    let tracked: Promise<ProposalOutcome>[];
    try {
      tracked = this.appendAll(data, timeoutMs);
    } catch (e) {
      // A leadership transfer is in progress: like propose(), wait for it to settle and append
      // the whole group then (here, or NOT_LEADER for the caller to go to the new leader).
      if (!isHeraldError(e, 'INVALID_STATE')) {
        const err = isHeraldError(e, 'NOT_LEADER') ? this.leadership.notLeader() : e;
        return data.map(() => Promise.reject(err));
      }
      const later = this.appendAllAfterTransfer(data, started + timeoutMs);
      tracked = data.map((_, i) => later.then((ps) => ps[i]!));
    }
    // Counted like propose()'s, so metrics see every proposal however it was made.
    return tracked.map((p) =>
      p.then(
        (out) => {
          this.events.emit('proposed', { outcome: 'ok', ms: this.timers.nowMs() - started });
          return out;
        },
        (e: unknown) => {
          this.events.emit('proposed', { outcome: isHeraldError(e) ? e.code : 'error', ms: this.timers.nowMs() - started });
          throw e;
        },
      ),
    );
  }

  /** Appends the group now (throws what the core throws); each promise tracks one entry. */
  private appendAll(proposals: readonly ProposalData[], timeoutMs: number): Promise<ProposalOutcome>[] {
    const limit = this.maxProposalBytes;
    const data = proposals.map(proposalBytes);
    for (const d of data) {
      if (d.length > limit) throw new HeraldError('PAYLOAD_TOO_LARGE', `command of ${d.length} bytes exceeds the ${limit}-byte proposal limit`);
    }
    this.state.assertRunning();
    const tickets = this.node.proposeAll(data);
    this.stats.proposals += tickets.length;
    this.loop.schedule();
    return tickets.map((t) => this.proposals.track(t.index, t.term, Math.max(1, timeoutMs)));
  }

  private async appendAllAfterTransfer(data: readonly ProposalData[], deadline: number): Promise<Promise<ProposalOutcome>[]> {
    const timers = this.timers;
    for (;;) {
      if (timers.nowMs() >= deadline) throw new HeraldError('PROPOSAL_TIMEOUT', 'leadership transfer did not finish before the deadline');
      await this.leadership.waitForLeaderChange(Math.min(deadline - timers.nowMs(), this.electionTimeoutMs()));
      try {
        return this.appendAll(data, deadline - timers.nowMs());
      } catch (e) {
        if (isHeraldError(e, 'NOT_LEADER')) throw this.leadership.notLeader();
        if (!isHeraldError(e, 'INVALID_STATE')) throw e;
      }
    }
  }

  private async proposeOnce(proposal: ProposalData, options: ProposeCallOptions): Promise<ProposalOutcome> {
    const timers = this.timers;
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    const deadline = timers.nowMs() + timeoutMs;
    const limit = this.maxProposalBytes;
    for (;;) {
      // Encoded as it is appended (ProposalData), on every attempt.
      const data = proposalBytes(proposal);
      if (data.length > limit) {
        throw new HeraldError('PAYLOAD_TOO_LARGE', `command of ${data.length} bytes exceeds the ${limit}-byte proposal limit`);
      }
      this.state.assertRunning();
      try {
        const ticket = this.node.propose(data);
        this.stats.proposals++;
        this.loop.schedule();
        return await this.proposals.track(ticket.index, ticket.term, Math.max(1, deadline - timers.nowMs()), options.answerOnceEvaluated === true);
      } catch (e) {
        if (isHeraldError(e, 'NOT_LEADER')) throw this.leadership.notLeader();
        // A leadership transfer is in progress: wait for it to settle, then retry (here or,
        // via NOT_LEADER, at the new leader) instead of failing the caller.
        if (isHeraldError(e, 'INVALID_STATE') && timers.nowMs() < deadline) {
          await this.leadership.waitForLeaderChange(Math.min(deadline - timers.nowMs(), this.electionTimeoutMs()));
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
  readIndex(options: { timeoutMs?: number } = {}): Promise<number> {
    return this.reads.readIndex(options);
  }

  /** Resolves once the state machine has applied `index`. */
  waitApplied(index: number): Promise<void> {
    return this.pipeline.waitApplied(index);
  }

  /**
   * Proposes one configuration change (leader only; membership.ts says which are allowed):
   * throws NOT_LEADER, CONF_CHANGE_PENDING, ALREADY_EXISTS, MEMBER_NOT_FOUND or INVALID_STATE at
   * once; otherwise resolves once the change is applied here.
   */
  proposeConfChange(cc: ConfChange): Promise<void> {
    this.state.assertRunning();
    const { index } = this.node.proposeConfChange(cc);
    this.loop.schedule();
    return this.pipeline.waitApplied(index).then(() => undefined);
  }

  /** The configuration in force here (the latest in the log). */
  confState(): ConfState {
    return this.node.confState();
  }

  /** Whether a configuration change is appended but not committed (one at a time). */
  confChangePending(): boolean {
    return this.node.confChangePending();
  }

  /** Starts a leadership transfer (leader only); resolves once another node leads or rejects. */
  transferLeadership(target?: NodeId, timeoutMs?: number): Promise<LeaderChange> {
    return this.leadership.transferLeadership(target, timeoutMs);
  }

  /** The transport lost its stream to `peer`: stop pipelining appends to it. */
  reportUnreachable(peer: NodeId): void {
    if (this.state.stopped) return;
    this.node.reportUnreachable(peer);
    this.loop.schedule();
  }

  /** Starts an election now (tests, operator use). */
  campaign(): void {
    this.node.campaign();
    this.loop.schedule();
  }

  /**
   * A snapshot received from the leader was staged at its path: step the 'snap' message and
   * wait until the core has installed it (or declined because it already had the entries).
   */
  async offerSnapshot(from: NodeId, term: number, meta: SnapshotMeta): Promise<boolean> {
    this.state.assertRunning();
    this.leadership.heardFrom(from, this.timers.nowMs());
    this.node.step(snapshotMessage(from, this.opts.id, term, meta));
    this.loop.schedule();
    await this.loop.waitIdle();
    return this.node.status().commit >= meta.index;
  }

  /**
   * Effects the leader sent beside the log (peer-server.ts), kept until the entries they cover
   * apply (effects-inbox.ts).
   */
  receiveEffects(list: readonly Uint8Array[]): void {
    if (this.inbox.receive(list)) this.pipeline.effectsArrived();
  }

  // ------------------------------------------------------------------ observation

  status(): RaftStatus {
    return this.node.status();
  }

  leaderChange(): LeaderChange {
    return this.leadership.leaderChange();
  }

  isLeader(): boolean {
    return this.state.role === 'leader';
  }

  appliedIndex(): number {
    return this.state.applied;
  }

  /** Why the driver failed (storage or the state machine; it no longer applies), or undefined. */
  failure(): Error | undefined {
    return this.state.failed;
  }

  /** Milliseconds since a message from `peer` arrived (-1 if never). */
  lastContactMs(peer: NodeId): number {
    return this.leadership.lastContactMs(peer);
  }

  electionTimeoutMs(): number {
    return this.state.electionTimeoutMs();
  }

  snapshotIndex(): number {
    return this.opts.storage.snapshot().index;
  }
}
