// Typed errors with stable codes. Every layer throws HeraldError; src/server/grpc/grpc-status-map.ts
// is the one table that turns a code into a gRPC status.

export type ErrorCode =
  // Bad input (INVALID_ARGUMENT)
  | 'INVALID_ID'
  | 'INVALID_SPEC'
  | 'INVALID_CRON'
  | 'UNKNOWN_TIME_ZONE'
  | 'PAYLOAD_TOO_LARGE'
  | 'INVALID_ARGUMENT'
  // Lookups and conflicts
  | 'JOB_NOT_FOUND'
  | 'RUN_NOT_FOUND'
  | 'TASK_TYPE_NOT_FOUND'
  | 'TOKEN_NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'VERSION_MISMATCH'
  | 'INVALID_STATE'
  | 'STALE_FENCING_TOKEN'
  // Limits
  | 'LIMIT_EXCEEDED'
  // Watch streams: the resume index left this node's change log; the watcher fell behind its bound
  | 'WATCH_INDEX_UNAVAILABLE'
  | 'WATCHER_TOO_SLOW'
  // Cluster availability
  | 'NOT_LEADER'
  | 'NO_LEADER'
  | 'PROPOSAL_TIMEOUT'
  | 'OUTCOME_UNKNOWN'
  | 'SHUTTING_DOWN'
  | 'NOT_READY'
  // Storage and identity
  | 'CORRUPT_STORAGE'
  | 'CLUSTER_MISMATCH'
  // Credentials: none or a bad one (UNAUTHENTICATED); a good one without the right (PERMISSION_DENIED)
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  // Membership changes
  | 'CONF_CHANGE_PENDING'
  | 'MEMBER_NOT_FOUND'
  | 'LEARNER_BEHIND'
  | 'LEARNER_FEATURE_LEVEL'
  | 'WRONG_INCARNATION'
  | 'EMPTY_DATA_DIR'
  | 'INTERNAL';

export interface HeraldErrorDetails {
  /** The leader's node id and client address, for NOT_LEADER. */
  leaderId?: string;
  leaderAddress?: string;
  /** The field a validation error is about, e.g. "spec.schedule.cron.expression". */
  field?: string;
  /** The error came from the server a call went to (it carried a Herald code), not the transport. */
  remote?: boolean;
  /** No call was made (no connection): the server cannot have acted on it, a retry is safe. */
  neverSent?: boolean;
  [key: string]: unknown;
}

export class HeraldError extends Error {
  override readonly name = 'HeraldError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: HeraldErrorDetails = {},
  ) {
    super(message);
  }
}

export function isHeraldError(e: unknown, code?: ErrorCode): e is HeraldError {
  return e instanceof HeraldError && (code === undefined || e.code === code);
}
