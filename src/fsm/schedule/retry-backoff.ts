// Backoff between attempts of a run: exponential and capped, with deterministic "equal jitter"
// (half fixed, half spread) so retries of many runs failing together do not stampede, while every
// replica computes the same not-before time (DESIGN I5).
import type { RetryPolicy } from '../../gen/herald/v1/job.js';
import { unitHash } from './fnv1a64.js';
import { effectiveRetry } from './retry-policy.js';

/** The un-jittered backoff before attempt `nextAttempt`: initial·multiplier^(n−2), capped. */
export function retryBackoffBaseMs(policy: RetryPolicy | undefined, nextAttempt: number): number {
  const p = effectiveRetry(policy);
  // Attempts are at most 100 (validation); the clamp only keeps NaN/Infinity out (1 ** Infinity is NaN).
  const exponent = nextAttempt >= 2 ? Math.min(Math.floor(nextAttempt) - 2, 1000) : 0;
  // Infinity (huge exponents) is fine here: the cap wins.
  return Math.floor(Math.min(p.maxBackoffMs, p.initialBackoffMs * p.backoffMultiplier ** exponent));
}

/**
 * Backoff before attempt `nextAttempt` (>= 2; smaller values are treated as 2): the base, of which
 * the upper half is replaced by a hash of (runId, attempt). Result in [ceil(base/2), base].
 */
export function retryBackoffMs(policy: RetryPolicy | undefined, nextAttempt: number, runId: string): number {
  const base = retryBackoffBaseMs(policy, nextAttempt);
  const fixed = Math.ceil(base / 2);
  const spread = base - fixed; // the jittered part covers [0, spread]
  const attempt = nextAttempt >= 2 ? Math.min(Math.floor(nextAttempt), 1002) : 2;
  return fixed + Math.min(spread, Math.floor(unitHash(runId, attempt) * (spread + 1)));
}
