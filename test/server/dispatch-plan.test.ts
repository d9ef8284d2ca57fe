import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planDispatch, type DispatchCandidate } from '../../src/server/leader/dispatch/dispatch-plan.js';

const run = (runId: string, taskType = 'email', priority = 0, notBeforeMs = 0): DispatchCandidate => ({ runId, taskType, priority, notBeforeMs });

describe('planDispatch', () => {
  it('serves higher priority first, then the oldest not-before, and holds runs not yet due', () => {
    const plan = planDispatch(
      [run('late', 'email', 0, 50), run('old', 'email', 0, 10), run('urgent', 'email', 5, 40), run('future', 'email', 9, 1000)],
      [{ workerId: 'w1', taskTypes: new Set(['email']), credits: 10 }],
      { nowMs: 100, limit: 100 },
    );
    expect(plan.map((a) => a.runId)).toEqual(['urgent', 'old', 'late']);
  });

  it('never assigns more than a worker has credits for, nor a task type it does not serve', () => {
    const plan = planDispatch(
      [run('a1', 'a'), run('a2', 'a'), run('a3', 'a'), run('b1', 'b')],
      [
        { workerId: 'wa', taskTypes: new Set(['a']), credits: 2 },
        { workerId: 'wb', taskTypes: new Set(['b']), credits: 5 },
      ],
      { nowMs: 0, limit: 100 },
    );
    expect(plan.map(({ runId, workerId }) => ({ runId, workerId }))).toEqual([
      { runId: 'a1', workerId: 'wa' },
      { runId: 'a2', workerId: 'wa' },
      { runId: 'b1', workerId: 'wb' },
    ]);
  });

  it('does not let a flood of one task type starve another with its own workers', () => {
    const flood = Array.from({ length: 50 }, (_, i) => run(`a${String(i).padStart(2, '0')}`, 'a', 0, i));
    const plan = planDispatch([...flood, run('b-late', 'b', 0, 49)], [
      { workerId: 'wa', taskTypes: new Set(['a']), credits: 3 },
      { workerId: 'wb', taskTypes: new Set(['b']), credits: 1 },
    ], { nowMs: 100, limit: 100 });
    expect(plan.filter((a) => a.workerId === 'wb').map((a) => a.runId)).toEqual(['b-late']);
    expect(plan).toHaveLength(4);
  });

  it('spreads work across equally capable workers and respects the admission limit', () => {
    const runs = Array.from({ length: 9 }, (_, i) => run(`r${i}`));
    const workers = ['w1', 'w2', 'w3'].map((workerId) => ({ workerId, taskTypes: new Set(['email']), credits: 10 }));
    const plan = planDispatch(runs, workers, { nowMs: 0, limit: 6 });
    expect(plan).toHaveLength(6);
    const perWorker = new Map<string, number>();
    for (const a of plan) perWorker.set(a.workerId, (perWorker.get(a.workerId) ?? 0) + 1);
    expect([...perWorker.values()]).toEqual([2, 2, 2]);
  });

  it('assigns each run at most once and within every bound (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ t: fc.constantFrom('a', 'b', 'c'), p: fc.integer({ min: -2, max: 2 }), nb: fc.integer({ min: 0, max: 20 }) }), { maxLength: 60 }),
        fc.array(fc.record({ types: fc.subarray(['a', 'b', 'c'], { minLength: 1 }), credits: fc.integer({ min: 0, max: 5 }) }), { maxLength: 5 }),
        fc.integer({ min: 0, max: 30 }),
        (rs, ws, limit) => {
          const candidates = rs.map((r, i) => run(`r${i}`, r.t, r.p, r.nb));
          const workers = ws.map((w, i) => ({ workerId: `w${i}`, taskTypes: new Set(w.types), credits: w.credits }));
          const plan = planDispatch(candidates, workers, { nowMs: 10, limit });
          expect(new Set(plan.map((a) => a.runId)).size).toBe(plan.length);
          expect(plan.length).toBeLessThanOrEqual(limit);
          for (const w of workers) {
            const mine = plan.filter((a) => a.workerId === w.workerId);
            expect(mine.length).toBeLessThanOrEqual(w.credits);
            for (const a of mine) {
              const c = candidates.find((x) => x.runId === a.runId)!;
              expect(w.taskTypes.has(c.taskType)).toBe(true);
              expect(c.notBeforeMs).toBeLessThanOrEqual(10);
            }
          }
          // Work-conserving: an unassigned due run has no eligible worker with credit left.
          const assigned = new Set(plan.map((a) => a.runId));
          if (plan.length < limit) {
            for (const c of candidates) {
              if (assigned.has(c.runId) || c.notBeforeMs > 10) continue;
              for (const w of workers.filter((x) => x.taskTypes.has(c.taskType))) {
                expect(plan.filter((a) => a.workerId === w.workerId).length).toBe(w.credits);
              }
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
