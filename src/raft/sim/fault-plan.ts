// Every fault rate and tunable of one simulation run, drawn from its seed (TigerBeetle's VOPR
// habit): across many seeds the simulator explores calm runs, lossy ones, crash storms and
// long partitions without anyone choosing the mix by hand.

import type { Prng } from './prng.js';

export interface FaultPlan {
  /** Length of the chaos phase in units. */
  chaosUnits: number;
  dropRate: number;
  duplicateRate: number;
  reorderRate: number;
  minDelay: number;
  maxDelay: number;
  /** Per time unit: probability that an up node crashes. */
  crashRate: number;
  /** Per time unit: probability that the current leader crashes (leader churn: Figure 8 shapes). */
  leaderCrashRate: number;
  /** Probability that a node crashes right after it applies, or becomes leader (adversarial timing). */
  crashOnCommitRate: number;
  /** Per time unit: probability that a down node restarts. */
  restartRate: number;
  /** Per time unit: probability that the leader is asked to transfer leadership to a random node. */
  transferRate: number;
  /** Probability that a new partition shape is aimed at the current leader. */
  leaderTargeted: number;
  /** Per time unit: probability of a new partition shape / of healing. */
  partitionRate: number;
  healRate: number;
  /** What a crash keeps of unsynced batches: none (power loss), a random prefix, or all (a process crash). */
  unsyncedSurvival: 'none' | 'prefix' | 'all';
  /** Whether nodes' clocks run at different rates (tick periods of 4..6 units instead of 5). */
  clockDrift: boolean;
  /** Raft election timeout in ticks (shorter means more elections per run). */
  electionTicks: number;
  preVote: boolean;
  checkQuorum: boolean;
  maxSizePerMsg: number;
  maxInflightMsgs: number;
  /** Unused since the driver runs here (its compaction options are runtime-options.ts); still drawn so seeds keep their runs. */
  compactEvery: number;
  compactKeep: number;
  /** Per time unit per idle client. */
  opRate: number;
}

/**
 * 'random' (the default) draws one of the profiles below per seed; the others force one:
 * - calm: no faults at all (the baseline must be clean and live);
 * - mixed: every fault at seeded rates;
 * - churn: leaders crash young (also right after election or a commit) and restart fast,
 *   one entry per append: the interleavings of the paper's Figure 8;
 * - partition: long leader-targeted partitions, often without check-quorum, so a deposed
 *   leader lives on beside its successor (stale reads, lost writes).
 */
export type FaultProfile = 'random' | 'calm' | 'mixed' | 'churn' | 'partition';

export const FAULT_PROFILES: readonly FaultProfile[] = ['random', 'calm', 'mixed', 'churn', 'partition'];

export function drawFaultPlan(rng: Prng, forced: FaultProfile = 'random'): FaultPlan {
  const drawn = rng.pick(['calm', 'churn', 'partition', 'mixed', 'mixed', 'mixed'] as const);
  const profile = forced === 'random' ? drawn : forced;
  const compactEvery = rng.int(4, 40);
  const plan = mixedPlan(rng, profile === 'calm', compactEvery);
  if (profile === 'churn') {
    // Leaders die young and come back fast, one entry per append: the interleavings of the
    // paper's Figure 8 (an old-term entry reaching a majority under a later leader).
    plan.leaderCrashRate = rng.pick([0.02, 0.05, 0.1]);
    plan.restartRate = rng.pick([0.02, 0.05]);
    // Runs with most nodes down are cheap: give churn more leader generations per seed.
    plan.chaosUnits = 4000;
    plan.maxSizePerMsg = 1;
    plan.opRate = 0.2;
    plan.crashOnCommitRate = rng.pick([0.1, 0.3, 0.6]);
    plan.electionTicks = rng.pick([3, 5]);
    plan.maxDelay = rng.int(1, 3);
  }
  if (profile === 'partition') {
    plan.partitionRate = rng.pick([0.005, 0.01]);
    plan.healRate = rng.pick([0.002, 0.005]);
    plan.leaderTargeted = 1;
    plan.checkQuorum = rng.chance(0.3);
    plan.crashRate = 0;
    plan.opRate = 0.2;
  }
  return plan;
}

function mixedPlan(rng: Prng, calm: boolean, compactEvery: number): FaultPlan {
  return {
    chaosUnits: 1500,
    dropRate: calm ? 0 : rng.pick([0, 0.01, 0.05, 0.1, 0.2]),
    duplicateRate: calm ? 0 : rng.pick([0, 0.01, 0.05]),
    reorderRate: calm ? 0 : rng.pick([0, 0.02, 0.1]),
    minDelay: 1,
    maxDelay: rng.int(1, 6),
    crashRate: calm ? 0 : rng.pick([0, 0.0005, 0.002, 0.005]),
    leaderCrashRate: calm ? 0 : rng.pick([0, 0, 0.002, 0.01]),
    crashOnCommitRate: 0,
    restartRate: rng.pick([0.005, 0.02, 0.1]),
    partitionRate: calm ? 0 : rng.pick([0, 0.001, 0.004, 0.01, 0.03]),
    healRate: rng.pick([0.005, 0.02]),
    leaderTargeted: 0.5,
    transferRate: rng.pick([0, 0, 0.001, 0.005]),
    unsyncedSurvival: rng.pick(['none', 'prefix', 'all'] as const),
    clockDrift: !calm && rng.chance(0.3),
    electionTicks: 10,
    preVote: rng.chance(0.7),
    checkQuorum: rng.chance(0.7),
    maxSizePerMsg: rng.pick([1, 1, 16, 64, 1 << 20]),
    maxInflightMsgs: rng.pick([1, 2, 4, 64]),
    compactEvery,
    compactKeep: rng.int(0, Math.min(compactEvery, 8)),
    opRate: rng.pick([0.02, 0.05, 0.2]),
  };
}
