// Who leads, as this node sees it: the soft state from each Ready (becoming and losing
// leadership, and what each means for proposals and the apply pipeline), leadership transfer,
// and when each peer was last heard from.

import { addressesOf } from '../core/membership.js';
import { HeraldError } from '../../herald-error.js';
import type { RaftNode } from '../core/raft-node.js';
import type { DriverTimers, PeerInfo } from '../ports.js';
import type { NodeId, Role } from '../types.js';
import type { ApplyPipeline } from './apply-pipeline.js';
import { NO_LEADER, type DriverState, type LeaderChange } from './driver-state.js';
import type { EffectsInbox } from './effects-inbox.js';

export class Leadership {
  private readonly addresses = new Map<NodeId, PeerInfo>();
  /** Monotonic ms of the last message received from each peer. */
  private readonly lastHeard = new Map<NodeId, number>();

  constructor(
    private readonly state: DriverState,
    private readonly node: RaftNode,
    members: readonly PeerInfo[],
    private readonly pipeline: ApplyPipeline,
    private readonly inbox: EffectsInbox,
    private readonly timers: DriverTimers,
    /** Runs the ready loop soon. */
    private readonly wake: () => void,
  ) {
    for (const m of members) this.addresses.set(m.id, m);
  }

  /** A message from `peer` arrived at `nowMs`. */
  heardFrom(peer: NodeId, nowMs: number): void {
    this.lastHeard.set(peer, nowMs);
  }

  /** Milliseconds since a message from `peer` arrived (-1 if never). */
  lastContactMs(peer: NodeId): number {
    const t = this.lastHeard.get(peer);
    return t === undefined ? -1 : this.timers.nowMs() - t;
  }

  leaderChange(): LeaderChange {
    const state = this.state;
    return {
      leaderId: state.leader,
      leaderAddress: addressesOf(this.node.confState())[state.leader]?.client || this.addresses.get(state.leader)?.clientAddress || '',
      term: state.term,
      role: state.role,
    };
  }

  /** NOT_LEADER, naming the leader (and its client address) when one is known. */
  notLeader(): HeraldError {
    const l = this.leaderChange();
    const id = this.state.id;
    return new HeraldError(
      'NOT_LEADER',
      l.leaderId ? `node ${id} is not the leader; the leader is ${l.leaderId} (${l.leaderAddress || 'address unknown'})` : `node ${id} is not the leader and no leader is known`,
      { leaderId: l.leaderId || undefined, leaderAddress: l.leaderAddress || undefined },
    );
  }

  /** A Ready's soft state: the known leader and this node's role. */
  onSoftState(leader: NodeId, role: Role): void {
    const state = this.state;
    const wasLeader = state.role === 'leader';
    const leaderChanged = leader !== state.leader;
    state.leader = leader;
    state.role = role;
    const term = this.node.status().term;
    state.term = term;
    if (wasLeader && role !== 'leader') {
      state.logger.info({ term, leader }, 'lost leadership');
      // Appended proposals may still commit under the new leader; give them two election timeouts.
      state.proposals.leadershipLost(state.electionTimeoutMs() * 2);
      state.events.emit('lostLeadership', { term });
    }
    if (!wasLeader && role === 'leader') {
      // The new leader's scheduler reads the state machine: entries held for a window go now.
      // It evaluates them (its services watch their results, which effects do not carry).
      this.pipeline.endApplyWindow();
      this.inbox.clear();
      state.logger.info({ term }, 'became leader');
      state.events.emit('becameLeader', { term });
    }
    if (leaderChanged) {
      if (!(role === 'leader')) state.logger.info({ term, leader: leader || null }, 'leader changed');
      state.events.emit('leaderChanged', this.leaderChange());
    }
  }

  /** Starts a leadership transfer (leader only); resolves once another node leads or rejects. */
  async transferLeadership(target?: NodeId, timeoutMs?: number): Promise<LeaderChange> {
    const state = this.state;
    state.assertRunning();
    if (state.role !== 'leader') throw this.notLeader();
    const to = target || this.bestTransferTarget();
    if (!to) throw new HeraldError('NO_LEADER', 'no follower is available to take over');
    if (to === state.id) return this.leaderChange();
    this.node.transferLeadership(to);
    this.wake();
    const limit = timeoutMs ?? state.electionTimeoutMs() * 2;
    const deadline = this.timers.nowMs() + limit;
    while (this.timers.nowMs() < deadline) {
      if (state.leader !== NO_LEADER && state.leader !== state.id) return this.leaderChange();
      await this.waitForLeaderChange(deadline - this.timers.nowMs());
    }
    throw new HeraldError('PROPOSAL_TIMEOUT', `leadership transfer to ${to} did not complete within ${limit} ms`);
  }

  /** Resolves at the next leader change, or after `ms`. */
  waitForLeaderChange(ms: number): Promise<void> {
    const events = this.state.events;
    return new Promise((resolve) => {
      const done = () => {
        this.timers.cancel(t);
        events.off('leaderChanged', done);
        resolve();
      };
      const t = this.timers.after(Math.max(1, ms), done);
      events.on('leaderChanged', done);
    });
  }

  /** The follower most caught up among those heard from within an election timeout. */
  private bestTransferTarget(): NodeId | undefined {
    const st = this.node.status();
    const electionTimeoutMs = this.state.electionTimeoutMs();
    let best: NodeId | undefined;
    let bestMatch = -1;
    for (const [id, p] of Object.entries(st.progress)) {
      if (id === this.state.id || !st.voters.includes(id)) continue;
      if (this.lastContactMs(id) < 0 || this.lastContactMs(id) > electionTimeoutMs) continue;
      if (p.match > bestMatch) {
        best = id;
        bestMatch = p.match;
      }
    }
    return best;
  }
}
