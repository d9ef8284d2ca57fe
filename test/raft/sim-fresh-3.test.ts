// Fresh simulator seeds on 3 nodes: every safety checker after every step, liveness after
// healing, linearizability of the client history at the end.
import { describe, expect, it } from 'vitest';
import { runSimulation } from '../../src/raft/sim/simulator.js';
import { explain } from './sim-explain.js';

describe('deterministic simulator: 3 nodes', () => {
  it('runs 200 fresh seeds without a violation, with faults injected and clients served', () => {
    const start = 100_000 + 3 * 10_000;
    let faults = 0;
    let ok = 0;
    for (let seed = start; seed < start + 200; seed++) {
      const r = runSimulation({ seed, nodes: 3 });
      expect(explain(r)).toBe('');
      faults += r.faults;
      ok += r.ops.ok;
    }
    expect(faults).toBeGreaterThan(1000);
    expect(ok).toBeGreaterThan(1000);
  });
});
