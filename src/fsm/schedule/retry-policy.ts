// The retry policy with its defaults, and validation of its ranges.
import type { RetryPolicy } from '../../gen/herald/v1/job.js';
import { HeraldError } from '../../herald-error.js';

export const DEFAULT_MAX_ATTEMPTS = 3;
export const DEFAULT_INITIAL_BACKOFF_MS = 1000;
export const DEFAULT_MAX_BACKOFF_MS = 300_000;
export const DEFAULT_BACKOFF_MULTIPLIER = 2;
export const MAX_ATTEMPTS_LIMIT = 100;

/** A retry policy with every default applied: no field means "default" any more. */
export type EffectiveRetry = Required<RetryPolicy>;

/** Effective retry policy with defaults applied (max attempts 3, initial 1000, max 300000, x2). */
export function effectiveRetry(policy: RetryPolicy | undefined): EffectiveRetry {
  return {
    maxAttempts: policy?.maxAttempts || DEFAULT_MAX_ATTEMPTS,
    initialBackoffMs: policy?.initialBackoffMs || DEFAULT_INITIAL_BACKOFF_MS,
    maxBackoffMs: policy?.maxBackoffMs || DEFAULT_MAX_BACKOFF_MS,
    backoffMultiplier: policy?.backoffMultiplier || DEFAULT_BACKOFF_MULTIPLIER,
    nonRetryableErrorTypes: policy?.nonRetryableErrorTypes ?? [],
  };
}

function invalid(field: string, message: string): never {
  throw new HeraldError('INVALID_SPEC', message, { field: `spec.retry.${field}` });
}

/** Throws INVALID_SPEC with details.field for an out-of-range retry policy. */
export function validateRetryPolicy(policy: RetryPolicy | undefined): void {
  if (policy === undefined) return;
  const { maxAttempts, initialBackoffMs, maxBackoffMs, backoffMultiplier } = policy;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 0 || maxAttempts > MAX_ATTEMPTS_LIMIT) {
    invalid('max_attempts', `max_attempts must be 0 (default ${DEFAULT_MAX_ATTEMPTS}) to ${MAX_ATTEMPTS_LIMIT}, got ${maxAttempts}`);
  }
  if (!Number.isSafeInteger(initialBackoffMs) || initialBackoffMs < 0) {
    invalid('initial_backoff_ms', `initial_backoff_ms must be an integer >= 0, got ${initialBackoffMs}`);
  }
  if (!Number.isSafeInteger(maxBackoffMs) || maxBackoffMs < 0) {
    invalid('max_backoff_ms', `max_backoff_ms must be an integer >= 0, got ${maxBackoffMs}`);
  }
  if (!Number.isFinite(backoffMultiplier) || (backoffMultiplier !== 0 && backoffMultiplier < 1)) {
    invalid('backoff_multiplier', `backoff_multiplier must be 0 (default ${DEFAULT_BACKOFF_MULTIPLIER}) or >= 1, got ${backoffMultiplier}`);
  }
  // Compare effective values: an initial backoff above the default cap is as wrong as one above
  // an explicit cap.
  const eff = effectiveRetry(policy);
  if (eff.initialBackoffMs > eff.maxBackoffMs) {
    invalid(
      'initial_backoff_ms',
      `initial_backoff_ms (${eff.initialBackoffMs}) must not exceed max_backoff_ms (${eff.maxBackoffMs}${maxBackoffMs === 0 ? ', the default' : ''})`,
    );
  }
  policy.nonRetryableErrorTypes.forEach((t, i) => {
    if (typeof t !== 'string' || t === '') invalid(`non_retryable_error_types[${i}]`, 'error types must be non-empty strings');
  });
}
