import { describe, expect, it } from 'vitest';
import { ALL_FAULT_KINDS, availableKinds, FAULT_FAMILIES, familyOf as familyOfKind, parseFaultFamilies } from '../../chaos/nemesis/fault-kinds.js';
import { faultSchedule, countByKind, type FaultScheduleOptions } from '../../chaos/nemesis/fault-schedule.js';
import { cut, isolate, oneWay, reachability, ring, split } from '../../chaos/nemesis/partition-shapes.js';

const base = (seed: number, over: Partial<FaultScheduleOptions> = {}): FaultScheduleOptions => ({
  seed,
  nodeIds: ['n1', 'n2', 'n3', 'n4', 'n5'],
  durationMs: 600_000,
  kinds: availableKinds(FAULT_FAMILIES, { workers: true, nodes: 5, clock: true, crashpoints: true }),
  electionTimeoutMs: 1_000,
  leaseMs: 3_000,
  ...over,
});

describe('nemesis fault schedule', () => {
  it('replays exactly from its seed and differs across seeds', () => {
    expect(faultSchedule(base(42))).toEqual(faultSchedule(base(42)));
    expect(faultSchedule(base(42))).not.toEqual(faultSchedule(base(43)));
  });

  it('covers every selected kind in a long run, sequentially, within the duration', () => {
    const steps = faultSchedule(base(1));
    expect(Object.keys(countByKind(steps)).sort()).toEqual([...ALL_FAULT_KINDS].sort());
    for (let i = 1; i < steps.length; i++) expect(steps[i]!.atMs).toBeGreaterThan(steps[i - 1]!.atMs + steps[i - 1]!.durationMs);
    const last = steps[steps.length - 1]!;
    expect(last.atMs + last.durationMs).toBeLessThanOrEqual(600_000);
  });

  it('holds pauses longer than an election timeout (nodes) or a lease (workers)', () => {
    for (const s of faultSchedule(base(5))) {
      if (s.kind === 'pause-leader' || s.kind === 'pause-follower') expect(s.durationMs).toBeGreaterThan(1_000);
      if (s.kind === 'pause-worker') expect(s.durationMs).toBeGreaterThan(3_000);
      if (s.kind === 'kill-majority') expect(s.targets.length).toBe(3);
      if (s.kind === 'partition-majority-minority') expect(s.params.minority!.length).toBeLessThanOrEqual(2);
      if (s.kind === 'partition-ring') expect([...s.params.ring!].sort()).toEqual(['n1', 'n2', 'n3', 'n4', 'n5']);
      if (s.kind === 'replace-node') expect(s.targets).toHaveLength(1);
      if (s.kind === 'grow-shrink') expect(s.targets).toEqual([]);
    }
  });

  it('plans time for a membership move\'s procedure after its hold, and draws both replace variants', () => {
    const steps = faultSchedule(base(3, { kinds: ['replace-node', 'grow-shrink'], durationMs: 3_600_000 }));
    for (let i = 1; i < steps.length; i++) {
      const prev = steps[i - 1]!;
      expect(steps[i]!.atMs - (prev.atMs + prev.durationMs), `after #${prev.index} ${prev.kind}`).toBeGreaterThanOrEqual(prev.kind === 'grow-shrink' ? 12_000 : 8_000);
    }
    const replaces = steps.filter((s) => s.kind === 'replace-node');
    expect(new Set(replaces.map((s) => s.params.sameId))).toEqual(new Set([true, false]));
    expect(new Set(steps.filter((s) => s.kind === 'grow-shrink').map((s) => s.params.removeLeader))).toEqual(new Set([true, false]));
  });

  it('adding the membership family leaves the schedule of the other families as it was', () => {
    const five = ['kill', 'pause', 'partition', 'clock', 'crashpoints'] as const;
    const caps = { workers: true, nodes: 3, clock: true, crashpoints: true };
    const kinds = availableKinds([...five], caps);
    expect(kinds.some((k) => familyOfKind(k) === 'membership')).toBe(false);
    expect(availableKinds(FAULT_FAMILIES, caps)).toEqual([...kinds, 'replace-node', 'grow-shrink']);
  });

  it('selects by family, leaves out what the cluster cannot do, and rejects unknown families', () => {
    expect(parseFaultFamilies('all')).toEqual(['kill', 'pause', 'partition', 'clock', 'crashpoints', 'membership']);
    expect(parseFaultFamilies('kill,clock')).toEqual(['kill', 'clock']);
    expect(() => parseFaultFamilies('kill,bogus')).toThrow(/unknown family "bogus"/);
    const kinds = availableKinds(['kill', 'partition', 'crashpoints'], { workers: false, nodes: 3, clock: true, crashpoints: false });
    expect(kinds).toContain('kill-leader');
    expect(kinds).not.toContain('kill-worker');
    expect(kinds).not.toContain('partition-ring');
    expect(kinds.some((k) => k.startsWith('crash-'))).toBe(false);
    expect(faultSchedule(base(1, { kinds: [] }))).toEqual([]);
  });
});

describe('partition shapes', () => {
  const all = ['n1', 'n2', 'n3', 'n4', 'n5'];
  it('isolate and split cut both directions between the sides only', () => {
    const r = reachability(all, isolate('n2', all));
    expect(r.get('n2')).toEqual([]);
    expect(r.get('n1')).toEqual(['n3', 'n4', 'n5']);
    const s = reachability(all, split(['n1', 'n4'], all));
    expect(s.get('n1')).toEqual(['n4']);
    expect(s.get('n3')).toEqual(['n2', 'n5']);
    expect(cut(['n1'], ['n1']).size).toBe(0);
  });

  it('a 5-node ring gives every node a majority (itself + 2 neighbours), no two the same', () => {
    const r = reachability(all, ring(['n1', 'n3', 'n5', 'n2', 'n4']));
    expect(r.get('n1')).toEqual(['n3', 'n4']);
    expect(r.get('n3')).toEqual(['n1', 'n5']);
    const views = all.map((n) => [n, ...r.get(n)!].sort().join(','));
    expect(new Set(views).size).toBe(5);
  });

  it('one-way blocks a single direction', () => {
    const r = reachability(['n1', 'n2', 'n3'], oneWay('n1', 'n2'));
    expect(r.get('n1')).toEqual(['n3']);
    expect(r.get('n2')).toEqual(['n1', 'n3']);
  });
});

describe('nemesis fault schedule: short runs', () => {
  it('deals every selected family within the first steps', () => {
    for (const seed of [1, 2, 3, 11, 99]) {
      const five = availableKinds(['kill', 'pause', 'partition', 'clock', 'crashpoints'], { workers: true, nodes: 3, clock: true, crashpoints: true });
      const steps = faultSchedule(base(seed, { durationMs: 45_000, nodeIds: ['n1', 'n2', 'n3'], kinds: five }));
      expect(new Set(steps.slice(0, 5).map((s) => familyOfKind(s.kind))).size).toBe(5);
      // With membership moves (long steps) fewer fit, each of another family.
      const all = faultSchedule(base(seed, { durationMs: 45_000, nodeIds: ['n1', 'n2', 'n3'] }));
      const first = all.slice(0, 6);
      expect(first.length).toBeGreaterThanOrEqual(3);
      expect(new Set(first.map((s) => familyOfKind(s.kind))).size).toBe(first.length);
    }
  });
});
