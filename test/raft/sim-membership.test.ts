// Fresh simulator seeds with configuration changes forced on: learners added (spares and wiped
// machines under new incarnations), promoted, members removed (the leader included) and retired,
// disks lost, all under the seed's partitions, crashes and snapshot installs — and no checker
// (election safety, quorums across configurations, wiped nodes, linearizability, liveness) bites.
import { describe, expect, it } from 'vitest';
import { runSimulation } from '../../src/raft/sim/simulator.js';

describe('simulator with configuration changes', () => {
  for (const [nodes, seeds] of [[3, 12], [5, 6]] as const) {
    it(`runs ${seeds} fresh ${nodes}-node seeds cleanly while membership changes`, async () => {
      let changes = 0;
      let wipes = 0;
      for (let seed = 5001; seed < 5001 + seeds; seed++) {
        const r = await runSimulation({ seed, nodes, membership: { changeRate: 0.03, wipeRate: 0.002 } });
        expect(r.violations, `seed ${seed}`).toEqual([]);
        changes += r.membership.changes;
        wipes += r.membership.wipes;
      }
      expect(changes).toBeGreaterThan(seeds);
      expect(wipes).toBeGreaterThan(0);
    }, 60_000);
  }
});
