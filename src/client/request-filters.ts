// The shapes of the SDK's list and re-drive filters and pages, and the conversions from their
// friendly forms (state names, Dates) to what the protos carry.
import { JobState } from '../gen/herald/v1/job.js';
import { RunState } from '../gen/herald/v1/run.js';
import { InvalidSpecError } from './errors.js';
import type { Instant } from './job-spec-builders.js';
import type { TaskTypeConfig } from '../gen/herald/v1/task_type_service.js';

export type JobStateName = 'active' | 'paused' | 'completed';
export type RunStateName = 'pending' | 'running' | 'succeeded' | 'failed' | 'dead' | 'cancelled' | 'skipped' | 'missed';

export interface ListJobsFilter {
  state?: JobState | JobStateName;
  labels?: Record<string, string>;
  taskType?: string;
  /** Only jobs whose id starts with this. */
  idPrefix?: string;
  pageSize?: number;
  pageToken?: string;
}

export interface ListRunsFilter {
  jobId?: string;
  state?: RunState | RunStateName;
  pageSize?: number;
  pageToken?: string;
}

export interface RetryRunsFilter {
  jobId?: string;
  taskType?: string;
  /** dead (default), cancelled or failed. */
  state?: RunState | RunStateName;
  /** Only runs that ended in [finishedFrom, finishedTo). */
  finishedFrom?: Instant;
  finishedTo?: Instant;
  maxRuns?: number;
  pageToken?: string;
  ignoreOverlap?: boolean;
}

export interface Page<T> {
  items: T[];
  /** Pass as pageToken to get the next page; empty when there are no more. */
  nextPageToken: string;
}

export const JOB_STATES: Record<JobStateName, JobState> = {
  active: JobState.JOB_STATE_ACTIVE,
  paused: JobState.JOB_STATE_PAUSED,
  completed: JobState.JOB_STATE_COMPLETED,
};
export const RUN_STATES: Record<RunStateName, RunState> = {
  pending: RunState.RUN_STATE_PENDING,
  running: RunState.RUN_STATE_RUNNING,
  succeeded: RunState.RUN_STATE_SUCCEEDED,
  failed: RunState.RUN_STATE_FAILED,
  dead: RunState.RUN_STATE_DEAD,
  cancelled: RunState.RUN_STATE_CANCELLED,
  skipped: RunState.RUN_STATE_SKIPPED,
  missed: RunState.RUN_STATE_MISSED,
};

export function named<K extends string, V>(table: Record<K, V>, value: K | V | undefined, fallback: V, field: string): V {
  if (value === undefined) return fallback;
  if (typeof value !== 'string') return value;
  if (!Object.prototype.hasOwnProperty.call(table, value)) {
    throw new InvalidSpecError(`${field}: unknown value "${value}" (use one of: ${Object.keys(table).join(', ')})`, field);
  }
  return table[value as K];
}

export function instant(value: Instant): number {
  return value instanceof Date ? value.getTime() : value;
}

/** A task type's limits (TaskTypeConfig without its name); 0 or absent = no limit. */
export interface TaskTypeLimits {
  maxRunning?: number;
  ratePerSecond?: number;
  /** Starts at once when the bucket is full; 0 = the rate rounded up. */
  burst?: number;
  /** The alert policy of the task type's jobs that have none of their own (task type per event; "" = none). */
  alerts?: { onFailure?: string; onDead?: string; onMissed?: string; onWatchdog?: string };
  /** pause_after_dead for the task type's jobs that set none; 0 = never. */
  pauseAfterDead?: number;
}

/** The SetTaskType config of `limits` (absent = 0 / none). */
export function taskTypeConfigOf(taskType: string, limits: TaskTypeLimits): TaskTypeConfig {
  const a = limits.alerts;
  return {
    taskType,
    maxRunning: limits.maxRunning ?? 0,
    ratePerSecond: limits.ratePerSecond ?? 0,
    burst: limits.burst ?? 0,
    updatedUnixMs: 0,
    alerts: a ? { onFailure: a.onFailure ?? '', onDead: a.onDead ?? '', onMissed: a.onMissed ?? '', onWatchdog: a.onWatchdog ?? '' } : undefined,
    pauseAfterDead: limits.pauseAfterDead ?? 0,
  };
}
