// Configuration changes in the simulator, drawn per seed: an operator adding learners (spare
// machines, or wiped ones under a new incarnation), promoting them, removing members (the leader
// included), retiring removed machines, and disks dying under a member (a wiped-disk restart,
// after which the replace procedure — remove the old incarnation, add the new one, promote —
// happens through the same random actions). All of it lands during the fault plan's partitions,
// crashes and snapshot installs.

import { isHeraldError } from '../../herald-error.js';
import { type ConfChange, incarnationOf, isMember, learnersOf, sameMembers } from '../core/membership.js';
import type { ConfState, NodeId } from '../types.js';
import type { Prng } from './prng.js';
import type { SimNode } from './sim-node.js';

export interface MembershipPlan {
  enabled: boolean;
  /** Per time unit: probability of a change attempt. */
  changeRate: number;
  /** Probability that an attempt proposes two changes back to back (one must be refused). */
  burstRate: number;
  /** Per time unit: probability that a member's disk dies (wiped-disk restart). */
  wipeRate: number;
  /** Per time unit: probability that a removed, still running machine is retired. */
  retireRate: number;
}

export function drawMembershipPlan(rng: Prng, forced?: boolean): MembershipPlan {
  const enabled = forced ?? rng.chance(0.4);
  return {
    enabled,
    changeRate: rng.pick([0.005, 0.01, 0.03]),
    burstRate: rng.pick([0, 0.2, 0.5]),
    wipeRate: rng.pick([0, 0.0005, 0.002]),
    retireRate: rng.pick([0.005, 0.05]),
  };
}

export interface MembershipHooks {
  leader(): SimNode | undefined;
  crash(node: SimNode): void;
  restart(node: SimNode): void;
  /** A node's disks were replaced; `sameIncarnation` when it came back under its old identity. */
  wiped(node: SimNode, sameIncarnation: boolean): void;
  log?: (line: string) => void;
}

/** Most voters a run grows to; removals stop at MIN_VOTERS (the checkers' quorum assumes it). */
const MAX_VOTERS = 5;
export const MIN_VOTERS = 3;

export class SimMembership {
  /** Machines we keep running (restarted after crashes); the rest are spares or retired. */
  readonly active = new Set<SimNode>();
  changes = 0;
  refused = 0;
  wipes = 0;

  constructor(
    private readonly nodes: ReadonlyMap<NodeId, SimNode>,
    initial: readonly NodeId[],
    private readonly plan: MembershipPlan,
    private readonly rng: Prng,
    private readonly hooks: MembershipHooks,
    /** The bug: a wiped node comes back under its old incarnation, as a voter. */
    private readonly wipedRejoinsAsVoter: boolean,
  ) {
    for (const id of initial) this.active.add(nodes.get(id)!);
  }

  /** One chaos time unit. */
  step(now: number): void {
    if (!this.plan.enabled) return;
    const leader = this.hooks.leader();
    if (this.rng.chance(this.plan.retireRate)) this.retireOne(leader);
    if (this.rng.chance(this.plan.wipeRate)) this.wipeOne(leader);
    if (!leader || !this.rng.chance(this.plan.changeRate)) return;
    const n = this.rng.chance(this.plan.burstRate) ? 2 : 1;
    for (let i = 0; i < n; i++) this.changeOne(leader, now);
  }

  /** Liveness phase: the machines that must follow the leader (running members of its configuration). */
  participants(conf: ConfState | undefined): SimNode[] {
    return [...this.active].filter((x) => !conf || (isMember(conf, x.id) && incarnationOf(conf, x.id) === incarnationOrListed(conf, x)));
  }

  private changeOne(leader: SimNode, now: number): void {
    const conf = leader.driver.confState();
    const cc = this.drawChange(conf);
    if (!cc) return;
    const joining = cc.kind === 'addLearner' ? this.nodes.get(cc.id)! : undefined;
    if (joining && !this.active.has(joining)) {
      // A spare or retired machine: it starts on empty disks, a new incarnation.
      if (joining.up) this.hooks.crash(joining);
      joining.wipe(undefined);
      this.hooks.wiped(joining, false);
      this.active.add(joining);
      this.hooks.restart(joining);
    }
    if (joining) cc.incarnation = joining.memberIncarnation;
    try {
      void leader.driver.proposeConfChange(cc).catch(() => undefined);
      this.changes++;
      this.hooks.log?.(`t=${now} ${leader.id} proposes ${cc.kind} ${cc.id}${cc.incarnation ? `@${cc.incarnation}` : ''}`);
    } catch (e) {
      if (!isHeraldError(e)) throw e;
      this.refused++;
      this.hooks.log?.(`t=${now} ${leader.id} refuses ${cc.kind} ${cc.id}: ${e.code}`);
    }
  }

  private drawChange(conf: ConfState): ConfChange | undefined {
    const voters = conf.voters;
    const learners = learnersOf(conf);
    // A member whose listed incarnation is not the machine's any more lost its disk: replace it.
    const stale = this.staleMembers(conf);
    const outsiders = [...this.nodes.keys()].filter((id) => !isMember(conf, id));
    const options: ConfChange[] = [];
    for (const id of stale) if (!voters.includes(id) || voters.length > MIN_VOTERS) options.push({ kind: 'remove', id });
    if (options.length === 0 || this.rng.chance(0.3)) {
      if (voters.length + learners.length < MAX_VOTERS + 1) for (const id of outsiders) options.push({ kind: 'addLearner', id });
      if (voters.length < MAX_VOTERS) for (const id of learners) options.push({ kind: 'promote', id });
      for (const id of learners) options.push({ kind: 'remove', id });
      if (voters.length > MIN_VOTERS) for (const id of voters) options.push({ kind: 'remove', id });
    }
    return options.length === 0 ? undefined : this.rng.pick(options);
  }

  /** Members whose listed incarnation is not their machine's any more (it lost its disk). */
  private staleMembers(conf: ConfState): NodeId[] {
    return [...conf.voters, ...learnersOf(conf)].filter((id) => {
      const listed = incarnationOf(conf, id);
      return listed !== '' && listed !== this.nodes.get(id)!.memberIncarnation;
    });
  }

  /** A removed machine that still runs is shut down (or left running to be ignored a while longer). */
  private retireOne(leader: SimNode | undefined): void {
    if (!leader) return;
    const conf = leader.driver.confState();
    if (leader.driver.status().commit < leader.driver.status().lastIndex) return;
    const removed = [...this.active].filter((x) => !isMember(conf, x.id) && x !== leader);
    if (removed.length === 0) return;
    const x = this.rng.pick(removed);
    this.active.delete(x);
    this.hooks.crash(x);
    this.hooks.log?.(`${x.id} retired`);
  }

  /** A member's disk dies: it restarts on empty disks (crash first if up). */
  private wipeOne(leader: SimNode | undefined): void {
    // One lost disk at a time: a second before the first is replaced can cost the majority
    // (the cluster then needs disaster recovery, which is not this simulator's subject). Judged
    // on a configuration that can no longer be undone: while a change is pending (the removal of
    // the last wiped member, say) a new leader may come back to the one before it (seed 204239:
    // n3 wiped, its removal proposed, then the leader's own disk died; 2 of 4 voters lost).
    if (!leader || leader.driver.confChangePending() || this.staleMembers(leader.driver.confState()).length > 0) return;
    // Nor while another member's log holds a configuration the leader's does not (an uncommitted
    // change from an earlier leader, not yet overwritten): it may still come into force, and in
    // it the disk lost can be one of a bare majority whose other members cannot all win — seed
    // 602382: n2 held its own uncommitted promotion of n5 (4 voters), n3's disk died, and n5, a
    // learner in its own log, never campaigns, nor votes for n2 (its log has a newer term). The
    // same fault in the leader's configuration is covered; this one is two changes at once.
    const conf = leader.driver.confState();
    if ([...this.active].some((x) => x.driver !== undefined && !sameMembers(x.driver.confState(), conf))) return;
    const members = [...this.active];
    if (members.length === 0) return;
    const x = this.rng.pick(members);
    if (x.up) this.hooks.crash(x);
    const asBefore = this.wipedRejoinsAsVoter ? (leader?.driver.confState() ?? x.bootstrap) : undefined;
    x.wipe(asBefore);
    this.wipes++;
    this.hooks.wiped(x, asBefore !== undefined);
    this.hooks.log?.(`${x.id} disk wiped${asBefore ? ' (rejoins as before)' : ''}`);
    this.hooks.restart(x);
  }
}

function incarnationOrListed(conf: ConfState, x: SimNode): string {
  // Bootstrap members may be listed without an incarnation: any is theirs.
  return incarnationOf(conf, x.id) === '' ? '' : x.memberIncarnation;
}
