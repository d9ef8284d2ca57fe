// The in-memory ready index on its own: dispatch order, runs not yet due, replacement, and a
// long random sequence of adds and removes against a plain sorted array (the chunked list splits
// and drops chunks along the way).
import { describe, expect, it } from 'vitest';
import { compareReady, ReadyIndex, type ReadyEntry } from '../../src/fsm/store/ready-index.js';

function entry(runId: string, notBeforeMs: number, priority = 0, taskType = 'demo'): ReadyEntry {
  return { runId, jobId: runId.split('@')[0]!, taskType, priority, notBeforeMs };
}
const ids = (es: readonly ReadyEntry[]) => es.map((e) => e.runId);

describe('ReadyIndex', () => {
  it('orders by priority (high first), then not-before, then run id, across task types', () => {
    const ix = new ReadyIndex();
    ix.add(entry('b@1', 10));
    ix.add(entry('a@1', 10));
    ix.add(entry('c@1', 5, 0, 'email'));
    ix.add(entry('lo@1', 1, -5));
    ix.add(entry('hi@1', 99, 7, 'email'));
    expect(ix.size).toBe(5);
    expect(ids(ix.scan(10))).toEqual(['hi@1', 'c@1', 'a@1', 'b@1', 'lo@1']);
    expect(ids(ix.scan(2))).toEqual(['hi@1', 'c@1']);
    expect(ids(ix.scan(10, ['demo']))).toEqual(['a@1', 'b@1', 'lo@1']);
    expect(ids(ix.scan(10, ['email', 'demo', 'nope']))).toEqual(['hi@1', 'c@1', 'a@1', 'b@1', 'lo@1']);
    expect(ix.scan(0)).toEqual([]);
  });

  it('leaves out runs not yet due, without holding back a lower priority that is due', () => {
    const ix = new ReadyIndex();
    ix.add(entry('hi@2', 200, 5));
    ix.add(entry('hi@1', 100, 5));
    ix.add(entry('lo@1', 50, 1));
    expect(ids(ix.scan(10, undefined, 150))).toEqual(['hi@1', 'lo@1']);
    expect(ids(ix.scan(10, undefined, 49))).toEqual([]);
    expect(ids(ix.scan(10, undefined, 200))).toEqual(['hi@1', 'hi@2', 'lo@1']);
  });

  it('removes by position only, replaces an entry at the same position, and counts exactly', () => {
    const ix = new ReadyIndex();
    ix.add(entry('a@1', 10));
    ix.add({ ...entry('a@1', 10), jobId: 'a' }); // same position: replaced, not duplicated
    expect(ix.size).toBe(1);
    ix.remove(entry('a@1', 11)); // another not-before: not this entry
    ix.remove(entry('a@1', 10, 1));
    ix.remove(entry('a@1', 10, 0, 'email'));
    expect(ids(ix.scan(10))).toEqual(['a@1']);
    ix.remove(entry('a@1', 10));
    ix.remove(entry('a@1', 10)); // twice is harmless
    expect(ix.size).toBe(0);
    expect(ix.scan(10)).toEqual([]);
    ix.add(entry('b@1', 1));
    ix.clear();
    expect(ix.size).toBe(0);
    expect(ix.scan(10)).toEqual([]);
  });

  it('matches a sorted array over 20,000 random adds and removes (herd-like appends and front removals included)', () => {
    const ix = new ReadyIndex();
    const model = new Map<string, ReadyEntry>();
    let seed = 42;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const check = (limit: number, nowMs?: number, types?: string[]) => {
      const want = [...model.values()]
        .filter((e) => (nowMs === undefined || e.notBeforeMs <= nowMs) && (!types || types.includes(e.taskType)))
        .sort(compareReady)
        .slice(0, limit);
      expect(ids(ix.scan(limit, types, nowMs))).toEqual(ids(want));
    };
    for (let i = 0; i < 20_000; i++) {
      const r = rnd(10);
      if (r < 3 && model.size > 0) {
        // Claim-like: remove the first in order, or a random one.
        const all = [...model.values()].sort(compareReady);
        const e = rnd(2) === 0 ? all[0]! : all[rnd(all.length)]!;
        model.delete(e.runId);
        ix.remove(e);
      } else {
        // A herd appends in order at one instant; the rest are scattered.
        const e = r < 7 ? entry(`herd-${String(i).padStart(6, '0')}@1`, 1000) : entry(`j${rnd(500)}@${rnd(50)}`, rnd(2000), rnd(3) - 1, rnd(4) === 0 ? 'email' : 'demo');
        const old = model.get(e.runId);
        if (old) ix.remove(old);
        model.set(e.runId, e);
        ix.add(e);
      }
      if (i % 1000 === 0) {
        check(50);
        check(50, 500, ['demo']);
      }
    }
    expect(ix.size).toBe(model.size);
    check(Number.MAX_SAFE_INTEGER);
    check(100, 1000, ['email']);
  });
});
