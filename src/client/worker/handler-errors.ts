// Errors a handler throws to say how its run failed. Anything thrown is a failure; these classes
// only add the two facts the server needs: may a retry succeed, and what kind of failure it was
// (RunFailure.error_type, which JobSpec.retry.non_retryable_error_types can match).

export interface HandlerErrorOptions {
  /** A short, stable classification, e.g. "HttpTimeout"; defaults to the class name. */
  type?: string;
  /** Whether a retry may succeed; default true. */
  retryable?: boolean;
  cause?: unknown;
}

/** A run failure with an explicit error type and retryability. */
export class HandlerError extends Error {
  override name = 'HandlerError';
  readonly type: string | undefined;
  readonly retryable: boolean;

  constructor(message: string, options: HandlerErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.type = options.type;
    this.retryable = options.retryable ?? true;
  }
}

/** A failure that no retry can fix (bad payload, missing record): the run goes DEAD at once. */
export class NonRetryableError extends HandlerError {
  override name = 'NonRetryableError';
  constructor(message: string, options: Omit<HandlerErrorOptions, 'retryable'> = {}) {
    super(message, { ...options, retryable: false });
  }
}

/** Why a run's AbortSignal fired. */
export type AbortCause = 'lease-lost' | 'cancelled' | 'timeout' | 'shutdown';

/** The reason of a run's AbortSignal: `signal.reason instanceof RunAbortedError`. */
export class RunAbortedError extends Error {
  override name = 'RunAbortedError';
  constructor(
    /** Why the run was aborted. */
    readonly reason: AbortCause,
    message: string,
  ) {
    super(message);
  }
}
