// Retry policy defaults, range validation, and the capped exponential backoff with deterministic
// equal jitter.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RetryPolicy } from '../../../src/gen/herald/v1/job.js';
import {
  effectiveRetry,
  retryBackoffBaseMs,
  retryBackoffMs,
  validateRetryPolicy,
} from '../../../src/fsm/schedule/index.js';
import { isHeraldError } from '../../../src/herald-error.js';

const policy = (p: Partial<RetryPolicy>): RetryPolicy => ({
  maxAttempts: 0, initialBackoffMs: 0, maxBackoffMs: 0, backoffMultiplier: 0, nonRetryableErrorTypes: [], ...p,
});

describe('effectiveRetry', () => {
  it.each([
    { name: 'no policy: all defaults', p: undefined, expected: { maxAttempts: 3, initialBackoffMs: 1000, maxBackoffMs: 300_000, backoffMultiplier: 2 } },
    { name: 'zeros mean defaults', p: policy({}), expected: { maxAttempts: 3, initialBackoffMs: 1000, maxBackoffMs: 300_000, backoffMultiplier: 2 } },
    {
      name: 'set values are kept',
      p: policy({ maxAttempts: 1, initialBackoffMs: 50, maxBackoffMs: 60_000, backoffMultiplier: 1.5, nonRetryableErrorTypes: ['Fatal'] }),
      expected: { maxAttempts: 1, initialBackoffMs: 50, maxBackoffMs: 60_000, backoffMultiplier: 1.5, nonRetryableErrorTypes: ['Fatal'] },
    },
  ])('$name', ({ p, expected }) => {
    expect(effectiveRetry(p)).toMatchObject(expected);
  });
});

describe('validateRetryPolicy', () => {
  it.each([
    { name: 'max_attempts above 100', p: policy({ maxAttempts: 101 }), field: 'spec.retry.max_attempts' },
    { name: 'negative max_attempts', p: policy({ maxAttempts: -1 }), field: 'spec.retry.max_attempts' },
    { name: 'negative initial backoff', p: policy({ initialBackoffMs: -5 }), field: 'spec.retry.initial_backoff_ms' },
    { name: 'negative max backoff', p: policy({ maxBackoffMs: -5 }), field: 'spec.retry.max_backoff_ms' },
    { name: 'multiplier between 0 and 1', p: policy({ backoffMultiplier: 0.5 }), field: 'spec.retry.backoff_multiplier' },
    { name: 'NaN multiplier', p: policy({ backoffMultiplier: NaN }), field: 'spec.retry.backoff_multiplier' },
    { name: 'initial above max', p: policy({ initialBackoffMs: 10_000, maxBackoffMs: 5000 }), field: 'spec.retry.initial_backoff_ms' },
    { name: 'initial above the default max', p: policy({ initialBackoffMs: 400_000 }), field: 'spec.retry.initial_backoff_ms' },
    { name: 'empty non-retryable error type', p: policy({ nonRetryableErrorTypes: [''] }), field: 'spec.retry.non_retryable_error_types[0]' },
  ])('rejects $name with INVALID_SPEC at $field', ({ p, field }) => {
    let error: unknown;
    try {
      validateRetryPolicy(p);
    } catch (e) {
      error = e;
    }
    expect(isHeraldError(error, 'INVALID_SPEC')).toBe(true);
    expect((error as { details: { field: string } }).details.field).toBe(field);
  });

  it.each([
    { name: 'absent', p: undefined },
    { name: 'all defaults', p: policy({}) },
    { name: 'boundaries', p: policy({ maxAttempts: 100, initialBackoffMs: 300_000, backoffMultiplier: 1 }) },
    { name: 'max attempts 1 (no retries)', p: policy({ maxAttempts: 1 }) },
  ])('accepts $name', ({ p }) => {
    expect(() => validateRetryPolicy(p)).not.toThrow();
  });
});

describe('retryBackoffBaseMs', () => {
  it.each([
    { name: 'defaults: 1s, 2s, 4s …', p: undefined, attempts: [2, 3, 4, 5], expected: [1000, 2000, 4000, 8000] },
    { name: 'defaults cap at 300 s', p: undefined, attempts: [10, 11, 12, 1000], expected: [256_000, 300_000, 300_000, 300_000] },
    { name: 'multiplier 1 is constant', p: policy({ initialBackoffMs: 700, backoffMultiplier: 1 }), attempts: [2, 3, 50], expected: [700, 700, 700] },
    { name: 'fractional multiplier floors to ms', p: policy({ initialBackoffMs: 1000, backoffMultiplier: 1.5 }), attempts: [2, 3, 4], expected: [1000, 1500, 2250] },
    { name: 'attempt below 2 (or NaN) is treated as 2', p: undefined, attempts: [0, 1, NaN], expected: [1000, 1000, 1000] },
    { name: 'absurd attempts stay at the cap, even with multiplier 1', p: policy({ backoffMultiplier: 1, initialBackoffMs: 5 }), attempts: [Infinity, 1e12], expected: [5, 5] },
  ])('$name', ({ p, attempts, expected }) => {
    expect(attempts.map((n) => retryBackoffBaseMs(p, n))).toEqual(expected);
  });
});

const validPolicies = fc
  .record({
    initialBackoffMs: fc.integer({ min: 0, max: 600_000 }),
    maxBackoffMs: fc.integer({ min: 0, max: 3_600_000 }),
    backoffMultiplier: fc.oneof(fc.constant(0), fc.double({ min: 1, max: 10, noNaN: true })),
  })
  .map((r) => policy(r))
  .filter((p) => {
    const e = effectiveRetry(p);
    return e.initialBackoffMs <= e.maxBackoffMs;
  });

describe('retryBackoffMs properties', () => {
  it('the base is monotonic in the attempt and never exceeds the cap', () => {
    fc.assert(
      fc.property(validPolicies, fc.integer({ min: 2, max: 200 }), (p, n) => {
        const cap = effectiveRetry(p).maxBackoffMs;
        const a = retryBackoffBaseMs(p, n);
        const b = retryBackoffBaseMs(p, n + 1);
        expect(b).toBeGreaterThanOrEqual(a);
        expect(b).toBeLessThanOrEqual(cap);
      }),
      { numRuns: 300, seed: 11 },
    );
  });

  it('the jittered backoff is an integer in [ceil(base/2), base], deterministic per (run, attempt)', () => {
    fc.assert(
      fc.property(validPolicies, fc.integer({ min: 2, max: 200 }), fc.string({ minLength: 1, maxLength: 64 }), (p, n, runId) => {
        const base = retryBackoffBaseMs(p, n);
        const d = retryBackoffMs(p, n, runId);
        expect(Number.isInteger(d)).toBe(true);
        expect(d).toBeGreaterThanOrEqual(Math.ceil(base / 2));
        expect(d).toBeLessThanOrEqual(base);
        expect(d).toBeLessThanOrEqual(effectiveRetry(p).maxBackoffMs);
        expect(retryBackoffMs(p, n, runId)).toBe(d);
      }),
      { numRuns: 300, seed: 12 },
    );
  });

  it('with a multiplier of at least 2 the jittered backoff is monotonic until the cap', () => {
    // base(n+1) >= 2·base(n) so ceil(base(n+1)/2) >= base(n) >= jittered(n).
    const p = policy({ initialBackoffMs: 100, maxBackoffMs: 1_000_000, backoffMultiplier: 2 });
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), (runId) => {
        const seq = [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13].map((n) => retryBackoffMs(p, n, runId));
        for (let i = 1; i < seq.length; i++) expect(seq[i]!).toBeGreaterThanOrEqual(seq[i - 1]!);
      }),
      { numRuns: 300, seed: 13 },
    );
  });

  it('is fixed for a given (run, attempt): golden value', () => {
    // base 4000 ms for attempt 4 with defaults; 2000 fixed + 216 from the hash.
    expect(retryBackoffMs(undefined, 4, 'billing.nightly:1780000000000')).toBe(2216);
  });

  it('spreads runs that fail together (distinct run ids get distinct delays)', () => {
    const delays = new Set(Array.from({ length: 100 }, (_, i) => retryBackoffMs(undefined, 6, `run-${i}`)));
    expect(delays.size).toBeGreaterThan(90);
  });
});
