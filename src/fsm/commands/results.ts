// What apply returns per entry, decoded by the server with decodeResult (result-codec.ts).
// Results are computed identically on every replica but never replicated: the proposing node
// hands its own to the waiting caller.
import type { Job } from '../../gen/herald/v1/job.js';
import type { Run, RunState } from '../../gen/herald/v1/run.js';
import type { TaskTypeConfig } from '../../gen/herald/v1/task_type_service.js';
import type { TokenRecord } from './token-record.js';
import type { ErrorCode } from '../../herald-error.js';

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
  /** Runs a REPLACE job's trigger cancelled that were RUNNING (absent when none). */
  readonly signals?: readonly CancelSignal[];
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
  /** How many of `missed` were recorded because the job's backlog was full (max_pending_runs). */
  readonly backlogFull?: number;
  /** The job's next slot after this command (0 = none, or the job is not active): re-arm the wheel. */
  readonly nextFireMs: number;
  /** With a next slot: how its run will be dispatched, while the job stays as it is. */
  readonly dispatch?: DispatchHint;
}

/**
 * What the leader needs to fire a job's next slot ahead and claim its run behind the fire without
 * reading the job (fire-scheduler.ts). Good until the job changes: any applied change to the job
 * drops it there.
 */
export interface DispatchHint {
  readonly taskType: string;
  readonly priority: number;
  /** Its runs start at slot + jitter (not at the slot). */
  readonly jittered: boolean;
  /**
   * The jitter window when every slot's offset is jitterOffsetMs(job, slot, window) exactly — the
   * window no shorter than the gap to the next slot can be (dispatch-hint.ts) — so the leader can
   * fire each slot at its own jittered instant rather than all at the slot; 0 otherwise.
   */
  readonly jitterWindowMs: number;
  /** Overlap policy ALLOW: firing decides nothing that depends on the runs still active. */
  readonly allowsOverlap: boolean;
}

export interface FireResult {
  readonly type: 'fire';
  readonly items: readonly FireItemResult[];
  /** Running runs cancelled by OVERLAP_POLICY_REPLACE. */
  readonly signals: readonly CancelSignal[];
}

/**
 * A claimed run as its assignment needs it: the run's fields after the claim and its job's
 * (payload, lease duration, execution timeout) at the claim, so the leader reads no job to hand
 * it out. The run record itself is ListRuns / GetRun's.
 */
export interface ClaimedRun {
  readonly id: string;
  readonly jobId: string;
  readonly taskType: string;
  readonly slotUnixMs: number;
  readonly scheduledUnixMs: number;
  /** When it may start: a run claimed ahead (ClaimRunsCommand.aheadMs) is held until then. */
  readonly notBeforeUnixMs: number;
  readonly attempt: number;
  readonly fencingToken: number;
  readonly latenessMs: number;
  readonly leaseDeadlineUnixMs: number;
  /** The job's lease duration, or the command's default. */
  readonly leaseDurationMs: number;
  /** The job's (0: none, or the job is gone). */
  readonly executionTimeoutMs: number;
  readonly payload: Uint8Array;
  readonly manual: boolean;
  readonly backfilled: boolean;
}

export interface ClaimItemResult {
  readonly error?: ItemError;
  /** The run after the claim (RUNNING, with its fencing token and attempt). */
  readonly run?: ClaimedRun;
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

/** finishRuns, expireLeases, markRuns. */
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

/** retryRuns: per run id, the run after its re-drive or why it was not re-driven. */
export interface RetryResult {
  readonly type: 'retry';
  readonly items: readonly { readonly error?: ItemError; readonly run?: Run }[];
}

export interface AlertItemResult {
  readonly error?: ItemError;
  /** The alert run written; '' when none was (no on_watchdog alert, slot fired or already alerted). */
  readonly runId: string;
}

/** raiseAlerts. */
export interface AlertsResult {
  readonly type: 'alerts';
  readonly items: readonly AlertItemResult[];
}

/** putTaskType (the config stored) and deleteTaskType (the config removed). */
export interface TaskTypeResult {
  readonly type: 'taskType';
  readonly error?: ItemError;
  readonly config?: TaskTypeConfig;
}

/** putToken (the record stored) and deleteToken (the record removed). */
export interface TokenResult {
  readonly type: 'token';
  readonly error?: ItemError;
  readonly token?: TokenRecord;
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
  | RetryResult
  | AlertsResult
  | TaskTypeResult
  | TokenResult
  | RejectedResult
  | EmptyResult;
