// The pure Raft core, in etcd's raft style: a synchronous state machine stepped by ticks,
// messages and local requests. It performs no I/O and reads no clock or global randomness;
// everything it wants done comes out of ready() in etcd's order (persist, then send, then
// apply) and is acknowledged with advance(). Because messages only leave through a Ready whose
// hard state and entries the runtime persists first, no reply can outlive a crash that loses
// the state it depends on.

import { HeraldError } from '../../herald-error.js';
import type {
  ConfState,
  Entry,
  HardState,
  LogStorage,
  Message,
  MessageType,
  NodeId,
  ReadState,
  Ready,
  Role,
  SoftState,
} from '../types.js';
export { CAMPAIGN_TRANSFER } from './core-messages.js';
import { CAMPAIGN_TRANSFER, isTransferContext, LEADER_MESSAGES, message, NONE, sameHardState } from './core-messages.js';
import { applyConfChange, type ConfChange, ConfHistory, encodeConfState, isMember, isVoter, learnersOf, membersOf } from './membership.js';
import type { CoreMutation } from './mutations.js';
import { Progress, type ProgressState } from './progress.js';
import { committedIndex, voteResult } from './quorum.js';
import { RaftLog } from './raft-log.js';
import { ReadOnly } from './read-only.js';

export type { CoreMutation } from './mutations.js';

/** Entries a learner may trail the leader's log by and still be promoted (RaftNodeConfig.promoteMaxLag). */
export const DEFAULT_PROMOTE_MAX_LAG = 1000;

export interface RaftNodeConfig {
  id: NodeId;
  /** Initial hard state and configuration come from it. */
  storage: LogStorage;
  /** Last index the state machine applied (restart). */
  applied: number;
  /** e.g. 10; the randomized timeout is in [electionTicks, 2*electionTicks). */
  electionTicks: number;
  /** e.g. 1 */
  heartbeatTicks: number;
  /** Bytes of entry data per append message. */
  maxSizePerMsg: number;
  /** Pipelined appends per follower in replicate state. */
  maxInflightMsgs: number;
  preVote: boolean;
  checkQuorum: boolean;
  /** Injected seeded source in [0,1). */
  random: () => number;
  /** Deliberate bugs, enabled only by the simulator and negative-control tests. */
  mutations?: ReadonlySet<CoreMutation>;
  /**
   * Catch-up bound: a learner is promoted only when its match index is within this many entries
   * of the leader's last index (so the new quorum never waits on a slow log copy). Default 1000.
   */
  promoteMaxLag?: number;
  /**
   * When acks advance the commit index: 'eager' (etcd's way, the default) sends every follower an
   * append at once, entries or not, so it learns the new commit index; 'lazy' sends only the
   * appends that carry entries, and followers learn the commit index from the next append or
   * heartbeat (every heartbeat interval). A lone write then costs two peer messages fewer per
   * follower (the commit-only append and its ack). Safety does not depend on when a follower
   * learns the commit index; a read at a follower gets it with its own heartbeat round.
   */
  commitBroadcast?: 'eager' | 'lazy';
}

export interface ProposalTicket {
  index: number;
  term: number;
}

export interface PeerProgress {
  match: number;
  next: number;
  state: ProgressState;
  recentActive: boolean;
  inflight: number;
}

export interface RaftStatus {
  id: NodeId;
  term: number;
  vote: NodeId;
  commit: number;
  applied: number;
  lastIndex: number;
  /** The term of the last entry (unpersisted ones included). */
  lastTerm: number;
  /** '' when unknown. */
  leader: NodeId;
  role: Role;
  /** '' when no transfer is in progress. */
  leadTransferee: NodeId;
  /** Per member, learners included (leader only; empty otherwise). */
  progress: Record<NodeId, PeerProgress>;
  /** The configuration in force. */
  voters: NodeId[];
  learners: NodeId[];
}

export class RaftNode {
  readonly id: NodeId;
  private term = 0;
  private vote: NodeId = NONE;
  private lead: NodeId = NONE;
  private role: Role = 'follower';
  private readonly log: RaftLog;
  /** The configuration in force (the latest in the log) and the history it comes from. */
  private conf: ConfState;
  private voters: NodeId[];
  private readonly confs: ConfHistory;
  private progress = new Map<NodeId, Progress>();
  private votes = new Map<NodeId, boolean>();
  private msgs: Message[] = [];
  private readStates: ReadState[] = [];
  private readOnly = new ReadOnly();
  /** Reads that arrived before this leader committed an entry of its own term. */
  private pendingReads: Message[] = [];
  private electionElapsed = 0;
  private heartbeatElapsed = 0;
  private randomizedElectionTimeout = 0;
  private leadTransferee: NodeId = NONE;

  private readonly electionTimeout: number;
  private readonly heartbeatTimeout: number;
  private readonly maxSizePerMsg: number;
  private readonly maxInflight: number;
  private readonly preVote: boolean;
  private readonly checkQuorum: boolean;
  private readonly lazyCommitBroadcast: boolean;
  private readonly random: () => number;
  private readonly mutations: ReadonlySet<CoreMutation>;
  private readonly promoteMaxLag: number;

  private prevSoft: SoftState;
  private prevHard: HardState;

  constructor(config: RaftNodeConfig) {
    if (config.electionTicks <= config.heartbeatTicks || config.heartbeatTicks < 1) {
      throw new HeraldError('INVALID_ARGUMENT', 'electionTicks must exceed heartbeatTicks (>= 1)');
    }
    if (config.maxInflightMsgs < 1) throw new HeraldError('INVALID_ARGUMENT', 'maxInflightMsgs must be >= 1');
    this.id = config.id;
    this.electionTimeout = config.electionTicks;
    this.heartbeatTimeout = config.heartbeatTicks;
    this.maxSizePerMsg = config.maxSizePerMsg;
    this.maxInflight = config.maxInflightMsgs;
    this.preVote = config.preVote;
    this.checkQuorum = config.checkQuorum;
    this.lazyCommitBroadcast = config.commitBroadcast === 'lazy';
    this.random = config.random;
    this.mutations = config.mutations ?? new Set();
    this.promoteMaxLag = config.promoteMaxLag ?? DEFAULT_PROMOTE_MAX_LAG;

    this.log = new RaftLog(config.storage);
    const { hardState, conf } = config.storage.initialState();
    this.confs = new ConfHistory(conf);
    const first = this.log.firstIndex();
    const last = this.log.lastIndex();
    if (last >= first) this.confs.noteAppended(config.storage.entries(first, last + 1), (i) => this.log.term(i), this.log.firstIndex());
    this.conf = this.confs.current();
    this.voters = [...this.conf.voters];
    if (hardState.commit > this.log.lastIndex()) {
      throw new HeraldError('CORRUPT_STORAGE', `commit ${hardState.commit} beyond last index ${this.log.lastIndex()}`);
    }
    this.term = hardState.term;
    this.vote = hardState.vote;
    this.log.commitTo(hardState.commit);
    if (config.applied > 0) {
      if (config.applied < this.log.firstIndex() - 1) {
        throw new HeraldError('CORRUPT_STORAGE', `applied ${config.applied} is below the snapshot ${this.log.firstIndex() - 1}`);
      }
      if (config.applied > this.log.lastIndex()) {
        throw new HeraldError('CORRUPT_STORAGE', `applied ${config.applied} beyond last index ${this.log.lastIndex()}`);
      }
      // The state machine may have made an apply durable before the commit index was synced
      // (commit changes are not fsynced): what was applied was committed.
      this.log.commitTo(config.applied);
      this.log.appliedTo(config.applied);
    }
    if (this.mutations.has('apply-conf-at-commit')) this.conf = this.confs.at(this.log.committed);
    this.voters = [...this.conf.voters];
    this.becomeFollower(this.term, NONE);
    this.prevSoft = { leader: this.lead, role: this.role };
    this.prevHard = this.hardState();
  }

  // ---------------------------------------------------------------- inputs

  tick(): void {
    if (this.role === 'leader') this.tickHeartbeat();
    else this.tickElection();
    this.settleConf();
  }

  /** Starts an election now (as if the election timeout elapsed). */
  campaign(): void {
    this.hup(false);
    this.settleConf();
  }

  step(m: Message): void {
    this.stepMessage(m);
    this.settleConf();
  }

  private stepMessage(m: Message): void {
    if (m.to !== this.id) return;
    // A non-member (a misrouted peer, a removed node) never counts toward any quorum: votes are
    // tallied over the voters in force (poll), and its other messages are dropped here — but a
    // leader's are taken (a leader elected in a configuration whose entry we have not received
    // yet must still be able to bring us up to date; a node joining as a learner knows none).
    if (!isMember(this.conf, m.from) && !LEADER_MESSAGES.has(m.type) && !this.takesVoteRequestFromNonMember(m)) return;
    // readIndex requests are forwarded with term 0 (like etcd's MsgReadIndex): local-ish.
    if (m.term === 0) {
      if (m.type === 'readIndex') this.handleReadIndexRequest(m);
      return;
    }
    if (m.term > this.term) {
      if (m.type === 'vote' || m.type === 'preVote') {
        const force = isTransferContext(m.context);
        const inLease = this.checkQuorum && this.lead !== NONE && this.electionElapsed < this.electionTimeout;
        // A node that heard from a live leader within the minimum election timeout ignores
        // disruptive (pre)votes, unless the campaign was ordered by the leader (transfer).
        if (!force && inLease) return;
      }
      if (m.type === 'preVote') {
        // Pre-votes never change our term.
      } else if (m.type === 'preVoteResp' && !m.reject) {
        // The term in a granted pre-vote is the one we will campaign for, not yet ours.
      } else if (m.type === 'app' || m.type === 'heartbeat' || m.type === 'snap') {
        this.becomeFollower(m.term, m.from);
      } else if (m.type === 'vote') {
        // Raft's rule (Figure 2): the election timer restarts on hearing the current leader or on
        // granting a vote, not on merely learning a newer term. etcd restarts it here; then
        // candidates whose logs are behind keep holding off the one node that could win (with a
        // slower clock, for many terms: Raft simulator seed 210418, no pre-vote). A grant below
        // still restarts it.
        this.learnTerm(m.term);
      } else {
        this.becomeFollower(m.term, NONE);
      }
    } else if (m.term < this.term) {
      if (m.type === 'heartbeat' || m.type === 'app') {
        // A stale leader (e.g. cut off and rejoining) learns our term and steps down; without
        // this, pre-vote/check-quorum could leave it isolated forever. Always, not only with
        // those (etcd relies on this node's vote requests to disrupt the old term instead): a
        // member far behind may know only incarnations its peers no longer have, so its vote
        // requests reach no one and only this answer lets it rejoin (Raft simulator, seed 200614).
        this.send(message('appResp', this.id, m.from, this.term));
      } else if (m.type === 'preVote') {
        const r = message('preVoteResp', this.id, m.from, this.term);
        r.reject = true;
        this.send(r);
      }
      return;
    }

    switch (m.type) {
      case 'vote':
      case 'preVote':
        this.handleVoteRequest(m);
        return;
      case 'readIndex':
        this.handleReadIndexRequest(m);
        return;
    }
    switch (this.role) {
      case 'leader':
        this.stepLeader(m);
        return;
      case 'candidate':
      case 'preCandidate':
        this.stepCandidate(m);
        return;
      case 'follower':
        this.stepFollower(m);
        return;
    }
  }

  propose(data: Uint8Array): ProposalTicket {
    this.assertMayPropose();
    const index = this.appendEntries([{ term: 0, index: 0, type: 'normal', data }]);
    this.bcastAppend();
    return { index, term: this.term };
  }

  /**
   * Proposes one configuration change (add a learner, promote a learner, remove a member). It is
   * in force on this leader at once, and on each member once appended there (membership.ts).
   */
  proposeConfChange(cc: ConfChange): ProposalTicket {
    this.assertMayPropose();
    if (this.log.term(this.log.committed) !== this.term) {
      throw new HeraldError('CONF_CHANGE_PENDING', `leader ${this.id} has not committed an entry of its term yet; retry shortly`);
    }
    const pending = this.confs.lastIndex();
    if (pending > this.log.committed && !this.mutations.has('two-pending-changes')) {
      throw new HeraldError('CONF_CHANGE_PENDING', `a configuration change is already pending (log index ${pending})`);
    }
    const next = applyConfChange(this.conf, cc);
    if (cc.kind === 'promote') this.assertCaughtUp(cc.id);
    const index = this.appendEntries([{ term: 0, index: 0, type: 'config', data: encodeConfState(next) }]);
    this.settleConf();
    this.bcastAppend();
    return { index, term: this.term };
  }

  /**
   * Appends the commands as adjacent entries of this term, in order, in one step: nothing can
   * come between them in the log (a command whose meaning depends on the one before it, such as a
   * claim of the runs a fire creates, relies on that).
   */
  proposeAll(data: readonly Uint8Array[]): ProposalTicket[] {
    this.assertMayPropose();
    const last = this.appendEntries(data.map((d) => ({ term: 0, index: 0, type: 'normal' as const, data: d })));
    this.bcastAppend();
    const first = last - data.length + 1;
    return data.map((_, i) => ({ index: first + i, term: this.term }));
  }

  /** Promotion only within the catch-up bound, and only of a learner that answered recently. */
  private assertCaughtUp(id: NodeId): void {
    const pr = this.progress.get(id);
    const behind = this.log.lastIndex() - (pr?.match ?? 0);
    if (!pr || behind > this.promoteMaxLag) {
      throw new HeraldError('LEARNER_BEHIND', `the learner ${id} is ${behind.toLocaleString('en-US')} entries behind the leader (promotion needs at most ${this.promoteMaxLag.toLocaleString('en-US')}); retry once it caught up`, { behind });
    }
    // A voter that holds no configuration listing the others drops their vote requests (a
    // non-member's messages are ignored): promoted that way, it can leave no majority to elect.
    const confIndex = this.confs.lastIndex();
    if (pr.match === 0 || pr.match < confIndex) {
      throw new HeraldError('LEARNER_BEHIND', `the learner ${id} has not received the current configuration yet (it has the log up to ${pr.match}, the configuration is at ${confIndex}); retry once it caught up`, { behind });
    }
    if (!pr.recentActive) {
      throw new HeraldError('LEARNER_BEHIND', `the learner ${id} has not answered the leader within an election timeout; promote it once it is reachable`, { behind });
    }
  }

  private assertMayPropose(): void {
    if (this.role !== 'leader') {
      throw new HeraldError('NOT_LEADER', `node ${this.id} is not the leader`, { leaderId: this.lead || undefined });
    }
    if (this.leadTransferee !== NONE) {
      throw new HeraldError('INVALID_STATE', `leadership transfer to ${this.leadTransferee} in progress`, {
        leaderId: this.leadTransferee,
      });
    }
  }

  readIndex(context: Uint8Array): void {
    if (this.role !== 'leader' && this.lead === NONE) {
      throw new HeraldError('NO_LEADER', `node ${this.id} knows no leader to confirm a read`);
    }
    const m = message('readIndex', this.id, this.id, 0);
    m.context = context;
    this.handleReadIndexRequest(m);
  }

  transferLeadership(to: NodeId): void {
    if (this.role !== 'leader') {
      throw new HeraldError('NOT_LEADER', `node ${this.id} is not the leader`, { leaderId: this.lead || undefined });
    }
    if (!this.voters.includes(to)) throw new HeraldError('INVALID_ARGUMENT', `unknown node ${to}`);
    if (to === this.id) return;
    if (this.leadTransferee === to) return;
    this.leadTransferee = to;
    // The transfer must finish within one election timeout or it is abandoned (tickHeartbeat).
    this.electionElapsed = 0;
    const pr = this.progress.get(to)!;
    if (pr.match === this.log.lastIndex()) this.sendTimeoutNow(to);
    else this.sendAppend(to);
  }

  reportUnreachable(id: NodeId): void {
    if (this.role !== 'leader') return;
    const pr = this.progress.get(id);
    // Appends in flight were probably lost: fall back to probing.
    if (pr && pr.state === 'replicate') pr.becomeProbe();
  }

  reportSnapshot(id: NodeId, ok: boolean): void {
    if (this.role !== 'leader') return;
    const pr = this.progress.get(id);
    if (!pr || pr.state !== 'snapshot') return;
    if (!ok) pr.pendingSnapshot = 0;
    // Either way, probe from the snapshot; wait for the follower's appResp (or a heartbeat
    // reply) before sending more.
    pr.becomeProbe();
    pr.probeSent = true;
  }

  // ---------------------------------------------------------------- ready / advance

  hasReady(): boolean {
    if (this.msgs.length > 0 || this.readStates.length > 0) return true;
    if (this.log.unstable.entries.length > 0 || this.log.unstable.snapshot) return true;
    if (this.log.hasNextCommittedEnts()) return true;
    if (this.lead !== this.prevSoft.leader || this.role !== this.prevSoft.role) return true;
    // Field by field: hasReady runs on every loop turn of the runtime, keep it allocation-free.
    const p = this.prevHard;
    return this.term !== p.term || this.vote !== p.vote || this.log.committed !== p.commit;
  }

  /** Everything to do now; call advance(ready) once it is persisted, sent and applied. */
  ready(): Ready {
    const rd: Ready = {
      entries: this.log.unstableEntries(),
      committedEntries: this.log.nextCommittedEnts(),
      messages: this.msgs,
      readStates: this.readStates,
      mustSync: false,
    };
    const soft: SoftState = { leader: this.lead, role: this.role };
    if (soft.leader !== this.prevSoft.leader || soft.role !== this.prevSoft.role) {
      rd.softState = soft;
      this.prevSoft = soft;
    }
    const hs = this.hardState();
    if (!sameHardState(hs, this.prevHard)) {
      rd.hardState = hs;
    }
    if (this.log.unstable.snapshot) rd.snapshot = this.log.unstable.snapshot;
    // Term and vote must survive a crash before any reply that depends on them; so must
    // entries before they are acknowledged. A commit index change alone can be recomputed.
    const hardChanged = hs.term !== this.prevHard.term || hs.vote !== this.prevHard.vote;
    const entriesNeedSync = rd.entries.length > 0 && !this.mutations.has('ack-unsynced-entries');
    rd.mustSync = entriesNeedSync || (hardChanged && !this.mutations.has('reply-before-sync')) || rd.snapshot !== undefined;
    this.prevHard = hs;
    this.msgs = [];
    this.readStates = [];
    return rd;
  }

  advance(rd: Ready): void {
    if (rd.snapshot) {
      this.log.stableSnapTo(rd.snapshot.index);
      this.log.appliedTo(rd.snapshot.index);
    }
    const lastEntry = rd.entries[rd.entries.length - 1];
    if (lastEntry) this.log.stableTo(lastEntry.index, lastEntry.term);
    const lastApplied = rd.committedEntries[rd.committedEntries.length - 1];
    if (lastApplied) this.log.appliedTo(lastApplied.index);
  }

  status(): RaftStatus {
    const progress: Record<NodeId, PeerProgress> = {};
    if (this.role === 'leader') {
      for (const [id, pr] of this.progress) {
        progress[id] = {
          match: pr.match,
          next: pr.next,
          state: pr.state,
          recentActive: pr.recentActive,
          inflight: pr.inflights.count,
        };
      }
    }
    return {
      id: this.id,
      term: this.term,
      vote: this.vote,
      commit: this.log.committed,
      applied: this.log.applied,
      lastIndex: this.log.lastIndex(),
      lastTerm: this.log.lastTerm(),
      leader: this.lead,
      role: this.role,
      leadTransferee: this.leadTransferee,
      progress,
      voters: [...this.conf.voters],
      learners: [...learnersOf(this.conf)],
    };
  }

  /** The configuration in force: the latest in the log, committed or not. */
  confState(): ConfState {
    return this.conf;
  }

  /** The configuration as of log index `index` (what a snapshot taken there must record). */
  confStateAt(index: number): ConfState {
    return this.confs.at(index);
  }

  /** Whether a configuration change is appended but not committed. */
  confChangePending(): boolean {
    return this.confs.lastIndex() > this.log.committed;
  }

  // ---------------------------------------------------------------- roles

  private hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.log.committed };
  }

  private reset(term: number): void {
    if (this.term !== term) {
      this.term = term;
      this.vote = NONE;
    }
    this.lead = NONE;
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.randomizedElectionTimeout = this.electionTimeout + Math.floor(this.random() * this.electionTimeout);
    this.leadTransferee = NONE;
    this.votes = new Map();
    this.progress = new Map();
    const last = this.log.lastIndex();
    for (const id of new Set([...membersOf(this.conf), this.id])) {
      const pr = new Progress(last + 1, this.maxInflight);
      if (id === this.id) pr.match = last;
      this.progress.set(id, pr);
    }
    this.readOnly = new ReadOnly();
    this.pendingReads = [];
  }

  private becomeFollower(term: number, lead: NodeId): void {
    this.reset(term);
    this.lead = lead;
    this.role = 'follower';
  }

  /** Follows a newer term with no leader and no vote, the election timer running on (Raft Figure 2). */
  private learnTerm(term: number): void {
    const elapsed = this.electionElapsed;
    const timeout = this.randomizedElectionTimeout;
    this.becomeFollower(term, NONE);
    this.electionElapsed = elapsed;
    this.randomizedElectionTimeout = timeout;
  }

  private becomePreCandidate(): void {
    if (this.role === 'leader') throw new HeraldError('INTERNAL', 'leader cannot become pre-candidate');
    // Neither term nor vote changes: a pre-vote round is only a poll.
    this.votes = new Map();
    this.lead = NONE;
    this.role = 'preCandidate';
  }

  private becomeCandidate(): void {
    if (this.role === 'leader') throw new HeraldError('INTERNAL', 'leader cannot become candidate');
    this.reset(this.term + 1);
    this.vote = this.id;
    this.role = 'candidate';
  }

  private becomeLeader(): void {
    this.reset(this.term);
    this.lead = this.id;
    this.role = 'leader';
    const self = this.progress.get(this.id)!;
    self.becomeReplicate();
    self.recentActive = true;
    // The no-op entry of this term: committing it commits everything before it (Figure 8) and
    // lets ReadIndex serve reads.
    this.appendEntries([{ term: 0, index: 0, type: 'normal', data: new Uint8Array(0) }]);
  }

  private promotable(): boolean {
    if (this.voters.includes(this.id)) return true;
    // Raft dissertation §4.2.2: a voter whose removal is appended but not committed may still be
    // needed to elect a leader (its log may be the only one holding the removal, so the others
    // cannot outvote it): it still campaigns, counted by nobody but the new configuration's voters.
    const pending = this.confs.lastIndex();
    return pending > this.log.committed && isVoter(this.confs.at(pending - 1), this.id);
  }

  private tickElection(): void {
    this.electionElapsed++;
    if (this.promotable() && this.electionElapsed >= this.randomizedElectionTimeout) {
      this.electionElapsed = 0;
      this.hup(false);
    }
  }

  private tickHeartbeat(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    if (this.electionElapsed >= this.electionTimeout) {
      this.electionElapsed = 0;
      if (this.checkQuorum) {
        if (!this.quorumActive()) {
          this.becomeFollower(this.term, NONE);
          return;
        }
        for (const [id, pr] of this.progress) if (id !== this.id) pr.recentActive = false;
      }
      // A transfer that did not finish within an election timeout is abandoned.
      this.leadTransferee = NONE;
    }
    if (this.heartbeatElapsed >= this.heartbeatTimeout) {
      this.heartbeatElapsed = 0;
      this.bcastHeartbeat();
    }
  }

  private quorumActive(): boolean {
    let active = 0;
    for (const id of this.voters) {
      const pr = this.progress.get(id)!;
      if (id === this.id || pr.recentActive) active++;
    }
    return active >= Math.floor(this.voters.length / 2) + 1;
  }

  private hup(transfer: boolean): void {
    if (this.role === 'leader' || !this.promotable()) return;
    // etcd also refuses to campaign with unapplied committed config entries; membership is
    // static here (configuration lives only in the snapshot), so there are none to wait for.
    // A transfer campaign skips pre-vote: the old leader asked for it.
    if (this.preVote && !transfer) this.startCampaign('preVote', false);
    else this.startCampaign('vote', transfer);
  }

  private startCampaign(kind: 'vote' | 'preVote', transfer: boolean): void {
    let term: number;
    if (kind === 'preVote') {
      this.becomePreCandidate();
      term = this.term + 1;
    } else {
      this.becomeCandidate();
      term = this.term;
    }
    if (this.poll(this.id, true) === 'won') {
      if (kind === 'preVote') this.startCampaign('vote', transfer);
      else this.becomeLeader();
      return;
    }
    // The count-learner-vote bug also canvasses learners, whose grants poll() then counts.
    const canvass = this.mutations.has('count-learner-vote') ? membersOf(this.conf) : this.voters;
    for (const id of canvass) {
      if (id === this.id) continue;
      const m = message(kind, this.id, id, term);
      m.index = this.log.lastIndex();
      m.logTerm = this.log.lastTerm();
      if (transfer) m.context = CAMPAIGN_TRANSFER;
      this.send(m);
    }
  }

  private poll(id: NodeId, granted: boolean): 'won' | 'lost' | 'pending' {
    if (!this.votes.has(id)) this.votes.set(id, granted);
    if (this.mutations.has('count-learner-vote')) {
      // The bug: learners' grants count toward the voters' majority.
      const grants = [...this.votes].filter(([v, g]) => g && isMember(this.conf, v)).length;
      if (grants >= Math.floor(this.voters.length / 2) + 1) return 'won';
    }
    return voteResult(this.voters, this.votes);
  }

  // ---------------------------------------------------------------- message handlers

  /**
   * Raft (dissertation §4.1) processes a vote request without consulting the configuration: the
   * candidate's own configuration decides whether our vote counts. Ignoring a non-member's cost
   * liveness twice: a voter whose log predates the candidate's addition never voted for the only
   * node that could win (seed 500417), and a removed node with a faster clock held a lagging
   * voter's vote in every term while the one node that could win, ignoring it, campaigned only in
   * terms already lost (seed 302987). Two limits keep a removed node from disrupting: a node that
   * hears a leader ignores it (§4.2.3), and a node that knows no configuration (joining, or on a
   * wiped disk) never votes.
   */
  private takesVoteRequestFromNonMember(m: Message): boolean {
    return (m.type === 'vote' || m.type === 'preVote') && this.lead === NONE && this.voters.length > 0;
  }

  private handleVoteRequest(m: Message): void {
    const respType = m.type === 'vote' ? 'voteResp' : 'preVoteResp';
    const canVote =
      this.vote === m.from ||
      (this.vote === NONE && this.lead === NONE) ||
      (m.type === 'preVote' && m.term > this.term) ||
      (this.mutations.has('double-vote') && m.type === 'vote' && this.lead === NONE);
    const upToDate = this.mutations.has('skip-up-to-date-check') || this.log.isUpToDate(m.index, m.logTerm);
    if (canVote && upToDate) {
      // Reply with the message's term: a granted pre-vote is for the future term.
      this.send(message(respType, this.id, m.from, m.term));
      if (m.type === 'vote') {
        this.electionElapsed = 0;
        this.vote = m.from;
      }
    } else {
      const r = message(respType, this.id, m.from, this.term);
      r.reject = true;
      this.send(r);
    }
  }

  private stepCandidate(m: Message): void {
    const myResp = this.role === 'preCandidate' ? 'preVoteResp' : 'voteResp';
    switch (m.type) {
      case 'app':
        this.becomeFollower(m.term, m.from);
        this.handleAppend(m);
        return;
      case 'heartbeat':
        this.becomeFollower(m.term, m.from);
        this.handleHeartbeat(m);
        return;
      case 'snap':
        this.becomeFollower(m.term, m.from);
        this.handleSnapshot(m);
        return;
      default:
        if (m.type !== myResp) return;
        switch (this.poll(m.from, !m.reject)) {
          case 'won':
            if (this.role === 'preCandidate') this.startCampaign('vote', false);
            else {
              this.becomeLeader();
              this.bcastAppend();
            }
            return;
          case 'lost':
            this.becomeFollower(this.term, NONE);
            return;
          case 'pending':
            return;
        }
    }
  }

  private stepFollower(m: Message): void {
    switch (m.type) {
      case 'app':
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleAppend(m);
        return;
      case 'heartbeat':
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleHeartbeat(m);
        return;
      case 'snap':
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleSnapshot(m);
        return;
      case 'timeoutNow':
        // Ordered by the leader: skip pre-vote and override other nodes' leases.
        this.hup(true);
        return;
      case 'readIndexResp':
        this.readStates.push({ index: m.index, context: m.context ?? new Uint8Array(0) });
        return;
      default:
        return;
    }
  }

  private stepLeader(m: Message): void {
    const pr = this.progress.get(m.from);
    if (!pr) return;
    switch (m.type) {
      case 'appResp':
        this.handleAppendResponse(m, pr);
        return;
      case 'heartbeatResp':
        this.handleHeartbeatResponse(m, pr);
        return;
      default:
        return;
    }
  }

  private handleAppend(m: Message): void {
    const r = message('appResp', this.id, m.from, this.term);
    if (m.index < this.log.committed) {
      // Already committed here: tell the leader where we are.
      r.index = this.log.committed;
      this.send(r);
      return;
    }
    const lastNew = this.log.maybeAppend(m.index, m.logTerm, m.commit, m.entries, this.mutations.has('skip-log-matching'));
    if (lastNew !== undefined) {
      if (m.entries.length > 0) this.confs.noteAppended(m.entries, (i) => this.log.term(i), this.log.firstIndex());
      r.index = lastNew;
      this.send(r);
      return;
    }
    // Fast backtracking: suggest the largest index whose term is <= the leader's term at
    // m.index, so the leader skips a whole conflicting term per round trip.
    const [hintIndex, hintTerm] = this.log.findConflictByTerm(Math.min(m.index, this.log.lastIndex()), m.logTerm);
    r.index = m.index;
    r.reject = true;
    r.rejectHint = hintIndex;
    r.rejectHintTerm = hintTerm;
    this.send(r);
  }

  private handleHeartbeat(m: Message): void {
    // The leader sends min(match, commit): never beyond what we hold.
    this.log.commitTo(Math.min(m.commit, this.log.lastIndex()));
    const r = message('heartbeatResp', this.id, m.from, this.term);
    if (m.context) r.context = m.context;
    this.send(r);
  }

  private handleSnapshot(m: Message): void {
    const s = m.snapshot;
    const r = message('appResp', this.id, m.from, this.term);
    if (s && this.restore(s)) {
      r.index = this.log.lastIndex();
    } else {
      r.index = this.log.committed;
    }
    this.send(r);
  }

  private restore(s: { index: number; term: number; conf: ConfState }): boolean {
    if (s.index <= this.log.committed) return false;
    if (this.log.matchTerm(s.index, s.term)) {
      // We already hold the snapshot's last entry: just fast-forward the commit index.
      this.log.commitTo(s.index);
      return false;
    }
    this.log.restore(s);
    this.confs.reset(s.conf);
    return true;
  }

  private handleAppendResponse(m: Message, pr: Progress): void {
    pr.recentActive = true;
    if (m.reject) {
      let nextProbe = m.rejectHint;
      if (m.rejectHintTerm > 0) {
        // Skip every entry of ours whose term is above the follower's term at the hint.
        nextProbe = this.log.findConflictByTerm(m.rejectHint, m.rejectHintTerm)[0];
      }
      if (pr.maybeDecrTo(m.index, nextProbe)) {
        if (pr.state === 'replicate') pr.becomeProbe();
        this.sendAppend(m.from);
      }
      return;
    }
    const wasPaused = pr.isPaused();
    // An ack of exactly our match while probing also ends the probe (the follower is in sync).
    if (!pr.maybeUpdate(m.index) && !(pr.state === 'probe' && pr.match === m.index)) return;
    if (pr.state === 'probe') pr.becomeReplicate();
    else if (pr.state === 'snapshot' && pr.match + 1 >= this.log.firstIndex()) {
      // The follower caught up past our compaction point (through the snapshot or otherwise).
      pr.becomeProbe();
      pr.becomeReplicate();
    } else if (pr.state === 'replicate') pr.inflights.freeLE(m.index);

    if (this.maybeCommit()) {
      this.releasePendingReads();
      if (this.lazyCommitBroadcast) this.bcastPendingEntries();
      else this.bcastAppend();
    } else if (wasPaused) {
      this.sendAppend(m.from);
    }
    // Keep the pipeline full.
    while (this.maybeSendAppend(m.from, false)) {
      // loop
    }
    if (m.from === this.leadTransferee && pr.match === this.log.lastIndex()) this.sendTimeoutNow(m.from);
  }

  private handleHeartbeatResponse(m: Message, pr: Progress): void {
    pr.recentActive = true;
    pr.probeSent = false;
    // A full window with a live follower means an append was probably lost: free one slot so
    // the next append goes out (the follower rejects the gap and we fall back to probing).
    if (pr.state === 'replicate' && pr.inflights.full()) pr.inflights.freeFirstOne();
    if (pr.match < this.log.lastIndex() || pr.state === 'probe') this.sendAppend(m.from);
    if (!m.context || m.context.length === 0) return;
    if (!this.readOnly.recvAck(m.from, m.context, this.voters)) return;
    for (const req of this.readOnly.advance(m.context)) this.answerRead(req.from, req.index, req.context);
  }

  private handleReadIndexRequest(m: Message): void {
    const context = m.context ?? new Uint8Array(0);
    if (this.role !== 'leader') {
      if (this.lead === NONE) return;
      // Forward to the leader; the answer comes back as readIndexResp.
      const f = message('readIndex', this.id, this.lead, 0);
      f.context = context;
      this.send(f);
      return;
    }
    if (this.voters.length === 1 && this.voters[0] === this.id) {
      this.answerRead(m.from, this.log.committed, context);
      return;
    }
    // Until an entry of this term commits, our commit index may lag the true one (a previous
    // leader may have committed more): hold the read.
    if (this.log.term(this.log.committed) !== this.term) {
      this.pendingReads.push(m);
      return;
    }
    this.confirmRead(m.from, context);
  }

  private confirmRead(from: NodeId, context: Uint8Array): void {
    if (this.mutations.has('read-index-no-confirm')) {
      this.answerRead(from, this.log.committed, context);
      return;
    }
    this.readOnly.addRequest(this.log.committed, from, context);
    this.readOnly.recvAck(this.id, context, this.voters);
    this.bcastHeartbeat(context);
  }

  private answerRead(from: NodeId, index: number, context: Uint8Array): void {
    if (from === this.id) {
      this.readStates.push({ index, context });
      return;
    }
    const r = message('readIndexResp', this.id, from, this.term);
    r.index = index;
    r.context = context;
    this.send(r);
  }

  private releasePendingReads(): void {
    if (this.pendingReads.length === 0 || this.log.term(this.log.committed) !== this.term) return;
    const reads = this.pendingReads;
    this.pendingReads = [];
    for (const m of reads) this.confirmRead(m.from, m.context ?? new Uint8Array(0));
  }

  // ---------------------------------------------------------------- replication

  private appendEntries(es: Entry[]): number {
    let index = this.log.lastIndex();
    const stamped = es.map((e) => ({ ...e, term: this.term, index: ++index }));
    const last = this.log.append(stamped);
    this.confs.noteAppended(stamped, (i) => this.log.term(i), this.log.firstIndex());
    this.progress.get(this.id)!.maybeUpdate(last);
    // A single-node cluster commits at once; otherwise this is a no-op until acks arrive.
    this.maybeCommit();
    return last;
  }

  private maybeCommit(): boolean {
    const mci = committedIndex(this.voters, (id) => this.progress.get(id)!.match);
    return this.log.maybeCommit(mci, this.term, this.mutations.has('commit-previous-term'));
  }

  private bcastAppend(): void {
    for (const id of this.progress.keys()) if (id !== this.id) this.sendAppend(id);
  }

  /** Appends to the followers that have entries to receive (none that would carry only a commit index). */
  private bcastPendingEntries(): void {
    for (const id of this.progress.keys()) if (id !== this.id) this.maybeSendAppend(id, false);
  }

  private bcastHeartbeat(context?: Uint8Array): void {
    const ctx = context ?? this.readOnly.lastPendingContext();
    for (const [id, pr] of this.progress) {
      if (id === this.id) continue;
      const m = message('heartbeat', this.id, id, this.term);
      // Never tell a follower to commit past what it is known to hold.
      m.commit = Math.min(pr.match, this.log.committed);
      if (ctx) m.context = ctx;
      this.send(m);
    }
  }

  private sendAppend(to: NodeId): void {
    this.maybeSendAppend(to, true);
  }

  /** Sends an append (or a snapshot) to `to` if its flow control allows; returns whether it did. */
  private maybeSendAppend(to: NodeId, sendIfEmpty: boolean): boolean {
    const pr = this.progress.get(to)!;
    if (pr.isPaused()) return false;
    const prevIndex = pr.next - 1;
    const prevTerm = this.log.term(prevIndex);
    const ents = prevTerm === undefined ? 'compacted' : this.log.entriesFrom(pr.next, this.maxSizePerMsg);
    if (prevTerm === undefined || ents === 'compacted') return this.sendSnapshot(to, pr);
    if (ents.length === 0 && !sendIfEmpty) return false;
    const m = message('app', this.id, to, this.term);
    m.index = prevIndex;
    m.logTerm = prevTerm;
    m.entries = ents;
    m.commit = this.log.committed;
    pr.sentEntries(ents.length, ents.length > 0 ? ents[ents.length - 1]!.index : prevIndex);
    this.send(m);
    return true;
  }

  private sendSnapshot(to: NodeId, pr: Progress): boolean {
    // A snapshot is expensive: only for a follower we know is alive.
    if (!pr.recentActive) return false;
    const snap = this.log.snapshot();
    const m = message('snap', this.id, to, this.term);
    m.snapshot = snap;
    pr.becomeSnapshot(snap.index);
    this.send(m);
    return true;
  }

  private sendTimeoutNow(to: NodeId): void {
    this.send(message('timeoutNow', this.id, to, this.term));
  }

  private send(m: Message): void {
    this.msgs.push(m);
  }

  // ---------------------------------------------------------------- configuration

  /**
   * Puts the latest configuration in the log in force (after any input that may have appended,
   * truncated or committed), and makes a leader that removed itself step down once that commits.
   */
  private settleConf(): void {
    const want = this.mutations.has('apply-conf-at-commit') ? this.confs.at(this.log.committed) : this.confs.current();
    if (want !== this.conf) this.switchConf(want);
    if (this.role === 'leader' && !isVoter(this.conf, this.id) && this.log.committed >= this.confs.lastIndex()) {
      this.stepDownRemoved();
    }
  }

  private switchConf(conf: ConfState): void {
    this.conf = conf;
    this.voters = [...conf.voters];
    if ((this.role === 'candidate' || this.role === 'preCandidate') && !this.promotable()) {
      this.becomeFollower(this.term, NONE);
      return;
    }
    if (this.role !== 'leader') return;
    const last = this.log.lastIndex();
    for (const id of membersOf(conf)) {
      if (this.progress.has(id)) continue;
      const pr = new Progress(last + 1, this.maxInflight);
      // Just added: not to be counted as dead by the next check-quorum round before it answers.
      pr.recentActive = true;
      this.progress.set(id, pr);
    }
    for (const id of [...this.progress.keys()]) if (id !== this.id && !isMember(conf, id)) this.progress.delete(id);
    if (this.leadTransferee !== NONE && !isVoter(conf, this.leadTransferee)) this.leadTransferee = NONE;
    // The quorum changed: what a majority holds may now be committable.
    if (this.maybeCommit()) {
      this.releasePendingReads();
      this.bcastAppend();
    }
  }

  /** This leader's removal committed: hand over to the most up-to-date voter and step down. */
  private stepDownRemoved(): void {
    let best: NodeId = NONE;
    let bestMatch = -1;
    for (const id of this.voters) {
      const match = this.progress.get(id)?.match ?? 0;
      if (match > bestMatch) [best, bestMatch] = [id, match];
    }
    if (best !== NONE && bestMatch === this.log.lastIndex()) this.sendTimeoutNow(best);
    this.becomeFollower(this.term, NONE);
  }
}

