import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkOperations } from '../../src/raft/linearizability/checker.js';
import { documentModel, type DocInput, type DocOutput } from '../../src/raft/linearizability/document-model.js';
import { kvModel, type KvInput, type KvOutput } from '../../src/raft/linearizability/kv-model.js';
import type { Operation } from '../../src/raft/linearizability/model.js';
import { bruteForceLinearizable } from './brute-force-oracle.js';

// Tiny value domains and coarse times on purpose: equal states (memo hits), touching intervals
// and collisions are where a search-and-prune checker goes wrong.
const value = fc.constantFrom('a', 'b');
const interval = fc.tuple(fc.integer({ min: 0, max: 8 }), fc.integer({ min: 0, max: 4 }), fc.boolean());

const kvOp: fc.Arbitrary<Operation<KvInput, KvOutput>> = fc
  .tuple(
    interval,
    fc.constantFrom('x', 'y'),
    fc.oneof(
      fc.record({ kind: fc.constant('get' as const), read: fc.option(value, { nil: null }) }),
      fc.record({ kind: fc.constant('put' as const), value }),
      fc.record({ kind: fc.constant('delete' as const) }),
      fc.record({ kind: fc.constant('append' as const), value }),
      fc.record({ kind: fc.constant('cas' as const), expected: fc.option(value, { nil: null }), value: fc.option(value, { nil: null }), ok: fc.boolean() }),
    ),
  )
  .map(([[call, len, timedOut], key, o]) => {
    let input: KvInput;
    let output: KvOutput;
    switch (o.kind) {
      case 'get':
        input = { kind: 'get', key };
        output = { kind: 'get', value: o.read };
        break;
      case 'put':
      case 'append':
        input = { kind: o.kind, key, value: o.value };
        output = { kind: 'ack' };
        break;
      case 'delete':
        input = { kind: 'delete', key };
        output = { kind: 'ack' };
        break;
      case 'cas':
        input = { kind: 'cas', key, expected: o.expected, value: o.value };
        output = { kind: 'cas', ok: o.ok };
        break;
    }
    return timedOut && input.kind !== 'get' ? { input, call, return: Infinity } : { input, call, return: call + len, output };
  });

type Doc = string;
const docOp: fc.Arbitrary<Operation<DocInput<Doc>, DocOutput<Doc>>> = fc
  .tuple(
    interval,
    fc.constantFrom<DocInput<Doc>>(
      { kind: 'create', id: 'j', doc: 'a' },
      { kind: 'create', id: 'j', doc: 'b', idempotencyKey: 'k' },
      { kind: 'get', id: 'j' },
      { kind: 'update', id: 'j', doc: 'b' },
      { kind: 'update', id: 'j', doc: 'a', expectedVersion: 1 },
      { kind: 'update', id: 'j', doc: 'b', expectedVersion: 2 },
      { kind: 'delete', id: 'j' },
      { kind: 'delete', id: 'j', expectedVersion: 2 },
    ),
    fc.constantFrom<DocOutput<Doc>>(
      { status: 'ok' },
      { status: 'ok', version: 1 },
      { status: 'ok', version: 2, doc: 'b' },
      { status: 'ok', version: 1, doc: 'a' },
      { status: 'ok', version: 3 },
      { status: 'not_found' },
      { status: 'already_exists' },
      { status: 'failed_precondition' },
    ),
  )
  .map(([[call, len, timedOut], input, output]) =>
    timedOut && input.kind !== 'get' ? { input, call, return: Infinity } : { input, call, return: call + len, output },
  );

const ORDERS = ['eager', 'lazy', 'portfolio'] as const;

describe('the WGL checker agrees with the brute-force definition', () => {
  it('on tiny random KV histories (linearizable or not), whatever the order of unknown ops', () => {
    let illegal = 0;
    fc.assert(
      fc.property(fc.array(kvOp, { minLength: 0, maxLength: 6 }), (h) => {
        const expected = bruteForceLinearizable(kvModel, h);
        if (!expected) illegal++;
        for (const unknownOrder of ORDERS) expect(checkOperations(kvModel, h, { unknownOrder }).result).toBe(expected ? 'ok' : 'illegal');
      }),
      { numRuns: 300 },
    );
    // The generator must exercise both answers, or the comparison proves little.
    expect(illegal).toBeGreaterThan(30);
    expect(illegal).toBeLessThan(270);
  });

  for (const versions of ['sequential', 'increasing'] as const) {
    it(`on tiny random document histories ('${versions}' versions)`, () => {
      const model = documentModel<Doc>({ versions });
      let ok = 0;
      fc.assert(
        fc.property(fc.array(docOp, { minLength: 0, maxLength: 5 }), (h) => {
          const expected = bruteForceLinearizable(model, h);
          if (expected) ok++;
          for (const unknownOrder of ORDERS) expect(checkOperations(model, h, { unknownOrder }).result).toBe(expected ? 'ok' : 'illegal');
        }),
        { numRuns: 200 },
      );
      expect(ok).toBeGreaterThan(15);
    });
  }
});
