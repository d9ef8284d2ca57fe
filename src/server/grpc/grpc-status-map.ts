import { status } from '@grpc/grpc-js';
import type { ErrorCode } from '../../herald-error.js';

/** The one table from Herald error codes to gRPC status codes (DESIGN §7). */
export const grpcStatusOf: Record<ErrorCode, status> = {
  INVALID_ID: status.INVALID_ARGUMENT,
  INVALID_SPEC: status.INVALID_ARGUMENT,
  INVALID_CRON: status.INVALID_ARGUMENT,
  UNKNOWN_TIME_ZONE: status.INVALID_ARGUMENT,
  PAYLOAD_TOO_LARGE: status.INVALID_ARGUMENT,
  INVALID_ARGUMENT: status.INVALID_ARGUMENT,
  JOB_NOT_FOUND: status.NOT_FOUND,
  RUN_NOT_FOUND: status.NOT_FOUND,
  TASK_TYPE_NOT_FOUND: status.NOT_FOUND,
  TOKEN_NOT_FOUND: status.NOT_FOUND,
  ALREADY_EXISTS: status.ALREADY_EXISTS,
  VERSION_MISMATCH: status.FAILED_PRECONDITION,
  INVALID_STATE: status.FAILED_PRECONDITION,
  STALE_FENCING_TOKEN: status.FAILED_PRECONDITION,
  LIMIT_EXCEEDED: status.RESOURCE_EXHAUSTED,
  WATCH_INDEX_UNAVAILABLE: status.OUT_OF_RANGE,
  WATCHER_TOO_SLOW: status.RESOURCE_EXHAUSTED,
  NOT_LEADER: status.UNAVAILABLE,
  NO_LEADER: status.UNAVAILABLE,
  PROPOSAL_TIMEOUT: status.DEADLINE_EXCEEDED,
  // The command may or may not have been applied; retrying with an idempotency key is safe.
  OUTCOME_UNKNOWN: status.UNAVAILABLE,
  SHUTTING_DOWN: status.UNAVAILABLE,
  NOT_READY: status.UNAVAILABLE,
  CORRUPT_STORAGE: status.INTERNAL,
  CLUSTER_MISMATCH: status.FAILED_PRECONDITION,
  UNAUTHENTICATED: status.UNAUTHENTICATED,
  PERMISSION_DENIED: status.PERMISSION_DENIED,
  CONF_CHANGE_PENDING: status.FAILED_PRECONDITION,
  MEMBER_NOT_FOUND: status.NOT_FOUND,
  // A learner too far behind the leader's log to be promoted yet; retry once it caught up.
  LEARNER_BEHIND: status.FAILED_PRECONDITION,
  // A learner whose build supports less than the cluster's feature level: upgrade it first.
  LEARNER_FEATURE_LEVEL: status.FAILED_PRECONDITION,
  // A peer message from an incarnation of its sender the configuration does not list.
  WRONG_INCARNATION: status.FAILED_PRECONDITION,
  EMPTY_DATA_DIR: status.FAILED_PRECONDITION,
  INTERNAL: status.INTERNAL,
};

// Trailing-metadata keys of a failed call: where the leader is, and the Herald error code.
export const LEADER_ID_KEY = 'herald-leader-id';
export const LEADER_ADDRESS_KEY = 'herald-leader-address';
export const ERROR_CODE_KEY = 'herald-error-code';
/** How long to wait before retrying (ms), on a refusal that knows (a rate limit). */
export const RETRY_AFTER_MS_KEY = 'herald-retry-after-ms';
