// Negative controls: each deliberate core bug must be caught by the simulator's checkers
// within a bounded number of seeds. Seeds are tried in order and the search stops at the first
// catch, so a mutation that is caught early costs little.
import { describe, expect, it } from 'vitest';
import type { CoreMutation } from '../../src/raft/core/mutations.js';
import { ALL_MUTATIONS } from '../../src/raft/core/mutations.js';
import type { FaultProfile } from '../../src/raft/sim/fault-plan.js';
import { runSimulation } from '../../src/raft/sim/simulator.js';

interface Control {
  mutation: CoreMutation;
  nodes: 3 | 5;
  profile: FaultProfile;
  /** The checkers expected to bite (any of them). */
  caughtBy: string[];
  maxSeeds: number;
}

const controls: Control[] = [
  { mutation: 'commit-previous-term', nodes: 3, profile: 'churn', caughtBy: ['leader-completeness', 'committed-changed', 'state-machine-safety', 'core-threw', 'linearizability'], maxSeeds: 200 },
  { mutation: 'reply-before-sync', nodes: 5, profile: 'random', caughtBy: ['term-regressed', 'vote-regressed', 'election-safety'], maxSeeds: 100 },
  { mutation: 'ack-unsynced-entries', nodes: 3, profile: 'random', caughtBy: ['committed-lost', 'leader-completeness', 'committed-changed', 'state-machine-safety', 'core-threw', 'linearizability'], maxSeeds: 200 },
  { mutation: 'double-vote', nodes: 5, profile: 'random', caughtBy: ['election-safety'], maxSeeds: 100 },
  { mutation: 'skip-log-matching', nodes: 3, profile: 'random', caughtBy: ['log-matching', 'core-threw', 'committed-changed', 'state-machine-safety'], maxSeeds: 200 },
  { mutation: 'skip-up-to-date-check', nodes: 5, profile: 'random', caughtBy: ['leader-completeness', 'committed-changed', 'state-machine-safety', 'core-threw'], maxSeeds: 100 },
  { mutation: 'read-index-no-confirm', nodes: 3, profile: 'partition', caughtBy: ['linearizability'], maxSeeds: 100 },
];

describe('negative controls: the checkers catch deliberate core bugs', () => {
  it('covers every mutation', () => {
    expect(controls.map((c) => c.mutation).sort()).toEqual([...ALL_MUTATIONS].sort());
  });

  for (const c of controls) {
    it(`${c.mutation} is caught within ${c.maxSeeds} seeds (${c.nodes} nodes, ${c.profile} faults)`, () => {
      let caught: { seed: number; kind: string } | undefined;
      for (let seed = 1; seed <= c.maxSeeds && !caught; seed++) {
        const r = runSimulation({ seed, nodes: c.nodes, profile: c.profile, mutations: new Set([c.mutation]) });
        if (r.violations.length > 0) caught = { seed, kind: r.violations[0]!.kind };
      }
      expect(caught, `${c.mutation} survived ${c.maxSeeds} seeds`).toBeDefined();
      expect(c.caughtBy).toContain(caught!.kind);
    });
  }
});
