// The nemesis's plan: a pure function of (seed, nodes, duration, kinds, timing), so a run's faults
// replay from its seed. Steps are sequential: a fault is applied, held for its duration, healed,
// then the cluster gets a quiet gap before the next one. Targets that depend only on the member
// list are fixed here; "the leader" is resolved when the step runs (and recorded in the report),
// with `choice` breaking any remaining tie deterministically.
import { Rng } from '../random.js';
import { familyOf, type FaultKind } from './fault-kinds.js';

export interface FaultParams {
  /** Clock offset to apply (ms, may be negative). */
  clockOffsetMs?: number;
  /** Clock drift (ms of offset gained per second of real time). */
  clockDriftMsPerS?: number;
  /** Peer link delay (ms). */
  delayMs?: number;
  /** Probability that a chunk resets its connection (loss). */
  resetProbability?: number;
  /** For partitions: the ring order, the minority, the one-way link. */
  ring?: string[];
  minority?: string[];
  from?: string;
  to?: string;
  /** For crash points: which persistence point. */
  crashPoint?: string;
  /** replace-node: the new incarnation keeps the old member id (removed first, then added back). */
  sameId?: boolean;
  /** grow-shrink: the shrink removes the leader as one of the two. */
  removeLeader?: boolean;
}

export interface FaultStep {
  index: number;
  /** Offset from the start of the fault phase (ms). */
  atMs: number;
  kind: FaultKind;
  /** How long the fault is held before it is healed (ms). */
  durationMs: number;
  /** Fixed target nodes (empty when the target is resolved at run time, e.g. the leader). */
  targets: string[];
  /** Uniform in [0, 1): picks among run-time candidates (which worker, which follower). */
  choice: number;
  params: FaultParams;
}

export interface FaultScheduleOptions {
  seed: number;
  nodeIds: readonly string[];
  /** Length of the fault phase (ms); no step starts after durationMs − its own duration. */
  durationMs: number;
  kinds: readonly FaultKind[];
  /** Quiet gap between a heal and the next fault (ms), drawn in [min, max]. */
  gapMs?: readonly [number, number];
  /** Longest randomized election timeout of the nodes (ms): pauses outlast it. */
  electionTimeoutMs: number;
  /** Lease duration of the workload's runs (ms): worker pauses outlast it. */
  leaseMs: number;
}

function duration(rng: Rng, kind: FaultKind, o: FaultScheduleOptions): number {
  switch (kind) {
    case 'pause-leader':
    case 'pause-follower':
      return rng.int(Math.round(o.electionTimeoutMs * 1.5), Math.round(o.electionTimeoutMs * 3));
    case 'pause-worker':
      return rng.int(Math.round(o.leaseMs * 1.3), Math.round(o.leaseMs * 2));
    case 'pause-worker-busy':
      // Past the lease by enough that the run is surely re-claimed (running again) on waking.
      return rng.int(o.leaseMs + 1_200, o.leaseMs + 2_200);
    case 'kill-all':
    case 'kill-all-leader-last':
    case 'kill-majority':
      return rng.int(1_000, 3_000);
    case 'kill-worker':
      return rng.int(500, 2_000);
    case 'kill-worker-before-effect':
    case 'kill-worker-after-effect':
      // Armed until some worker executes a run; a few seconds make that near certain.
      return rng.int(2_000, 4_000);
    case 'crash-before-sync':
    case 'crash-after-sync':
    case 'crash-snapshot-save':
    case 'crash-snapshot-install':
    case 'crash-compaction':
      return rng.int(3_000, 6_000);
    case 'replace-node':
      // How long the node stays dead before its replacement starts joining.
      return rng.int(2_000, 5_000);
    case 'grow-shrink':
      // How long the cluster runs grown before it shrinks.
      return rng.int(4_000, 10_000);
    default:
      return rng.int(2_000, 5_000);
  }
}

function params(rng: Rng, kind: FaultKind, nodes: readonly string[]): { targets: string[]; params: FaultParams } {
  const n = nodes.length;
  switch (kind) {
    case 'kill-one':
      return { targets: [rng.pick(nodes)], params: {} };
    case 'kill-majority':
      return { targets: rng.sample(nodes, Math.floor(n / 2) + 1), params: {} };
    case 'kill-all':
    case 'kill-all-leader-last':
      return { targets: [...nodes], params: {} };
    case 'partition-isolate-one':
      return { targets: [rng.pick(nodes)], params: {} };
    case 'partition-majority-minority':
      return { targets: [], params: { minority: rng.sample(nodes, rng.int(1, Math.floor((n - 1) / 2))) } };
    case 'partition-ring':
      return { targets: [], params: { ring: rng.shuffle(nodes) } };
    case 'partition-one-way': {
      const [from, to] = rng.shuffle(nodes);
      return { targets: [], params: { from: from!, to: to! } };
    }
    case 'link-delay':
      return { targets: [], params: { delayMs: rng.int(20, 150) } };
    case 'link-loss':
      return { targets: [], params: { resetProbability: Math.round(rng.int(5, 60)) / 1000 } };
    case 'clock-jump-one':
      return { targets: [rng.pick(nodes)], params: { clockOffsetMs: (rng.chance(0.5) ? 1 : -1) * rng.int(5_000, 90_000) } };
    case 'clock-jump-leader':
      return { targets: [], params: { clockOffsetMs: (rng.chance(0.5) ? 1 : -1) * rng.int(5_000, 90_000) } };
    case 'clock-drift-leader':
      return { targets: [], params: { clockDriftMsPerS: (rng.chance(0.5) ? 1 : -1) * rng.int(50, 500) } };
    case 'clock-drift-one':
      return { targets: [rng.pick(nodes)], params: { clockDriftMsPerS: (rng.chance(0.5) ? 1 : -1) * rng.int(50, 500) } };
    case 'crash-before-sync':
    case 'crash-after-sync':
      return { targets: [rng.pick(nodes)], params: { crashPoint: kind.slice('crash-'.length) } };
    case 'crash-snapshot-save':
      return { targets: [rng.pick(nodes)], params: { crashPoint: 'snapshot-save' } };
    case 'crash-snapshot-install':
      return { targets: [rng.pick(nodes)], params: { crashPoint: 'snapshot-install' } };
    case 'crash-compaction':
      return { targets: [rng.pick(nodes)], params: { crashPoint: 'compaction' } };
    case 'replace-node':
      return { targets: [rng.pick(nodes)], params: { sameId: rng.chance(0.3) } };
    case 'grow-shrink':
      return { targets: [], params: { removeLeader: rng.chance(0.4) } };
    default:
      return { targets: [], params: {} };
  }
}

export function faultSchedule(o: FaultScheduleOptions): FaultStep[] {
  const steps: FaultStep[] = [];
  if (o.kinds.length === 0) return steps;
  const rng = new Rng(o.seed).fork('nemesis');
  const [gapMin, gapMax] = o.gapMs ?? [1_500, 4_000];
  // The first fault comes after the workload had a moment to start.
  let t = rng.int(gapMin, gapMax);
  // Deal kinds family by family (round-robin over a shuffled family order, each family's kinds
  // shuffled), so even a short run sees every selected family early and a long run every kind.
  const families = new Map<string, FaultKind[]>();
  for (const k of o.kinds) {
    const f = familyOf(k);
    families.set(f, [...(families.get(f) ?? []), k]);
  }
  const decks = new Map<string, FaultKind[]>();
  let order: string[] = [];
  const deal = (): FaultKind => {
    if (order.length === 0) order = rng.shuffle([...families.keys()]);
    const f = order.shift()!;
    let d = decks.get(f);
    if (!d || d.length === 0) decks.set(f, (d = rng.shuffle(families.get(f)!)));
    return d.pop()!;
  };
  for (;;) {
    const kind = deal();
    const d = duration(rng, kind, o);
    if (t + d + procedureMs(kind) > o.durationMs) break;
    const p = params(rng, kind, o.nodeIds);
    steps.push({ index: steps.length, atMs: t, kind, durationMs: d, targets: p.targets, choice: rng.next(), params: p.params });
    t += d + procedureMs(kind) + rng.int(gapMin, gapMax);
  }
  return steps;
}

/**
 * Time a step takes beyond its hold, planned for so the schedule stays near the clock: a
 * membership step's heal is a procedure (join, catch up, promote, remove), not an instant.
 */
function procedureMs(kind: FaultKind): number {
  if (kind === 'replace-node') return 8_000;
  if (kind === 'grow-shrink') return 12_000;
  return 0;
}

/** Fault counts by kind (for reports). */
export function countByKind(steps: readonly { kind: FaultKind }[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of steps) out[s.kind] = (out[s.kind] ?? 0) + 1;
  return out;
}
