// The leader's feature-level raise rule (rolling upgrades): every voter must report the level;
// learners never block it but are named when they are below.
import { describe, expect, it } from 'vitest';
import { featureLevelToRaise, ReportedFeatureLevels } from '../../src/server/node/feature-level-raise.js';

function decide(clusterLevel: number, reports: Record<string, number>, opts: { selfLevel?: number; learners?: string[]; voters?: string[] } = {}) {
  const r = new ReportedFeatureLevels();
  for (const [id, l] of Object.entries(reports)) r.report(id, l);
  return featureLevelToRaise({
    clusterLevel,
    selfId: 'n1',
    selfLevel: opts.selfLevel ?? 2,
    voters: opts.voters ?? ['n1', 'n2', 'n3'],
    learners: opts.learners ?? [],
    reported: (id) => r.get(id),
  });
}

describe('featureLevelToRaise', () => {
  it('raises to the level every voter reports, once', () => {
    expect(decide(1, { n2: 2, n3: 2 })).toMatchObject({ raiseTo: 2, votersSupport: 2, blockedBy: [] });
    expect(decide(2, { n2: 2, n3: 2 })).toMatchObject({ raiseTo: undefined, blockedBy: ['n1', 'n2', 'n3'] });
  });

  it('a voter of an older build (reports 1, or 0 from before feature levels) or not heard from blocks it', () => {
    expect(decide(1, { n2: 2, n3: 1 })).toMatchObject({ raiseTo: undefined, votersSupport: 1, blockedBy: ['n3'] });
    expect(decide(1, { n2: 2, n3: 0 })).toMatchObject({ raiseTo: undefined, blockedBy: ['n3'] });
    expect(decide(1, { n2: 2 })).toMatchObject({ raiseTo: undefined, blockedBy: ['n3'] });
  });

  it('never above the leader’s own build, never lower than the cluster level', () => {
    expect(decide(1, { n2: 3, n3: 3 }, { selfLevel: 1 })).toMatchObject({ raiseTo: undefined, blockedBy: ['n1'] });
    expect(decide(1, { n2: 3, n3: 3 }, { selfLevel: 2 })).toMatchObject({ raiseTo: 2 });
    expect(decide(3, { n2: 2, n3: 2 })).toMatchObject({ raiseTo: undefined });
  });

  it('learners do not block the raise but are named when below it', () => {
    expect(decide(1, { n2: 2, n3: 2, n4: 1 }, { learners: ['n4'] })).toMatchObject({ raiseTo: 2, learnersBelow: ['n4'] });
    expect(decide(1, { n2: 2, n3: 2 }, { learners: ['n4'] })).toMatchObject({ raiseTo: 2, learnersBelow: ['n4'] });
    expect(decide(1, { n2: 2, n3: 2, n4: 2 }, { learners: ['n4'] })).toMatchObject({ raiseTo: 2, learnersBelow: [] });
  });

  it('the latest report counts (a node restarted on an older build)', () => {
    const r = new ReportedFeatureLevels();
    r.report('n2', 2);
    r.report('n2', 0);
    expect(r.get('n2')).toBe(0);
  });
});
