// The simulated scheduler nodes run the production feature-level raise loop
// (src/server/node/feature-level-raise.ts, wired in sched-sim-node.ts as scheduler-node.ts wires
// it): every node of this build reports the supported level, so through crashes, partitions and
// leader changes the cluster ends at SUPPORTED_FEATURE_LEVEL on every replica, with clean checks.
import { describe, expect, it } from 'vitest';
import { runSchedulerSimulation } from '../../src/server/sim/sched-simulator.js';
import { SUPPORTED_FEATURE_LEVEL } from '../../src/fsm/commands/feature-levels.js';
import { explain } from './sched-sim-explain.js';

describe('scheduler simulator: feature level raise', () => {
  it('every replica ends at the supported level (≥ 2), the checks clean', async () => {
    expect(SUPPORTED_FEATURE_LEVEL).toBeGreaterThanOrEqual(2);
    for (const [seed, nodes] of [
      [7, 3],
      [8, 5],
      [9, 3],
    ] as const) {
      const r = await runSchedulerSimulation({ seed, nodes });
      expect(explain(r), `seed ${seed}`).toBe('');
      expect(r.featureLevels, `seed ${seed}`).toEqual(Array.from({ length: nodes }, () => SUPPORTED_FEATURE_LEVEL));
    }
  }, 120_000);
});
