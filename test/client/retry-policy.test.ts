import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { status } from '@grpc/grpc-js';
import { Backoff, backoffDelayMs, isRetryable, type CallSafety } from '../../src/client/retry-policy.js';
import { clientError } from '../../src/client/errors.js';

describe('retry policy', () => {
  it('backoff grows exponentially, stays within [base/2, base] and never exceeds the cap', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 1_000 }),
        fc.integer({ min: 1, max: 60_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (retry, initial, cap, r) => {
          const opts = { maxAttempts: 10, initialBackoffMs: initial, maxBackoffMs: Math.max(initial, cap) };
          const base = Math.min(opts.maxBackoffMs, initial * 2 ** (retry - 1));
          const d = backoffDelayMs(retry, opts, () => r);
          expect(d).toBeGreaterThanOrEqual(Math.floor(base / 2));
          expect(d).toBeLessThanOrEqual(Math.ceil(base));
        },
      ),
    );
  });

  it('Backoff resets after success', () => {
    const b = new Backoff({ maxAttempts: Infinity, initialBackoffMs: 100, maxBackoffMs: 10_000 }, () => 1);
    expect([b.next(), b.next(), b.next()]).toEqual([100, 200, 400]);
    b.reset();
    expect(b.next()).toBe(100);
  });

  it.each([
    ['14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED 127.0.0.1:7101', true],
    ['14 UNAVAILABLE: Connection dropped', false],
    ['14 UNAVAILABLE: read ECONNRESET', false],
  ])('a plain write after the transport failure "%s" → retry %s', (message, expected) => {
    expect(isRetryable(clientError({ grpcCode: status.UNAVAILABLE, message, heraldCode: undefined }), 'write')).toBe(expected);
    expect(isRetryable(clientError({ grpcCode: status.UNAVAILABLE, message, heraldCode: undefined }), 'keyed')).toBe(true);
  });

  it.each<[status, string | undefined, CallSafety, boolean]>([
    [status.UNAVAILABLE, 'NOT_LEADER', 'write', true],
    [status.UNAVAILABLE, 'NO_LEADER', 'write', true],
    [status.UNAVAILABLE, undefined, 'write', false],
    [status.UNAVAILABLE, 'OUTCOME_UNKNOWN', 'write', false],
    [status.UNAVAILABLE, 'OUTCOME_UNKNOWN', 'keyed', true],
    [status.UNAVAILABLE, 'OUTCOME_UNKNOWN', 'read', true],
    [status.DEADLINE_EXCEEDED, 'PROPOSAL_TIMEOUT', 'write', false],
    [status.DEADLINE_EXCEEDED, 'PROPOSAL_TIMEOUT', 'keyed', true],
    [status.DEADLINE_EXCEEDED, undefined, 'read', true],
    [status.NOT_FOUND, 'JOB_NOT_FOUND', 'read', false],
    [status.FAILED_PRECONDITION, 'VERSION_MISMATCH', 'write', false],
    [status.RESOURCE_EXHAUSTED, 'LIMIT_EXCEEDED', 'keyed', false],
  ])('code %i / %s on a %s call → retry %s', (code, heraldCode, safety, expected) => {
    expect(isRetryable(clientError({ grpcCode: code, message: 'x', heraldCode }), safety)).toBe(expected);
  });
});
