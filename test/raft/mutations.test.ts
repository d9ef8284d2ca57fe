// Negative controls: each deliberate bug, in the core or in the driver, must be caught by the
// simulator's checkers within a bounded number of seeds. Seeds are tried in order and the search
// stops at the first catch, so a mutation that is caught early costs little.
import { describe, expect, it } from 'vitest';
import { ALL_MUTATIONS, type CoreMutation } from '../../src/raft/core/mutations.js';
import { ALL_DRIVER_MUTATIONS, type DriverMutation } from '../../src/raft/driver/mutations.js';
import type { FaultProfile } from '../../src/raft/sim/fault-plan.js';
import type { RuntimeOptions } from '../../src/raft/sim/runtime-options.js';
import type { MembershipPlan } from '../../src/raft/sim/sim-membership.js';
import { runSimulation } from '../../src/raft/sim/simulator.js';

interface Control {
  mutation: CoreMutation | DriverMutation;
  nodes: 3 | 5;
  profile: FaultProfile;
  /** Runtime options the bug needs (effects for an effects bug, I/O errors for an I/O bug). */
  runtime?: Partial<RuntimeOptions>;
  /** Configuration changes the bug needs (frequent, in bursts, with lost disks). */
  membership?: Partial<MembershipPlan>;
  /** The checkers expected to bite (any of them). */
  caughtBy: string[];
  maxSeeds: number;
}

const lostOrChanged = ['committed-lost', 'leader-completeness', 'committed-changed', 'state-machine-safety', 'state-divergence', 'core-threw', 'linearizability'];

const churn: Partial<MembershipPlan> = { changeRate: 0.03, burstRate: 0.5, wipeRate: 0.002 };

const controls: Control[] = [
  { mutation: 'commit-previous-term', nodes: 3, profile: 'churn', caughtBy: lostOrChanged, maxSeeds: 200 },
  { mutation: 'reply-before-sync', nodes: 5, profile: 'random', caughtBy: ['term-regressed', 'vote-regressed', 'election-safety'], maxSeeds: 100 },
  { mutation: 'ack-unsynced-entries', nodes: 3, profile: 'random', caughtBy: [...lostOrChanged, 'applied-not-durable'], maxSeeds: 200 },
  { mutation: 'double-vote', nodes: 5, profile: 'random', caughtBy: ['election-safety'], maxSeeds: 100 },
  { mutation: 'skip-log-matching', nodes: 3, profile: 'random', caughtBy: ['log-matching', 'corrupt-log', ...lostOrChanged], maxSeeds: 200 },
  { mutation: 'skip-up-to-date-check', nodes: 5, profile: 'random', caughtBy: lostOrChanged, maxSeeds: 100 },
  { mutation: 'read-index-no-confirm', nodes: 3, profile: 'partition', caughtBy: ['linearizability'], maxSeeds: 100 },
  { mutation: 'apply-before-durable', nodes: 3, profile: 'churn', runtime: { ioMaxDelay: 4 }, caughtBy: ['applied-not-durable'], maxSeeds: 200 },
  { mutation: 'send-vote-before-persist', nodes: 5, profile: 'random', runtime: { ioMaxDelay: 4 }, caughtBy: ['term-regressed', 'vote-regressed', 'election-safety', ...lostOrChanged], maxSeeds: 100 },
  { mutation: 'apply-effects-at-wrong-index', nodes: 3, profile: 'random', runtime: { replicateEffects: true, followerApplyWindowMs: 5 }, caughtBy: ['applied-index-mismatch', 'state-divergence'], maxSeeds: 100 },
  { mutation: 'skip-conflict-truncation', nodes: 3, profile: 'churn', caughtBy: ['corrupt-log', 'log-matching', 'applied-not-durable', ...lostOrChanged], maxSeeds: 200 },
  { mutation: 'count-learner-vote', nodes: 3, profile: 'random', membership: churn, caughtBy: ['quorum-without-voters', 'election-safety', ...lostOrChanged], maxSeeds: 30 },
  { mutation: 'two-pending-changes', nodes: 3, profile: 'random', membership: churn, caughtBy: ['disjoint-quorums', 'election-safety', ...lostOrChanged], maxSeeds: 30 },
  { mutation: 'apply-conf-at-commit', nodes: 3, profile: 'random', membership: churn, caughtBy: ['conf-not-latest'], maxSeeds: 30 },
  { mutation: 'wiped-rejoins-as-voter', nodes: 3, profile: 'random', membership: churn, caughtBy: ['term-regressed', 'vote-regressed', 'wiped-node-voted', 'election-safety'], maxSeeds: 30 },
  { mutation: 'io-error-as-rejection', nodes: 3, profile: 'random', runtime: { ioErrorRate: 0.01 }, caughtBy: ['applied-index-mismatch', 'state-divergence'], maxSeeds: 100 },
];

const isCore = (m: string): m is CoreMutation => (ALL_MUTATIONS as readonly string[]).includes(m);

describe('negative controls: the checkers catch deliberate core and driver bugs', () => {
  it('covers every mutation', () => {
    expect(controls.map((c) => c.mutation).sort()).toEqual([...ALL_MUTATIONS, ...ALL_DRIVER_MUTATIONS].sort());
  });

  for (const c of controls) {
    it(`${c.mutation} is caught within ${c.maxSeeds} seeds (${c.nodes} nodes, ${c.profile} faults)`, async () => {
      let caught: { seed: number; kind: string } | undefined;
      const mutation = c.mutation;
      for (let seed = 1; seed <= c.maxSeeds && !caught; seed++) {
        const r = await runSimulation({
          seed,
          nodes: c.nodes,
          profile: c.profile,
          runtime: c.runtime,
          membership: c.membership,
          mutations: isCore(mutation) ? new Set([mutation]) : undefined,
          driverMutations: isCore(mutation) ? undefined : new Set([mutation]),
        });
        if (r.violations.length > 0) caught = { seed, kind: r.violations[0]!.kind };
      }
      expect(caught, `${c.mutation} survived ${c.maxSeeds} seeds`).toBeDefined();
      expect(c.caughtBy).toContain(caught!.kind);
    }, 120_000);
  }
});
