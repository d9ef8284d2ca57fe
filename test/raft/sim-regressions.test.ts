// The simulator as a test: failing seeds found during development are replayed, and a run is
// exactly reproducible from its seed.
import { describe, expect, it } from 'vitest';
import regressions from '../../src/raft/sim/regression-seeds.json' with { type: 'json' };
import { runSimulation } from '../../src/raft/sim/simulator.js';
import { explain } from './sim-explain.js';

describe('deterministic simulator: regressions and replay', () => {
  it('replays every regression seed cleanly', async () => {
    for (const { seed, nodes } of regressions.seeds) {
      const r = await runSimulation({ seed, nodes: nodes as 3 | 5 });
      expect(explain(r)).toBe('');
    }
  });

  it('is deterministic: one seed, one run', async () => {
    const a = await runSimulation({ seed: 42, nodes: 5, trace: true });
    const b = await runSimulation({ seed: 42, nodes: 5, trace: true });
    expect(a.trace).toEqual(b.trace);
    expect(a.steps).toBe(b.steps);
    expect(a.ops).toEqual(b.ops);
    expect(a.trace.length).toBeGreaterThan(10);
  });
});
