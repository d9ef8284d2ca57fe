// Every scheduler mutation (a deliberate bug, sched-mutations.ts) is caught by the simulator's
// checks within a bounded number of seeds (the bounds hold for these fixed seeds: runs are
// deterministic), and the simulator is deterministic.
import { describe, expect, it } from 'vitest';
import { runSchedulerSimulation } from '../../src/server/sim/sched-simulator.js';
import { SCHED_MUTATIONS, type SchedMutation } from '../../src/server/sim/sched-mutations.js';
import { FRESH_CHAOS_UNITS } from './sched-sim-explain.js';

/**
 * Seeds tried (each with 3 and then 5 nodes) before a mutation counts as missed. (The leaders'
 * feature-level raise, a setFeatureLevel entry early in every run, moved cas-from-stale-replica's
 * first catching seed from ≤ 10 to 14.)
 */
const BOUND: Record<SchedMutation, number> = {
  'skip-slot-check': 5,
  'accept-stale-tokens': 15,
  'fire-by-local-wall-clock': 6,
  'forget-missed-on-pause': 15,
  'adopt-without-token-check': 34,
  'drop-claim-lease-on-failover': 3,
  'cas-from-stale-replica': 16,
};

describe('scheduler simulator: mutations are caught', () => {
  for (const m of SCHED_MUTATIONS) {
    it(`catches ${m} within ${BOUND[m]} seeds`, async () => {
      let caught = '';
      for (let s = 1; s <= BOUND[m] && !caught; s++) {
        for (const nodes of [3, 5] as const) {
          const r = await runSchedulerSimulation({ seed: s, nodes, chaosUnits: FRESH_CHAOS_UNITS, mutations: new Set([m]) });
          if (r.violations.length > 0) {
            caught = `${s}/${nodes}: ${r.violations[0]!.kind}`;
            break;
          }
        }
      }
      expect(caught, `${m} was not caught`).not.toBe('');
    }, 180_000);
  }

  it('is deterministic: one seed, one run', async () => {
    const a = await runSchedulerSimulation({ seed: 7, nodes: 3, chaosUnits: FRESH_CHAOS_UNITS, trace: true });
    const b = await runSchedulerSimulation({ seed: 7, nodes: 3, chaosUnits: FRESH_CHAOS_UNITS, trace: true });
    expect(a.trace).toEqual(b.trace);
    expect(a.steps).toBe(b.steps);
    expect(a.slotsChecked).toBe(b.slotsChecked);
    expect(a.slotsChecked).toBeGreaterThan(0);
  });
});
