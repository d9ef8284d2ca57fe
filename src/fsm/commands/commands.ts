// The FSM's command vocabulary: what the leader proposes through the Raft log.
// Every time-driven command carries `nowMs`, the cluster time stamped by the leader (DESIGN §5a):
// apply uses only that, never a clock (I5). Batched commands carry thousands of items; each item
// gets its own result so one bad item never fails (or half-applies) the rest.
import type { JobSpec } from '../../gen/herald/v1/job.js';
import type { TaskTypeConfig } from '../../gen/herald/v1/task_type_service.js';
import type { TokenRecord } from './token-record.js';

export interface PutJobCommand {
  readonly type: 'putJob';
  readonly nowMs: number;
  readonly jobId: string;
  readonly spec: JobSpec;
  /** Empty for none. A repeat within 24 h (from the first command's time) returns the first job. */
  readonly idempotencyKey: string;
  /**
   * The caller's principal name (auth/principal.ts), put in by the leader before proposing so
   * apply records it without reading any call state. Absent or '' while auth is off.
   */
  readonly principal?: string;
  /**
   * The call's request id (the audit log line's), recorded as the job's created / updated
   * request id. Feature level 3 (feature-levels.ts); absent below it.
   */
  readonly requestId?: string;
}

export interface PutJobsItem {
  readonly jobId: string;
  readonly spec: JobSpec;
  /** Empty for none; the same 24 h semantics as PutJobCommand.idempotencyKey. */
  readonly idempotencyKey: string;
}

/**
 * Many creates in one log entry (CreateJobs): each item is applied exactly as a putJob command
 * of the same nowMs would be, in item order, and gets its own result. One entry instead of one
 * per job is what lets bulk creates go past the per-entry cost of the log.
 */
export interface PutJobsCommand {
  readonly type: 'putJobs';
  readonly nowMs: number;
  readonly items: readonly PutJobsItem[];
  /** Every item's creator: as PutJobCommand.principal. */
  readonly principal?: string;
  /** As PutJobCommand.requestId. */
  readonly requestId?: string;
}

export interface UpdateJobCommand {
  readonly type: 'updateJob';
  readonly nowMs: number;
  readonly jobId: string;
  readonly spec: JobSpec;
  /** 0 = unconditional. */
  readonly expectedVersion: number;
  /** As PutJobCommand.principal: recorded as the job's updated_by. */
  readonly principal?: string;
  /** As PutJobCommand.requestId: recorded as the job's updated request id. */
  readonly requestId?: string;
}

export interface DeleteJobCommand {
  readonly type: 'deleteJob';
  readonly nowMs: number;
  readonly jobId: string;
  /** 0 = unconditional. */
  readonly expectedVersion: number;
  /** As PutJobCommand.principal: who deleted it, in the log (the record goes). */
  readonly principal?: string;
  /** As PutJobCommand.requestId: in the log only. */
  readonly requestId?: string;
}

export interface PauseJobCommand {
  readonly type: 'pauseJob';
  readonly nowMs: number;
  readonly jobId: string;
  readonly note: string;
  /** As PutJobCommand.principal: recorded as the job's updated_by. */
  readonly principal?: string;
  /** As PutJobCommand.requestId: recorded as the job's updated request id. */
  readonly requestId?: string;
}

export interface ResumeJobCommand {
  readonly type: 'resumeJob';
  readonly nowMs: number;
  readonly jobId: string;
  /** As PutJobCommand.principal: recorded as the job's updated_by. */
  readonly principal?: string;
  /** As PutJobCommand.requestId: recorded as the job's updated request id. */
  readonly requestId?: string;
}

export interface TriggerJobCommand {
  readonly type: 'triggerJob';
  readonly nowMs: number;
  readonly jobId: string;
  /** Empty for none; scoped to the job. */
  readonly idempotencyKey: string;
  /**
   * Run even if the job's overlap policy says otherwise. Entries written before the policy
   * applied to triggers decode as true, so replaying them gives the results they had.
   */
  readonly ignoreOverlap: boolean;
  /**
   * The caller's principal name and request id, recorded on the runs it acts on (Run.requested_by
   * / request_id). Feature level 3 (feature-levels.ts); absent below it and for the leader's own.
   */
  readonly principal?: string;
  readonly requestId?: string;
}

export interface BackfillJobCommand {
  readonly type: 'backfillJob';
  readonly nowMs: number;
  readonly jobId: string;
  readonly fromMs: number;
  readonly toMs: number;
  /** More slots than this in the range fail the command with LIMIT_EXCEEDED. */
  readonly maxRuns: number;
  /** Start the runs together even under FORBID / BUFFER_ONE; decoded as true as for triggers. */
  readonly ignoreOverlap: boolean;
  /**
   * The caller's principal name and request id, recorded on the runs it acts on (Run.requested_by
   * / request_id). Feature level 3 (feature-levels.ts); absent below it and for the leader's own.
   */
  readonly principal?: string;
  readonly requestId?: string;
}

export interface FireItem {
  readonly jobId: string;
  /** The due slot the leader saw (before jitter). Every slot of the job up to it is handled. */
  readonly slotMs: number;
}

export interface FireRunsCommand {
  readonly type: 'fireRuns';
  readonly nowMs: number;
  /**
   * A slot older than nowMs − this (and not fired) counts as misfired (downtime) and is handled
   * by the job's misfire policy. Carried in the command, not configured per node, so every
   * replica decides alike. 0 means the default (60 s).
   */
  readonly misfireThresholdMs: number;
  readonly items: readonly FireItem[];
}

export interface ClaimItem {
  readonly runId: string;
  readonly workerId: string;
  /**
   * When the lease expires unless renewed; 0 = the run's start plus its job's lease duration
   * (ClaimRunsCommand.defaultLeaseMs when the job sets none), so the leader need not read the job.
   */
  readonly leaseDeadlineMs: number;
}

/** The fencing token of every claim in the command is the Raft index of its entry. */
export interface ClaimRunsCommand {
  readonly type: 'claimRuns';
  readonly nowMs: number;
  readonly items: readonly ClaimItem[];
  /**
   * Runs whose not-before time is at most this far past nowMs may be claimed too (the leader's
   * dispatch lead; the worker holds them until then). 0 = only runs due now. At most
   * MAX_CLAIM_AHEAD_MS: a larger value claims nothing early.
   */
  readonly aheadMs?: number;
  /** The lease duration of items with leaseDeadlineMs 0 whose job sets none (0 = such items are refused). */
  readonly defaultLeaseMs?: number;
}

/** The largest ClaimRunsCommand.aheadMs apply honours. */
export const MAX_CLAIM_AHEAD_MS = 1_000;

export interface FinishItem {
  readonly runId: string;
  readonly fencingToken: number;
  readonly succeeded: boolean;
  /** Handler output on success (at most 64 KiB). */
  readonly output: Uint8Array;
  /** On failure: */
  readonly errorType: string;
  readonly errorMessage: string;
  readonly retryable: boolean;
  /** The attempt exceeded the job's execution timeout (a retryable failure). */
  readonly timedOut: boolean;
}

export interface FinishRunsCommand {
  readonly type: 'finishRuns';
  readonly nowMs: number;
  readonly items: readonly FinishItem[];
}

export interface ExpireItem {
  readonly runId: string;
  readonly fencingToken: number;
}

/** The leader decides expiry (it holds heartbeats in memory); the FSM checks the token. */
export interface ExpireLeasesCommand {
  readonly type: 'expireLeases';
  readonly nowMs: number;
  readonly items: readonly ExpireItem[];
}

export interface CancelItem {
  readonly runId: string;
  readonly reason: string;
}

export interface CancelRunsCommand {
  readonly type: 'cancelRuns';
  readonly nowMs: number;
  readonly items: readonly CancelItem[];
  /**
   * The caller's principal name and request id, recorded on the runs it acts on (Run.requested_by
   * / request_id). Feature level 3 (feature-levels.ts); absent below it and for the leader's own.
   */
  readonly principal?: string;
  readonly requestId?: string;
}

export interface MarkItem {
  readonly runId: string;
  /** 'missed': could not start within its starting deadline; 'skipped': overlap policy. */
  readonly outcome: 'missed' | 'skipped';
  readonly reason: string;
}

/** Records pending runs that will not start as MISSED or SKIPPED (leader's watchdog). */
export interface MarkRunsCommand {
  readonly type: 'markRuns';
  readonly nowMs: number;
  readonly items: readonly MarkItem[];
}

export interface TrimHistoryCommand {
  readonly type: 'trimHistory';
  readonly nowMs: number;
  /** Jobs whose finished runs are trimmed to their retention (count and age). */
  readonly jobIds: readonly string[];
  /** At most this many expired idempotency keys are removed (0 = none). */
  readonly maxIdempotencyKeys: number;
}

/**
 * Re-drives ended runs (RetryRun, RetryRuns): each DEAD, CANCELLED or FAILED run becomes PENDING
 * again, not before nowMs, with its retry budget restarted; one entry per API call, each item
 * with its own result. The server lists a bulk call's runs first; apply checks each again.
 */
export interface RetryRunsCommand {
  readonly type: 'retryRuns';
  readonly nowMs: number;
  readonly runIds: readonly string[];
  /** Only runs in this state (a bulk call's filter: they may have moved since); 0 = any retryable one. */
  readonly onlyState: number;
  /** Start them whatever their jobs' overlap policy (else FORBID / BUFFER_ONE queue them). */
  readonly ignoreOverlap: boolean;
  /**
   * The caller's principal name and request id, recorded on the runs it acts on (Run.requested_by
   * / request_id). Feature level 3 (feature-levels.ts); absent below it and for the leader's own.
   */
  readonly principal?: string;
  readonly requestId?: string;
}

export interface RaiseAlertItem {
  readonly jobId: string;
  /** The job's due slot the watchdog found without a run (its next fire at the check). */
  readonly slotMs: number;
  /** What the watchdog saw, in words (at most 1024 characters are kept). */
  readonly reason: string;
}

/**
 * The leader's watchdog found jobs whose due slot has no run past its grace (firing stalled):
 * each job whose AlertPolicy names on_watchdog gets one alert run per such slot (apply-alerts.ts).
 */
export interface RaiseAlertsCommand {
  readonly type: 'raiseAlerts';
  readonly nowMs: number;
  readonly items: readonly RaiseAlertItem[];
}

/** Creates or replaces a task type's limits (TaskTypeService.SetTaskType). */
export interface PutTaskTypeCommand {
  readonly type: 'putTaskType';
  readonly nowMs: number;
  /** updatedUnixMs is ignored: apply stamps nowMs. */
  readonly config: TaskTypeConfig;
}

/** Removes a task type's limits (TaskTypeService.DeleteTaskType). */
export interface DeleteTaskTypeCommand {
  readonly type: 'deleteTaskType';
  readonly nowMs: number;
  readonly taskType: string;
}

/**
 * Adds a bearer token (AuthService.CreateToken; the bootstrap admin at first start). The record
 * carries a salted hash, never the secret. A bootstrap put is applied at most once per cluster.
 */
export interface PutTokenCommand {
  readonly type: 'putToken';
  readonly nowMs: number;
  readonly token: TokenRecord;
  readonly bootstrap: boolean;
}

/** Revokes a bearer token by name or id (AuthService.RevokeToken). */
export interface DeleteTokenCommand {
  readonly type: 'deleteToken';
  readonly nowMs: number;
  readonly nameOrId: string;
}

export type FsmCommand =
  | PutJobCommand
  | PutJobsCommand
  | UpdateJobCommand
  | DeleteJobCommand
  | PauseJobCommand
  | ResumeJobCommand
  | TriggerJobCommand
  | BackfillJobCommand
  | FireRunsCommand
  | ClaimRunsCommand
  | FinishRunsCommand
  | ExpireLeasesCommand
  | CancelRunsCommand
  | MarkRunsCommand
  | TrimHistoryCommand
  | RetryRunsCommand
  | RaiseAlertsCommand
  | PutTaskTypeCommand
  | DeleteTaskTypeCommand
  | PutTokenCommand
  | DeleteTokenCommand
  | SetFeatureLevelCommand;

/**
 * Raises the cluster feature level (feature-levels.ts) to `level`; a no-op at or below the
 * current level (it never lowers). Proposed by the leader once every voter reports `level`.
 */
export interface SetFeatureLevelCommand {
  readonly type: 'setFeatureLevel';
  readonly nowMs: number;
  readonly level: number;
}

export type FsmCommandType = FsmCommand['type'];

/** A finish item with the defaults filled in: success, or failure with an error. */
export function finishSuccess(runId: string, fencingToken: number, output: Uint8Array = new Uint8Array()): FinishItem {
  return { runId, fencingToken, succeeded: true, output, errorType: '', errorMessage: '', retryable: false, timedOut: false };
}

export function finishFailure(
  runId: string,
  fencingToken: number,
  error: { type: string; message?: string; retryable: boolean; timedOut?: boolean },
): FinishItem {
  return {
    runId,
    fencingToken,
    succeeded: false,
    output: new Uint8Array(),
    errorType: error.type,
    errorMessage: error.message ?? '',
    retryable: error.retryable,
    timedOut: error.timedOut ?? false,
  };
}
