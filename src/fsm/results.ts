// What apply returns per entry, decoded by the server with decodeResult (result-codec.ts).
// Results are computed identically on every replica but never replicated: the proposing node
// hands its own to the waiting caller.
import type { Job } from '../gen/herald/v1/job.js';
import type { Run, RunState } from '../gen/herald/v1/run.js';
import type { ErrorCode } from '../herald-error.js';

/**
 * Why an item was refused, in words a caller can act on. `reason` refines fencing rejections:
 * STALE_TOKEN (a newer claim exists), NOT_RUNNING (the run finished, was cancelled or its lease
 * expired), NOT_READY (claim of a run that is not waiting), NOT_DUE (claim before not-before),
 * DEADLINE_PASSED (claim after the starting deadline: the run is recorded MISSED).
 */
export interface ItemError {
  readonly code: ErrorCode;
  readonly message: string;
  readonly reason: string;
}

/** A running run whose worker must be told to stop (cancel, delete, REPLACE). */
export interface CancelSignal {
  readonly runId: string;
  readonly workerId: string;
  readonly fencingToken: number;
}

export interface JobResult {
  readonly type: 'job';
  readonly error?: ItemError;
  readonly job?: Job;
  /** putJob: false when answered from an earlier command with the same idempotency key. */
  readonly created: boolean;
}

/** One item of a putJobs command: what a putJob of that item would have answered. */
export interface JobItemResult {
  readonly error?: ItemError;
  readonly job?: Job;
  readonly created: boolean;
}

export interface JobsResult {
  readonly type: 'jobs';
  readonly items: readonly JobItemResult[];
}

export interface DeleteResult {
  readonly type: 'delete';
  readonly error?: ItemError;
  readonly cancelledRuns: number;
  readonly signals: readonly CancelSignal[];
}

export interface TriggerResult {
  readonly type: 'trigger';
  readonly error?: ItemError;
  readonly run?: Run;
  readonly created: boolean;
}

export interface BackfillResult {
  readonly type: 'backfill';
  readonly error?: ItemError;
  /** Backfilled run ids, oldest slot first (slots already backfilled are left out). */
  readonly runIds: readonly string[];
}

export interface FireItemResult {
  readonly error?: ItemError;
  /** Runs created PENDING, oldest slot first. */
  readonly created: readonly string[];
  /** Slots recorded MISSED (misfire policy or starting deadline). */
  readonly missed: readonly string[];
  /** Slots recorded SKIPPED (overlap policy). */
  readonly skipped: readonly string[];
  /** The job's next slot after this command (0 = none, or the job is not active): re-arm the wheel. */
  readonly nextFireMs: number;
}

export interface FireResult {
  readonly type: 'fire';
  readonly items: readonly FireItemResult[];
  /** Running runs cancelled by OVERLAP_POLICY_REPLACE. */
  readonly signals: readonly CancelSignal[];
}

export interface ClaimItemResult {
  readonly error?: ItemError;
  /** The run after the claim (RUNNING, with its fencing token and attempt). */
  readonly run?: Run;
}

export interface ClaimResult {
  readonly type: 'claim';
  readonly items: readonly ClaimItemResult[];
}

export interface RunItemResult {
  readonly error?: ItemError;
  /** The run's state after the item (UNSPECIFIED on error). */
  readonly state: RunState;
}

/** finishRuns, renewLeases, expireLeases, markRuns. */
export interface RunItemsResult {
  readonly type: 'runItems';
  readonly items: readonly RunItemResult[];
}

export interface CancelResult {
  readonly type: 'cancel';
  readonly items: readonly { readonly error?: ItemError; readonly run?: Run }[];
  readonly signals: readonly CancelSignal[];
}

export interface TrimResult {
  readonly type: 'trim';
  readonly runsTrimmed: number;
  readonly idempotencyKeysTrimmed: number;
}

/** The entry could not be decoded or carried an impossible command; nothing was changed. */
export interface RejectedResult {
  readonly type: 'rejected';
  readonly error: ItemError;
}

/** No-op and config entries. */
export interface EmptyResult {
  readonly type: 'empty';
}

export type FsmResult =
  | JobResult
  | JobsResult
  | DeleteResult
  | TriggerResult
  | BackfillResult
  | FireResult
  | ClaimResult
  | RunItemsResult
  | CancelResult
  | TrimResult
  | RejectedResult
  | EmptyResult;
