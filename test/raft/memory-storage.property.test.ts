// MemoryStorage against a naive model (a plain array of terms) under random appends,
// snapshots and compactions.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../../src/raft/core/memory-storage.js';

type Op = { kind: 'append'; at: number; count: number; term: number } | { kind: 'snapshot'; at: number } | { kind: 'compact'; at: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('append' as const), at: fc.double({ min: 0, max: 1, noNaN: true }), count: fc.integer({ min: 1, max: 4 }), term: fc.integer({ min: 0, max: 2 }) }),
  fc.record({ kind: fc.constant('snapshot' as const), at: fc.double({ min: 0, max: 1, noNaN: true }) }),
  fc.record({ kind: fc.constant('compact' as const), at: fc.double({ min: 0, max: 1, noNaN: true }) }),
) as fc.Arbitrary<Op>;

describe('MemoryStorage (property)', () => {
  it('agrees with a plain array of terms on every readable index', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const s = new MemoryStorage(['a']);
        const model: number[] = [0]; // model[i] = term at i; index 0 is the origin
        let compacted = 0;
        let snap = 0;
        let termFloor = 0;
        for (const o of ops) {
          const last = model.length - 1;
          if (o.kind === 'append') {
            // Start anywhere after the snapshot point, up to last+1 (entries at or below a
            // snapshot are applied, hence committed: they never change).
            const start = Math.min(last + 1, snap + 1 + Math.floor(o.at * (last - snap + 1)));
            termFloor = Math.max(termFloor, model[start - 1]!);
            const term = termFloor + o.term;
            const ents = Array.from({ length: o.count }, (_, k) => ({ index: start + k, term, type: 'normal' as const, data: new Uint8Array([k]) }));
            s.append(ents);
            model.length = start;
            ents.forEach((e) => model.push(e.term));
            termFloor = term;
          } else if (o.kind === 'snapshot') {
            const at = Math.min(last, snap + Math.floor(o.at * (last - snap + 1)));
            if (at > snap) {
              s.createSnapshot(at);
              snap = at;
            }
          } else {
            const at = Math.min(snap, compacted + Math.floor(o.at * (snap - compacted + 1)));
            s.compact(at);
            compacted = Math.max(compacted, at);
          }
          expect(s.firstIndex()).toBe(compacted + 1);
          expect(s.lastIndex()).toBe(model.length - 1);
          expect(s.snapshot().index).toBe(snap);
          for (let i = compacted; i < model.length; i++) expect(s.term(i)).toBe(model[i]);
          if (model.length - 1 > compacted) {
            expect(s.entries(compacted + 1, model.length).map((e) => e.term)).toEqual(model.slice(compacted + 1));
          }
        }
      }),
      { numRuns: 200, seed: 7 },
    );
  });
});
