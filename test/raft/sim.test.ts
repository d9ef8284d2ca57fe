// The simulator as a test: regression seeds, fresh seeds for 3 and 5 nodes.
import { describe, expect, it } from 'vitest';
import regressions from '../../src/raft/sim/regression-seeds.json' with { type: 'json' };
import { runSimulation, type SimResult } from '../../src/raft/sim/simulator.js';

function explain(r: SimResult): string {
  return r.violations.map((v) => `seed ${r.seed}/${r.nodes}: ${v.kind}: ${v.detail}`).join('\n');
}

describe('deterministic simulator', () => {
  it('replays every regression seed cleanly', () => {
    for (const { seed, nodes } of regressions.seeds) {
      const r = runSimulation({ seed, nodes: nodes as 3 | 5 });
      expect(explain(r)).toBe('');
    }
  });

  it('is deterministic: one seed, one run', () => {
    const a = runSimulation({ seed: 42, nodes: 5, trace: true });
    const b = runSimulation({ seed: 42, nodes: 5, trace: true });
    expect(a.trace).toEqual(b.trace);
    expect(a.steps).toBe(b.steps);
    expect(a.trace.length).toBeGreaterThan(10);
  });

  for (const nodes of [3, 5] as const) {
    it(`runs fresh seeds on ${nodes} nodes without a violation, with faults injected and clients served`, () => {
      const start = 100_000 + nodes * 10_000;
      let faults = 0;
      let ok = 0;
      for (let seed = start; seed < start + 200; seed++) {
        const r = runSimulation({ seed, nodes });
        expect(explain(r)).toBe('');
        faults += r.faults;
        ok += r.ops.ok;
      }
      expect(faults).toBeGreaterThan(1000);
      expect(ok).toBeGreaterThan(1000);
    });
  }
});
