// Scheduler simulator seeds that once failed (src/server/sim/regression-seeds.json) replay clean.
import { describe, expect, it } from 'vitest';
import regressions from '../../src/server/sim/regression-seeds.json' with { type: 'json' };
import { runSchedulerSimulation, type FaultSet } from '../../src/server/sim/sched-simulator.js';
import { explain } from './sched-sim-explain.js';

describe('scheduler simulator: regression seeds', () => {
  it('replays every regression seed cleanly', async () => {
    for (const entry of regressions.seeds) {
      const chaosUnits = 'chaosUnits' in entry ? entry.chaosUnits : undefined;
      const faults = 'faults' in entry ? (entry.faults as FaultSet) : undefined;
      const r = await runSchedulerSimulation({ seed: entry.seed, nodes: entry.nodes as 3 | 5, chaosUnits, faults });
      expect(explain(r)).toBe('');
      expect(r.slotsChecked).toBeGreaterThan(0);
    }
  }, 120_000);
});
