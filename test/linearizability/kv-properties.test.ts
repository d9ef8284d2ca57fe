import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkOperations, describeResult } from '../../src/raft/linearizability/checker.js';
import { kvModel, type KvOperation } from '../../src/raft/linearizability/kv-model.js';
import { createPrng } from '../../src/raft/sim/prng.js';
import { sequentialHistory } from './history-generator.js';

const params = fc.record({
  seed: fc.nat(),
  clients: fc.integer({ min: 1, max: 6 }),
  ops: fc.integer({ min: 1, max: 60 }),
  keys: fc.integer({ min: 1, max: 4 }),
  unknownRate: fc.constantFrom(0, 0.1, 0.3),
  maxDuration: fc.integer({ min: 1, max: 30 }),
});

// Illegal histories need exhaustive search (every ordering before the bad read), so the mutation
// property uses smaller, less timeout-heavy histories: measured worst case ~50k steps over 5,000
// samples, far inside the default budget. Linearizable ones stay near one step per op.
const mutationParams = fc.record({
  seed: fc.nat(),
  clients: fc.integer({ min: 1, max: 6 }),
  ops: fc.integer({ min: 1, max: 40 }),
  keys: fc.integer({ min: 1, max: 4 }),
  unknownRate: fc.constantFrom(0, 0.1),
  maxDuration: fc.integer({ min: 1, max: 20 }),
});

describe('checker properties on generated KV histories', () => {
  it('every history of a sequential execution is linearizable, unknown outcomes included', () => {
    fc.assert(
      fc.property(params, (p) => {
        const h = sequentialHistory(createPrng(p.seed), p);
        const r = checkOperations(kvModel, h);
        if (r.result !== 'ok') throw new Error(describeResult(kvModel, r));
      }),
      { numRuns: 100 },
    );
  });

  it('corrupting one read to a value nobody wrote is always detected', () => {
    fc.assert(
      fc.property(mutationParams, fc.nat(), (p, pickSeed) => {
        const h = sequentialHistory(createPrng(p.seed), p);
        const reads = h.filter((o) => o.input.kind === 'get' && o.return !== Infinity);
        fc.pre(reads.length > 0);
        const victim = reads[pickSeed % reads.length]!;
        const mutated: KvOperation[] = h.map((o) => (o === victim ? { ...o, output: { kind: 'get', value: '!corrupt!' } } : o));
        const r = checkOperations(kvModel, mutated);
        expect(r.result).toBe('illegal');
        // The explanation names a known-outcome op that could not be placed (usually the victim;
        // with ties between equally deep prefixes it may be another op the victim's absence starved).
        if (r.result === 'illegal') expect(r.explanation.stuck?.return).toBeLessThan(Infinity);
      }),
      { numRuns: 100 },
    );
  });

  it('dropping an acknowledged append from what later reads see is detected', () => {
    // A single client appending then reading: the read must contain every earlier append.
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 20 }), fc.nat(), (n, which) => {
        const h: KvOperation[] = [];
        let value = '';
        for (let i = 0; i < n; i++) {
          h.push({ clientId: 1, call: 2 * i, return: 2 * i + 1, input: { kind: 'append', key: 'k', value: `${i};` }, output: { kind: 'ack' } });
          value += `${i};`;
        }
        const lostPiece = `${which % n};`;
        h.push({ clientId: 2, call: 2 * n, return: 2 * n + 1, input: { kind: 'get', key: 'k' }, output: { kind: 'get', value: value.replace(lostPiece, '') } });
        expect(checkOperations(kvModel, h).result).toBe('illegal');
      }),
      { numRuns: 50 },
    );
  });

  it('a 5,000-op history over 50 keys from 10 concurrent clients checks as linearizable', () => {
    const h = sequentialHistory(createPrng(2026), { clients: 10, ops: 5000, keys: 50, unknownRate: 0.05 });
    const r = checkOperations(kvModel, h);
    expect(r).toMatchObject({ result: 'ok', partitions: 50 });
  });
});
