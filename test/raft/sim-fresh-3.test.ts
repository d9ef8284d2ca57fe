// Fresh simulator seeds on 3 nodes running the real RaftDriver: the safety checkers as the run
// goes, liveness after healing, linearizability of the client history at the end. Every runtime
// option is drawn per seed; the test checks the draw covered each of them.
import { describe, expect, it } from 'vitest';
import { runSimulation } from '../../src/raft/sim/simulator.js';
import { explain } from './sim-explain.js';

describe('deterministic simulator: 3 nodes', () => {
  it('runs 200 fresh seeds without a violation, with faults, crashes and I/O errors injected and clients served', async () => {
    const start = 100_000 + 3 * 10_000;
    let faults = 0;
    let ok = 0;
    let crashes = 0;
    let ioErrors = 0;
    let membershipChanges = 0;
    const drawn = { effects: 0, writeBehind: 0, applyWindow: 0, byBytes: 0 };
    for (let seed = start; seed < start + 200; seed++) {
      const r = await runSimulation({ seed, nodes: 3, membership: 'draw' });
      crashes += r.crashes;
      ioErrors += r.ioErrors;
      membershipChanges += r.membership.changes;
      if (r.runtime.replicateEffects) drawn.effects++;
      if (r.runtime.writeBehind) drawn.writeBehind++;
      if (r.runtime.followerApplyWindowMs > 0) drawn.applyWindow++;
      if (r.runtime.snapshotBy === 'bytes') drawn.byBytes++;
      expect(explain(r)).toBe('');
      faults += r.faults;
      ok += r.ops.ok;
    }
    expect(faults).toBeGreaterThan(1000);
    expect(ok).toBeGreaterThan(1000);
    expect(crashes).toBeGreaterThan(100);
    expect(ioErrors).toBeGreaterThan(20);
    // Configuration changes are drawn in a share of the seeds (sim-membership.ts).
    expect(membershipChanges).toBeGreaterThan(100);
    for (const [option, runs] of Object.entries(drawn)) expect(runs, option).toBeGreaterThan(40);
  }, 120_000);
});
