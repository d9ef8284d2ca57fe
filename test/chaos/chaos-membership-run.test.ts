// The short membership run of `npm test`: 3 `herald server` processes with the usual workload
// (workers, ledger, control-plane clients), one replace-node (the node's disk dies; a new member
// joins with `herald server --join`, is added, promoted, and the old member removed, all through
// the real CLI) and one grow-shrink (3 → 5 → 3, the leader among the removed). The checkers must
// be clean: zero lost and duplicate effects, linearizable, and the final membership — three
// members, the replaced and removed nodes out — converged.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runChaos } from '../../chaos/run-chaos.js';
import { liveManaged } from '../../chaos/orchestrator/managed-process.js';
import { faultSchedule } from '../../chaos/nemesis/fault-schedule.js';
import { CLEAN_CHECKERS } from './fixtures/clean-checkers.js';

const SEED = 1;
const DURATION_MS = 40_000;

describe('chaos: membership moves under load (3 nodes)', () => {
  it('replaces a wiped node and grows to 5 and back: nothing lost or doubled, linearizable, converged', { timeout: 240_000 }, async () => {
    expect(existsSync(join(import.meta.dirname, '..', '..', 'dist', 'src', 'cli', 'main.js'))).toBe(true);
    // The seed's plan: a replace with a new member id, then a grow-shrink that removes the leader.
    const plan = faultSchedule({ seed: SEED, nodeIds: ['n1', 'n2', 'n3'], durationMs: DURATION_MS, kinds: ['replace-node', 'grow-shrink'], electionTimeoutMs: 1_000, leaseMs: 3_000 });
    expect(plan.map((s) => [s.kind, s.params.sameId ?? s.params.removeLeader])).toEqual([
      ['replace-node', false],
      ['grow-shrink', true],
    ]);
    const lines: string[] = [];
    const r = await runChaos({ nodes: 3, durationMs: DURATION_MS, families: ['membership'], seed: SEED, keep: 'never', log: (l) => lines.push(l) });
    const s = r.summary;
    process.stderr.write(`chaos membership run: ${JSON.stringify({ ...s, finalMembers: r.report.finalMembers, moves: r.report.faultLog.map((f) => `${f.kind}: ${f.detail}`), wallTimeS: r.report.wallTimeS })}\n`);
    const detail = `${r.human}\n${lines.join('\n')}\n${JSON.stringify(r.report.faultLog, null, 1)}`;
    expect(s, detail).toMatchObject({
      ...CLEAN_CHECKERS,
      ok: true,
    });
    const log = r.report.faultLog;
    expect(log.map((f) => [f.kind, f.applied]), detail).toEqual([
      ['replace-node', true],
      ['grow-shrink', true],
    ]);
    // The replaced node and the two removed ones are gone; three members remain and converged.
    const [replace, grow] = log;
    const [old, replacement] = replace!.targets;
    expect(replacement, detail).toBe('n4');
    expect(grow!.targets, detail).toEqual(['n5', 'n6']);
    expect(grow!.detail, detail).toMatch(/the leader/);
    expect(r.report.finalMembers, detail).toHaveLength(3);
    expect(r.report.finalMembers, detail).not.toContain(old);
    expect(r.report.checks.convergence.nodes.map((n) => n.id).sort(), detail).toEqual([...r.report.finalMembers].sort());
    expect(s.slotsChecked, detail).toBeGreaterThan(100);
    expect(liveManaged()).toEqual([]);
  });
});
