// The simulator as a test: failing seeds found during development are replayed, and a run is
// exactly reproducible from its seed.
import { describe, expect, it } from 'vitest';
import regressions from '../../src/raft/sim/regression-seeds.json' with { type: 'json' };
import { runSimulation } from '../../src/raft/sim/simulator.js';
import { explain } from './sim-explain.js';

describe('deterministic simulator: regressions and replay', () => {
  it('replays every regression seed cleanly', async () => {
    for (const entry of regressions.seeds) {
      const { seed, nodes } = entry;
      // Seeds found with configuration changes drawn (`npm run sim -- --membership`) replay with them.
      const r = await runSimulation({ seed, nodes: nodes as 3 | 5, membership: 'membership' in entry && entry.membership ? 'draw' : false });
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
