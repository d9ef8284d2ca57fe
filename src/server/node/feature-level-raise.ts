// Rolling upgrades (issue 28): which cluster feature level the leader may raise to, from what the
// members report on their peer streams (raft.proto StreamRequest.feature_level). Pure: the inputs
// are handed in (scheduler-node.ts runs it on the leader and proposes setFeatureLevel).
//
// The rule: the cluster level becomes L only once every VOTER reports supporting at least L. A
// voter that has not reported (no batch from it in this process yet, or a build from before
// feature levels, which sends 0) blocks the raise. Learners do not block it — they are not part
// of any quorum and can be upgraded before they are promoted — but a learner below the level is
// returned so the leader can say so (it will stop applying at the setFeatureLevel entry until it
// is upgraded; promoting it before then would add a voter that cannot apply).
import type { NodeId } from '../../raft/types.js';

/** The last feature level each peer reported, by member id (kept by every node; the leader uses it). */
export class ReportedFeatureLevels {
  private readonly levels = new Map<NodeId, number>();

  report(from: NodeId, level: number): void {
    if (this.levels.get(from) !== level) this.levels.set(from, level);
  }

  /** undefined: nothing heard from that member yet. */
  get(id: NodeId): number | undefined {
    return this.levels.get(id);
  }
}

export interface RaiseInput {
  /** The cluster level as the leader's state machine applied it. */
  readonly clusterLevel: number;
  readonly selfId: NodeId;
  /** The highest level the leader's own build supports. */
  readonly selfLevel: number;
  readonly voters: readonly NodeId[];
  readonly learners: readonly NodeId[];
  /** What each other member reported (undefined: nothing heard yet). */
  readonly reported: (id: NodeId) => number | undefined;
}

export interface RaiseDecision {
  /** The level to propose (setFeatureLevel), or undefined: nothing to raise now. */
  readonly raiseTo: number | undefined;
  /** The highest level every voter supports (0 when one has not reported). */
  readonly votersSupport: number;
  /** Voters holding the level at or below the cluster's (not reported, or an older build). */
  readonly blockedBy: readonly NodeId[];
  /** Learners that report less than the level the cluster is (or is about to be) at. */
  readonly learnersBelow: readonly NodeId[];
}

export function featureLevelToRaise(i: RaiseInput): RaiseDecision {
  const levelOf = (id: NodeId): number => (id === i.selfId ? i.selfLevel : (i.reported(id) ?? 0));
  let support = i.selfLevel;
  for (const v of i.voters) support = Math.min(support, levelOf(v));
  const raiseTo = support > i.clusterLevel ? support : undefined;
  const target = raiseTo ?? i.clusterLevel;
  return {
    raiseTo,
    votersSupport: support,
    blockedBy: raiseTo === undefined ? i.voters.filter((v) => levelOf(v) <= i.clusterLevel) : [],
    learnersBelow: i.learners.filter((l) => levelOf(l) < target),
  };
}

/** What the raise loop uses of its node (injected: scheduler-node.ts wires the real ones). */
export interface RaiserDeps {
  readonly selfId: NodeId;
  isLeader(): boolean;
  /** The cluster level this node's state machine applied. */
  clusterLevel(): number;
  /** This build's level (SUPPORTED_FEATURE_LEVEL, or a test's). */
  selfLevel(): number;
  conf(): { readonly voters: readonly NodeId[]; readonly learners?: readonly NodeId[] };
  reported(id: NodeId): number | undefined;
  /** Proposes setFeatureLevel(level) on this leader and resolves once it applied. */
  proposeRaise(level: number): Promise<void>;
  log: { info(o: object, msg: string): void; warn(o: object, msg: string): void };
}

/**
 * One check of the raise loop: on the leader, proposes the level every voter supports when it is
 * above the cluster's (at most one proposal at a time). Logs a learner below the level once per
 * (learner, level).
 */
export function createRaiser(d: RaiserDeps): { check(): Promise<number | undefined> } {
  let inFlight = false;
  const noted = new Set<string>();
  return {
    async check() {
      if (inFlight || !d.isLeader()) return undefined;
      const conf = d.conf();
      const decision = featureLevelToRaise({
        clusterLevel: d.clusterLevel(),
        selfId: d.selfId,
        selfLevel: d.selfLevel(),
        voters: conf.voters,
        learners: conf.learners ?? [],
        reported: d.reported,
      });
      for (const l of decision.learnersBelow) {
        const key = `${l}:${decision.raiseTo ?? d.clusterLevel()}`;
        if (noted.has(key)) continue;
        noted.add(key);
        d.log.warn({ learner: l, reported: d.reported(l) ?? 0, level: decision.raiseTo ?? d.clusterLevel() }, 'a learner runs a build below the cluster feature level: it stops applying until upgraded; upgrade it before promoting it');
      }
      if (decision.raiseTo === undefined) return undefined;
      inFlight = true;
      try {
        await d.proposeRaise(decision.raiseTo);
        d.log.info({ from: d.clusterLevel(), to: decision.raiseTo }, 'every voter supports a higher feature level: cluster feature level raised');
        return decision.raiseTo;
      } finally {
        inFlight = false;
      }
    },
  };
}
