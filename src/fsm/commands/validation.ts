// Input validation shared by the API layer (before proposing) and apply (which must never trust
// a command: a bad one is refused per item, never crashes or half-applies). Every failure is a
// HeraldError mapping to INVALID_ARGUMENT, with details.field set to the proto field path.
import {
  DstFoldPolicy,
  DstGapPolicy,
  MisfirePolicy,
  OverlapPolicy,
  type AlertPolicy,
  type JobSpec,
} from '../../gen/herald/v1/job.js';
import { HeraldError } from '../../herald-error.js';
import { validateSchedule, type ScheduleCaches } from '../schedule/index.js';

export const DEFAULT_MAX_PAYLOAD_BYTES = 256 * 1024;
export const MAX_OUTPUT_BYTES = 64 * 1024;
export const MAX_NOTE_CHARS = 1024;
export const MAX_TIME_MS = 999_999_999_999_999;
export const MAX_MISFIRE_RUNS = 1000;
export const MAX_RETENTION_RUNS = 10_000;
/** JobSpec.max_pending_runs of 0 means this. */
export const DEFAULT_MAX_PENDING_RUNS = 100;
/** The server-wide cap of JobSpec.max_pending_runs (a backlog is state every replica holds). */
export const MAX_PENDING_RUNS_CAP = 10_000;
export const MAX_ATTEMPTS = 100;
/** The cap of JobSpec.max_concurrent (0 = no limit). */
export const MAX_CONCURRENT_CAP = 10_000;
export const MAX_LABELS = 64;
export const DEFAULT_LEASE_MS = 30_000;

const ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;
const IDEM_RE = /^[\x20-\x7e]{1,128}$/;
const LABEL_KEY_RE = /^[A-Za-z0-9._/-]{1,63}$/;

export function isValidId(id: string): boolean {
  return ID_RE.test(id);
}

function bad(code: 'INVALID_ID' | 'INVALID_SPEC' | 'PAYLOAD_TOO_LARGE' | 'INVALID_ARGUMENT', field: string, msg: string): never {
  throw new HeraldError(code, `${field}: ${msg}`, { field });
}

function show(s: string): string {
  return JSON.stringify(s.length > 64 ? `${s.slice(0, 64)}…` : s);
}

/** Job, worker and task-type ids: 1–128 characters of [A-Za-z0-9._:-]. */
export function validateId(id: string, field: string): void {
  if (!isValidId(id)) {
    bad('INVALID_ID', field, `${show(id)} is not a valid id (1–128 characters of A-Z a-z 0-9 . _ : -)`);
  }
}

/** A ListJobs id prefix: empty, or the start of a valid id. */
export function validateIdPrefix(prefix: string, field: string): void {
  if (prefix !== '' && !isValidId(prefix)) {
    bad('INVALID_ARGUMENT', field, `${show(prefix)} cannot start an id (at most 128 characters of A-Z a-z 0-9 . _ : -)`);
  }
}

/** Job ids starting with this belong to the system (alert jobs, apply-alerts.ts): users may read, not write, them. */
export const SYSTEM_JOB_PREFIX = 'herald:';
/** System jobs that hold alert runs: "herald:alerts:<task type>". */
export const ALERT_JOB_PREFIX = 'herald:alerts:';
/** Longest alert task type: its system job id must stay a valid id. */
export const MAX_ALERT_TASK_TYPE_CHARS = 128 - ALERT_JOB_PREFIX.length;
export const MAX_PAUSE_AFTER_DEAD = 1000;

/** An alert policy's task types (a job's, or a task type's default): `field` prefixes the error's field. */
export function validateAlertPolicy(p: AlertPolicy | undefined, field: string, code: 'INVALID_SPEC' | 'INVALID_ARGUMENT'): void {
  if (!p) return;
  for (const [name, taskType] of [['on_failure', p.onFailure], ['on_dead', p.onDead], ['on_missed', p.onMissed], ['on_watchdog', p.onWatchdog]] as const) {
    if (taskType === '') continue;
    validateId(taskType, `${field}.${name}`);
    if (taskType.length > MAX_ALERT_TASK_TYPE_CHARS) bad(code, `${field}.${name}`, `alert task types are at most ${MAX_ALERT_TASK_TYPE_CHARS} characters (got ${taskType.length})`);
  }
}

/** A job id a user command may create or change: a valid id outside the system's "herald:" prefix. */
export function validateUserJobId(id: string, field: string): void {
  validateId(id, field);
  if (id.startsWith(SYSTEM_JOB_PREFIX)) {
    bad('INVALID_ARGUMENT', field, `${show(id)}: ids starting with "${SYSTEM_JOB_PREFIX}" are reserved for system jobs (alert runs); choose another id`);
  }
}

export function validateIdempotencyKey(key: string, field = 'idempotency_key'): void {
  if (key !== '' && !IDEM_RE.test(key)) {
    bad('INVALID_ARGUMENT', field, 'must be 1–128 printable ASCII characters');
  }
}

export function validateNote(note: string, field: string): void {
  if (note.length > MAX_NOTE_CHARS) bad('INVALID_ARGUMENT', field, `at most ${MAX_NOTE_CHARS} characters (got ${note.length})`);
}

function validateInstant(v: number, field: string): void {
  if (!Number.isSafeInteger(v) || v < 0 || v > MAX_TIME_MS) {
    bad('INVALID_SPEC', field, `must be an instant in unix ms between 0 and ${MAX_TIME_MS} (got ${v})`);
  }
}

function validateRange(v: number, lo: number, hi: number, field: string, unit = '', integer = true): void {
  if (!Number.isFinite(v) || v < lo || v > hi || (integer && !Number.isInteger(v))) {
    bad('INVALID_SPEC', field, `must be ${integer ? 'an integer ' : ''}between ${lo} and ${hi}${unit} (got ${v})`);
  }
}

function validateEnum(v: number, values: readonly number[], field: string): void {
  if (!values.includes(v)) bad('INVALID_SPEC', field, `unknown value ${v}`);
}

const DAY_MS = 86_400_000;

export interface SpecLimits {
  readonly maxPayloadBytes: number;
}

/** Everything about a JobSpec, including the schedule (cron syntax, time zone, bounds). */
export function validateJobSpec(spec: JobSpec | undefined, caches: ScheduleCaches, limits: SpecLimits = { maxPayloadBytes: DEFAULT_MAX_PAYLOAD_BYTES }): asserts spec is JobSpec {
  if (spec === undefined) bad('INVALID_SPEC', 'spec', 'is required');
  if (spec.taskType === '') bad('INVALID_SPEC', 'spec.task_type', 'is required');
  validateId(spec.taskType, 'spec.task_type');
  if (spec.payload.length > limits.maxPayloadBytes) {
    bad('PAYLOAD_TOO_LARGE', 'spec.payload', `is ${spec.payload.length} bytes; the limit is ${limits.maxPayloadBytes}`);
  }
  const kind = spec.schedule?.kind;
  if (kind === undefined) bad('INVALID_SPEC', 'spec.schedule', 'is required (one of at, cron, every)');
  if (kind.$case === 'at') {
    validateInstant(kind.at.atUnixMs, 'spec.schedule.at.at_unix_ms');
    if (kind.at.atUnixMs === 0) bad('INVALID_SPEC', 'spec.schedule.at.at_unix_ms', 'is required');
  } else if (kind.$case === 'every') {
    validateRange(kind.every.intervalMs, 1000, 366 * DAY_MS, 'spec.schedule.every.interval_ms', ' ms');
    validateInstant(kind.every.anchorUnixMs, 'spec.schedule.every.anchor_unix_ms');
  }
  validateInstant(spec.startUnixMs, 'spec.start_unix_ms');
  validateInstant(spec.endUnixMs, 'spec.end_unix_ms');
  if (spec.startUnixMs !== 0 && spec.endUnixMs !== 0 && spec.endUnixMs <= spec.startUnixMs) {
    bad('INVALID_SPEC', 'spec.end_unix_ms', 'must be after spec.start_unix_ms');
  }
  const retry = spec.retry;
  if (retry) {
    validateRange(retry.maxAttempts, 0, MAX_ATTEMPTS, 'spec.retry.max_attempts');
    validateRange(retry.initialBackoffMs, 0, DAY_MS, 'spec.retry.initial_backoff_ms', ' ms');
    validateRange(retry.maxBackoffMs, 0, 7 * DAY_MS, 'spec.retry.max_backoff_ms', ' ms');
    if (retry.maxBackoffMs !== 0 && retry.initialBackoffMs > retry.maxBackoffMs) {
      bad('INVALID_SPEC', 'spec.retry.max_backoff_ms', 'must not be below initial_backoff_ms');
    }
    if (retry.backoffMultiplier !== 0) validateRange(retry.backoffMultiplier, 1, 100, 'spec.retry.backoff_multiplier', '', false);
    if (retry.nonRetryableErrorTypes.length > 64) bad('INVALID_SPEC', 'spec.retry.non_retryable_error_types', 'at most 64 entries');
    retry.nonRetryableErrorTypes.forEach((t, i) => {
      if (t.length === 0 || t.length > 128) bad('INVALID_SPEC', `spec.retry.non_retryable_error_types[${i}]`, 'must be 1–128 characters');
    });
  }
  validateRange(spec.executionTimeoutMs, 0, 7 * DAY_MS, 'spec.execution_timeout_ms', ' ms');
  if (spec.leaseDurationMs !== 0) validateRange(spec.leaseDurationMs, 1000, DAY_MS, 'spec.lease_duration_ms', ' ms');
  validateEnum(spec.misfirePolicy, [0, MisfirePolicy.MISFIRE_POLICY_SKIP, MisfirePolicy.MISFIRE_POLICY_RUN_ONCE, MisfirePolicy.MISFIRE_POLICY_RUN_ALL], 'spec.misfire_policy');
  validateRange(spec.misfireMaxRuns, 0, MAX_MISFIRE_RUNS, 'spec.misfire_max_runs');
  validateRange(spec.startingDeadlineMs, 0, 366 * DAY_MS, 'spec.starting_deadline_ms', ' ms');
  validateEnum(
    spec.overlapPolicy,
    [0, OverlapPolicy.OVERLAP_POLICY_ALLOW, OverlapPolicy.OVERLAP_POLICY_FORBID, OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE, OverlapPolicy.OVERLAP_POLICY_REPLACE],
    'spec.overlap_policy',
  );
  validateRange(spec.jitterMs, 0, DAY_MS, 'spec.jitter_ms', ' ms');
  if (spec.dst) {
    validateEnum(spec.dst.gap, [0, DstGapPolicy.DST_GAP_POLICY_SHIFT_FORWARD, DstGapPolicy.DST_GAP_POLICY_SKIP], 'spec.dst.gap');
    validateEnum(spec.dst.fold, [0, DstFoldPolicy.DST_FOLD_POLICY_FIRST, DstFoldPolicy.DST_FOLD_POLICY_LAST, DstFoldPolicy.DST_FOLD_POLICY_BOTH], 'spec.dst.fold');
  }
  if (spec.retention) {
    validateRange(spec.retention.maxRuns, 0, MAX_RETENTION_RUNS, 'spec.retention.max_runs');
    validateRange(spec.retention.maxAgeMs, 0, 3660 * DAY_MS, 'spec.retention.max_age_ms', ' ms');
  }
  validateRange(spec.maxPendingRuns, 0, MAX_PENDING_RUNS_CAP, 'spec.max_pending_runs');
  validateRange(spec.maxConcurrent, 0, MAX_CONCURRENT_CAP, 'spec.max_concurrent');
  const labels = Object.entries(spec.labels);
  if (labels.length > MAX_LABELS) bad('INVALID_SPEC', 'spec.labels', `at most ${MAX_LABELS} labels (got ${labels.length})`);
  for (const [k, v] of labels) {
    if (!LABEL_KEY_RE.test(k)) bad('INVALID_SPEC', `spec.labels[${show(k)}]`, 'label keys are 1–63 characters of A-Z a-z 0-9 . _ / -');
    if (v.length > 256) bad('INVALID_SPEC', `spec.labels[${show(k)}]`, 'label values are at most 256 characters');
  }
  validateRange(spec.priority, -1000, 1000, 'spec.priority');
  validateAlertPolicy(spec.alerts, 'spec.alerts', 'INVALID_SPEC');
  validateRange(spec.pauseAfterDead, 0, MAX_PAUSE_AFTER_DEAD, 'spec.pause_after_dead');
  // Last: cron syntax and time zone are the most expensive checks.
  validateSchedule(spec, caches);
}
