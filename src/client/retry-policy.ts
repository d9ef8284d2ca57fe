// When a failed call may be tried again, and how long to wait first. Kept apart from the client
// so the rules can be read (and tested) on their own: a wrong "retry" here turns into a duplicate
// write, a wrong "fail" into a spurious error during every leader election.
import { status } from '@grpc/grpc-js';
import type { HeraldClientError } from './errors.js';

export interface RetryOptions {
  /** Total attempts per call, including the first and any redirect hops. */
  maxAttempts: number;
  /** Wait before the first retry. */
  initialBackoffMs: number;
  /** Upper bound of any wait. */
  maxBackoffMs: number;
  /** Growth factor per retry; default 2. */
  multiplier?: number;
}

// Twelve attempts wait ~7–14 s in all (the call's deadline cuts it shorter): enough to ride out
// an election after a leader crash on default timings (1–2 s election timeout, pre-vote, the new
// leader's catch-up) even on a loaded machine. Six (~1.5 s) failed calls in ordinary failovers.
export const DEFAULT_RETRY: RetryOptions = { maxAttempts: 12, initialBackoffMs: 50, maxBackoffMs: 2_000, multiplier: 2 };

/**
 * How safe a call is to repeat:
 * - 'read': no side effect.
 * - 'keyed': a write carrying an idempotency key (or otherwise naturally idempotent), so a repeat
 *   of an already-applied call returns the first outcome.
 * - 'write': a write that might apply twice if repeated after an unknown outcome.
 */
export type CallSafety = 'read' | 'keyed' | 'write';

// Herald codes (trailer herald-error-code) on UNAVAILABLE that guarantee the command was not
// applied, so even a non-idempotent write may be repeated. OUTCOME_UNKNOWN is the one that may
// have applied: src/server/grpc/grpc-status-map.ts says retrying is safe only with an idempotency key.
const NOT_APPLIED = new Set(['NOT_LEADER', 'NO_LEADER', 'SHUTTING_DOWN', 'NOT_READY']);

// grpc-js messages for calls that never got a connection to a server.
const NEVER_SENT = /No connection established|ECONNREFUSED|Name resolution failed|failed to connect/i;

/** Whether `err` (after the given attempt) may be retried for a call of this safety. */
export function isRetryable(err: HeraldClientError, safety: CallSafety): boolean {
  switch (err.grpcCode) {
    case status.UNAVAILABLE:
      if (safety !== 'write') return true;
      if (err.heraldCode !== undefined) return NOT_APPLIED.has(err.heraldCode);
      // Without a Herald code the transport failed. Only a call that never reached a server is
      // safe to repeat; a connection dropped mid-call may have applied the write (found by the
      // chaos suite: a retried update then reported FAILED_PRECONDITION although it took effect).
      return NEVER_SENT.test(err.message);
    case status.DEADLINE_EXCEEDED:
      return safety !== 'write';
    default:
      return false;
  }
}

/**
 * The wait before retry number `retry` (1 for the first retry): exponential growth capped at
 * maxBackoffMs, with "equal jitter" (half fixed, half random) so that many clients that failed
 * together during an election do not come back together.
 */
export function backoffDelayMs(retry: number, options: RetryOptions, random: () => number = Math.random): number {
  const multiplier = options.multiplier ?? 2;
  const exp = options.initialBackoffMs * Math.pow(multiplier, Math.max(0, retry - 1));
  const base = Math.min(options.maxBackoffMs, exp);
  return Math.round(base / 2 + random() * (base / 2));
}

/** A retry counter for long-lived loops (worker reconnects): grows on failure, resets on success. */
export class Backoff {
  private failures = 0;
  constructor(
    private readonly options: RetryOptions,
    private readonly random: () => number = Math.random,
  ) {}

  /** The wait after one more failure. */
  next(): number {
    this.failures += 1;
    return backoffDelayMs(this.failures, this.options, this.random);
  }

  reset(): void {
    this.failures = 0;
  }

  get attempts(): number {
    return this.failures;
  }
}

/** Resolves after `ms`, or rejects early with the signal's reason when it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
