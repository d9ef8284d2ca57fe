// The typed view of applied results that code outside the state machine reads (the leader's
// applied-results feed): the kind from the header alone, for every kind result-codec writes.
import { describe, expect, it } from 'vitest';
import { appliedKindOf, encodeResult, type FsmResult } from '../../src/fsm/index.js';

describe('appliedKindOf', () => {
  it('names a result by the kind result-codec wrote, without decoding it', () => {
    const results: FsmResult[] = [
      { type: 'fire', items: [], signals: [] },
      { type: 'claim', items: [] },
      { type: 'jobs', items: [] },
      { type: 'runItems', items: [] },
      { type: 'rejected', error: { code: 'INTERNAL', message: 'x', reason: '' } },
    ];
    for (const r of results) expect(appliedKindOf(encodeResult(r))).toBe(r.type);
  });

  it('has no kind for the empty result of no-op entries, nor for an unknown header', () => {
    expect(appliedKindOf(encodeResult({ type: 'empty' }))).toBeUndefined();
    expect(appliedKindOf(Uint8Array.of(99, 5))).toBeUndefined();
    expect(appliedKindOf(Uint8Array.of(1, 200))).toBeUndefined();
  });
});
