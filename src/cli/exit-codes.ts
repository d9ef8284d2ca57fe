// Exit codes of the client commands (job, run, cluster, worker, dev). A script branches on them
// without parsing messages, so each says *what kind* of thing went wrong, not where.
import { status } from '@grpc/grpc-js';
import { HeraldClientError, InvalidSpecError } from '../client/errors.js';
import { ApplyConflictError } from './apply/apply-conflict-error.js';
import { UsageError } from './usage-error.js';
import { WaitTimeoutError } from './wait-for-run.js';

export const EXIT = {
  ok: 0,
  /** Anything not covered below (internal server error, unexpected failure). */
  failed: 1,
  /** Bad flags or arguments, or input the server rejected as invalid. */
  usage: 2,
  /** The job or run does not exist. */
  notFound: 3,
  /** Already exists, version mismatch, or the job/run is in the wrong state for the request. */
  conflict: 4,
  /** No node reachable, no leader, or the deadline (--timeout) passed. */
  unavailable: 5,
  /** A server limit was hit (too many runs in a backfill, payload quota, ...). */
  limit: 6,
  /** `--wait` saw the run end in a state other than succeeded. */
  runFailed: 7,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

const BY_GRPC: Partial<Record<status, ExitCode>> = {
  [status.INVALID_ARGUMENT]: EXIT.usage,
  [status.OUT_OF_RANGE]: EXIT.usage,
  [status.NOT_FOUND]: EXIT.notFound,
  [status.ALREADY_EXISTS]: EXIT.conflict,
  [status.FAILED_PRECONDITION]: EXIT.conflict,
  [status.ABORTED]: EXIT.conflict,
  [status.UNAVAILABLE]: EXIT.unavailable,
  [status.DEADLINE_EXCEEDED]: EXIT.unavailable,
  [status.UNIMPLEMENTED]: EXIT.unavailable,
  [status.RESOURCE_EXHAUSTED]: EXIT.limit,
};

/** The exit code for an error thrown by a command. */
export function exitCodeFor(err: unknown): ExitCode {
  if (err instanceof UsageError || err instanceof InvalidSpecError) return EXIT.usage;
  if (err instanceof WaitTimeoutError) return EXIT.unavailable;
  if (err instanceof ApplyConflictError) return EXIT.conflict;
  if (err instanceof HeraldClientError) return BY_GRPC[err.grpcCode] ?? EXIT.failed;
  return EXIT.failed;
}
