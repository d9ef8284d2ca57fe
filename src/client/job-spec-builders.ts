// Typed builders for job specs, so users write `every('5m')` or
// `cron('0 2 * * *', { tz: 'Europe/Berlin' })` instead of protobuf. Every check that can be done
// without the server is done here with a message naming the option; the server validates again
// (DESIGN §7) because not every client is this SDK.
import {
  DstFoldPolicy,
  DstGapPolicy,
  MisfirePolicy,
  OverlapPolicy,
  type AlertPolicy,
  type DstPolicy,
  type HistoryRetention,
  type JobSpec,
  type RetryPolicy,
  type Schedule,
} from '../gen/herald/v1/job.js';
import { parseDuration, type Duration } from './duration.js';
import { InvalidSpecError } from './errors.js';

/** A schedule plus the spec-level settings that belong to it (DST handling for cron). */
export interface ScheduleDef {
  readonly schedule: Schedule;
  readonly dst?: DstPolicy;
}

/** An instant: a Date or milliseconds since the Unix epoch. */
export type Instant = Date | number;

const MIN_INTERVAL_MS = 1_000;

function instantMs(value: Instant, field: string): number {
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms <= 0) {
    throw new InvalidSpecError(`${field}: expected a valid Date or positive epoch milliseconds, got ${String(value)}`, field);
  }
  return ms;
}

function rejectUnknownKeys(obj: object, allowed: readonly string[], where: string): void {
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key)) {
      throw new InvalidSpecError(`${where}: unknown option "${key}" (known: ${allowed.join(', ')})`, `${where}.${key}`);
    }
  }
}

/** Fires every `interval` (at least 1s); slots are anchor + k·interval. */
export function every(interval: Duration, options: { anchor?: Instant } = {}): ScheduleDef {
  rejectUnknownKeys(options, ['anchor'], 'every');
  const intervalMs = parseDuration(interval, 'every');
  if (intervalMs < MIN_INTERVAL_MS) {
    throw new InvalidSpecError(`every: interval must be at least 1s, got ${intervalMs}ms`, 'every');
  }
  const anchorUnixMs = options.anchor === undefined ? 0 : instantMs(options.anchor, 'every.anchor');
  return { schedule: { kind: { $case: 'every', every: { intervalMs, anchorUnixMs } } } };
}

/** Fires once at an instant. */
export function at(when: Instant): ScheduleDef {
  return { schedule: { kind: { $case: 'at', at: { atUnixMs: instantMs(when, 'at') } } } };
}

export type DstGap = 'shiftForward' | 'skip';
export type DstFold = 'first' | 'last' | 'both' | 'auto';

export interface CronOptions {
  /** IANA time zone, e.g. "Europe/Berlin"; default UTC. */
  tz?: string;
  /** What happens to local times skipped (gap) or repeated (fold) by DST changes; fold defaults to 'auto' (see DstFoldPolicy). */
  dst?: { gap?: DstGap; fold?: DstFold };
}

const GAP: Record<DstGap, DstGapPolicy> = {
  shiftForward: DstGapPolicy.DST_GAP_POLICY_SHIFT_FORWARD,
  skip: DstGapPolicy.DST_GAP_POLICY_SKIP,
};
const FOLD: Record<DstFold, DstFoldPolicy> = {
  first: DstFoldPolicy.DST_FOLD_POLICY_FIRST,
  last: DstFoldPolicy.DST_FOLD_POLICY_LAST,
  both: DstFoldPolicy.DST_FOLD_POLICY_BOTH,
  auto: DstFoldPolicy.DST_FOLD_POLICY_AUTO,
};

function pick<K extends string, V>(table: Record<K, V>, key: unknown, field: string): V {
  if (typeof key !== 'string' || !Object.prototype.hasOwnProperty.call(table, key)) {
    throw new InvalidSpecError(
      `${field}: unknown value ${JSON.stringify(key)} (use one of: ${Object.keys(table).join(', ')})`,
      field,
    );
  }
  return table[key as K];
}

/** Throws unless `tz` is an IANA zone this runtime knows (the server uses the same tz database). */
export function checkTimeZone(tz: string, field = 'tz'): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
  } catch {
    throw new InvalidSpecError(`${field}: unknown time zone "${tz}" (use an IANA name like "Europe/Berlin")`, field);
  }
}

// Only a shape check: field count and characters. The server's cron parser is the authority on
// ranges and names; this catches the common mistakes (wrong field count, stray characters) early.
const CRON_FIELD = /^[0-9A-Za-z*?,/#LW-]+$/;

/** Fires on a 5-field (or 6-field, seconds first) cron expression in a time zone. */
export function cron(expression: string, options: CronOptions = {}): ScheduleDef {
  rejectUnknownKeys(options, ['tz', 'dst'], 'cron');
  if (typeof expression !== 'string' || expression.trim() === '') {
    throw new InvalidSpecError('cron: empty expression (e.g. "0 2 * * *")', 'cron');
  }
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) {
    throw new InvalidSpecError(
      `cron: "${expression}" has ${fields.length} fields; expected 5 (min hour dom month dow) or 6 (seconds first)`,
      'cron',
    );
  }
  const bad = fields.find((f) => !CRON_FIELD.test(f));
  if (bad !== undefined) throw new InvalidSpecError(`cron: invalid field "${bad}" in "${expression}"`, 'cron');
  const timeZone = options.tz ?? '';
  if (timeZone !== '') checkTimeZone(timeZone, 'cron.tz');
  let dst: DstPolicy | undefined;
  if (options.dst !== undefined) {
    rejectUnknownKeys(options.dst, ['gap', 'fold'], 'cron.dst');
    dst = {
      gap: options.dst.gap === undefined ? DstGapPolicy.DST_GAP_POLICY_UNSPECIFIED : pick(GAP, options.dst.gap, 'cron.dst.gap'),
      fold: options.dst.fold === undefined ? DstFoldPolicy.DST_FOLD_POLICY_UNSPECIFIED : pick(FOLD, options.dst.fold, 'cron.dst.fold'),
      foldAuto: false,
    };
  }
  const def: ScheduleDef = { schedule: { kind: { $case: 'cron', cron: { expression: fields.join(' '), timeZone } } } };
  return dst === undefined ? def : { ...def, dst };
}

export type Overlap = 'allow' | 'forbid' | 'bufferOne' | 'replace';
export type Misfire = 'skip' | 'runOnce' | 'runAll';

const OVERLAP: Record<Overlap, OverlapPolicy> = {
  allow: OverlapPolicy.OVERLAP_POLICY_ALLOW,
  forbid: OverlapPolicy.OVERLAP_POLICY_FORBID,
  bufferOne: OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE,
  replace: OverlapPolicy.OVERLAP_POLICY_REPLACE,
};
const MISFIRE: Record<Misfire, MisfirePolicy> = {
  skip: MisfirePolicy.MISFIRE_POLICY_SKIP,
  runOnce: MisfirePolicy.MISFIRE_POLICY_RUN_ONCE,
  runAll: MisfirePolicy.MISFIRE_POLICY_RUN_ALL,
};

export interface RetryInput {
  /** Total attempts including the first (1 disables retries). */
  maxAttempts?: number;
  /** Backoff before the second attempt. */
  backoff?: Duration;
  /** Upper bound of any backoff. */
  maxBackoff?: Duration;
  /** Growth factor per attempt (>= 1). */
  multiplier?: number;
  /** Error types that go DEAD at once. */
  nonRetryableErrorTypes?: string[];
}

/** A run's payload: bytes as given, a string as UTF-8, anything else as JSON. */
export type PayloadInput = Uint8Array | string | Record<string, unknown> | unknown[] | number | boolean | null;

export interface JobSpecInput {
  taskType: string;
  schedule: ScheduleDef;
  payload?: PayloadInput;
  retry?: RetryInput;
  overlap?: Overlap;
  misfire?: Misfire;
  /** For misfire 'runAll': the most catch-up runs per recovery. */
  misfireMaxRuns?: number;
  startingDeadline?: Duration;
  jitter?: Duration;
  /** Execution timeout of one attempt. */
  timeout?: Duration;
  /** Lease duration of a claimed run. */
  lease?: Duration;
  /** No slot before this instant. */
  start?: Instant;
  /** No slot at or after this instant. */
  end?: Instant;
  labels?: Record<string, string>;
  /** -1000..1000; higher is dispatched first. */
  priority?: number;
  retention?: { maxRuns?: number; maxAge?: Duration };
  /** Most runs pending or running at once; a slot beyond it is recorded MISSED (default 100, at most 10000). */
  maxPendingRuns?: number;
  /** Task types that get an alert run per event (docs/alerts.md). */
  alerts?: AlertsInput;
  /** Pause the job after this many consecutive DEAD runs (1..1000, 0 = never; a success resets the count). */
  pauseAfterDead?: number;
}

/** JobSpec.alerts: the task type alerted for each event ('' or absent: none). */
export interface AlertsInput {
  /** A failed attempt that will be retried. */
  onFailure?: string;
  /** A run that failed for good (DEAD). */
  onDead?: string;
  /** A slot recorded MISSED. */
  onMissed?: string;
  /** The leader's watchdog found the job's due slot not fired. */
  onWatchdog?: string;
}

const SPEC_KEYS = [
  'taskType', 'schedule', 'payload', 'retry', 'overlap', 'misfire', 'misfireMaxRuns', 'startingDeadline',
  'jitter', 'timeout', 'lease', 'start', 'end', 'labels', 'priority', 'retention', 'maxPendingRuns', 'alerts', 'pauseAfterDead',
] as const;

const ALERT_TASK_TYPE = /^[A-Za-z0-9._:-]{1,114}$/;

function alertPolicy(input: AlertsInput): AlertPolicy {
  if (input === null || typeof input !== 'object') throw new InvalidSpecError('alerts: expected an object of task types', 'alerts');
  rejectUnknownKeys(input, ['onFailure', 'onDead', 'onMissed', 'onWatchdog'], 'alerts');
  const one = (v: string | undefined, field: string): string => {
    if (v === undefined || v === '') return '';
    if (typeof v !== 'string' || !ALERT_TASK_TYPE.test(v)) {
      throw new InvalidSpecError(`alerts.${field}: a task type of 1–114 characters of A-Z a-z 0-9 . _ : - (got ${JSON.stringify(v)})`, `alerts.${field}`);
    }
    return v;
  };
  return { onFailure: one(input.onFailure, 'onFailure'), onDead: one(input.onDead, 'onDead'), onMissed: one(input.onMissed, 'onMissed'), onWatchdog: one(input.onWatchdog, 'onWatchdog') };
}

function intIn(value: unknown, min: number, max: number, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidSpecError(`${field}: expected a whole number in ${min}..${max}, got ${String(value)}`, field);
  }
  return value;
}

/** Encodes a payload: bytes as given, a string as UTF-8, anything else as JSON. */
export function encodePayload(payload: PayloadInput | undefined): Buffer {
  if (payload === undefined) return Buffer.alloc(0);
  if (payload instanceof Uint8Array) return Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  if (typeof payload === 'string') return Buffer.from(payload, 'utf8');
  const json = JSON.stringify(payload);
  if (json === undefined) throw new InvalidSpecError('payload: cannot be encoded as JSON', 'payload');
  return Buffer.from(json, 'utf8');
}

function retryPolicy(input: RetryInput): RetryPolicy {
  rejectUnknownKeys(input, ['maxAttempts', 'backoff', 'maxBackoff', 'multiplier', 'nonRetryableErrorTypes'], 'retry');
  const initialBackoffMs = input.backoff === undefined ? 0 : parseDuration(input.backoff, 'retry.backoff');
  const maxBackoffMs = input.maxBackoff === undefined ? 0 : parseDuration(input.maxBackoff, 'retry.maxBackoff');
  if (initialBackoffMs > 0 && maxBackoffMs > 0 && maxBackoffMs < initialBackoffMs) {
    throw new InvalidSpecError('retry.maxBackoff: must not be less than retry.backoff', 'retry.maxBackoff');
  }
  const multiplier = input.multiplier ?? 0;
  if (input.multiplier !== undefined && !(Number.isFinite(multiplier) && multiplier >= 1)) {
    throw new InvalidSpecError(`retry.multiplier: must be a number >= 1, got ${String(input.multiplier)}`, 'retry.multiplier');
  }
  const types = input.nonRetryableErrorTypes ?? [];
  if (!Array.isArray(types) || types.some((t) => typeof t !== 'string' || t === '')) {
    throw new InvalidSpecError('retry.nonRetryableErrorTypes: expected a list of non-empty strings', 'retry.nonRetryableErrorTypes');
  }
  return {
    maxAttempts: input.maxAttempts === undefined ? 0 : intIn(input.maxAttempts, 1, 1000, 'retry.maxAttempts'),
    initialBackoffMs,
    maxBackoffMs,
    backoffMultiplier: multiplier,
    nonRetryableErrorTypes: [...types],
  };
}

/** Builds the protobuf JobSpec from friendly options, validating everything it can. */
export function jobSpec(input: JobSpecInput): JobSpec {
  if (input === null || typeof input !== 'object') throw new InvalidSpecError('jobSpec: expected an options object');
  rejectUnknownKeys(input, SPEC_KEYS, 'jobSpec');
  if (typeof input.taskType !== 'string' || input.taskType.trim() === '') {
    throw new InvalidSpecError('taskType: required (the handler family workers subscribe to)', 'taskType');
  }
  const def = input.schedule;
  if (def === undefined || def === null || typeof def !== 'object' || !('schedule' in def) || def.schedule?.kind === undefined) {
    throw new InvalidSpecError('schedule: required; use every(), cron() or at()', 'schedule');
  }
  const startUnixMs = input.start === undefined ? 0 : instantMs(input.start, 'start');
  const endUnixMs = input.end === undefined ? 0 : instantMs(input.end, 'end');
  if (startUnixMs > 0 && endUnixMs > 0 && endUnixMs <= startUnixMs) {
    throw new InvalidSpecError('end: must be after start', 'end');
  }
  const labels: Record<string, string> = {};
  if (input.labels !== undefined) {
    if (input.labels === null || typeof input.labels !== 'object') throw new InvalidSpecError('labels: expected an object of strings', 'labels');
    for (const [k, v] of Object.entries(input.labels)) {
      if (k === '' || typeof v !== 'string') {
        throw new InvalidSpecError(`labels: "${k}" must be a non-empty key with a string value`, `labels.${k}`);
      }
      labels[k] = v;
    }
  }
  let retention: HistoryRetention | undefined;
  if (input.retention !== undefined) {
    rejectUnknownKeys(input.retention, ['maxRuns', 'maxAge'], 'retention');
    retention = {
      maxRuns: input.retention.maxRuns === undefined ? 0 : intIn(input.retention.maxRuns, 1, 1_000_000, 'retention.maxRuns'),
      maxAgeMs: input.retention.maxAge === undefined ? 0 : parseDuration(input.retention.maxAge, 'retention.maxAge'),
    };
  }
  return {
    taskType: input.taskType,
    payload: encodePayload(input.payload),
    schedule: def.schedule,
    startUnixMs,
    endUnixMs,
    retry: input.retry === undefined ? undefined : retryPolicy(input.retry),
    executionTimeoutMs: input.timeout === undefined ? 0 : parseDuration(input.timeout, 'timeout'),
    leaseDurationMs: input.lease === undefined ? 0 : parseDuration(input.lease, 'lease'),
    misfirePolicy: input.misfire === undefined ? MisfirePolicy.MISFIRE_POLICY_UNSPECIFIED : pick(MISFIRE, input.misfire, 'misfire'),
    misfireMaxRuns: input.misfireMaxRuns === undefined ? 0 : intIn(input.misfireMaxRuns, 1, 1_000_000, 'misfireMaxRuns'),
    startingDeadlineMs: input.startingDeadline === undefined ? 0 : parseDuration(input.startingDeadline, 'startingDeadline'),
    overlapPolicy: input.overlap === undefined ? OverlapPolicy.OVERLAP_POLICY_UNSPECIFIED : pick(OVERLAP, input.overlap, 'overlap'),
    jitterMs: input.jitter === undefined ? 0 : parseDuration(input.jitter, 'jitter'),
    dst: def.dst,
    retention,
    labels,
    priority: input.priority === undefined ? 0 : intIn(input.priority, -1000, 1000, 'priority'),
    maxPendingRuns: input.maxPendingRuns === undefined ? 0 : intIn(input.maxPendingRuns, 1, 10_000, 'maxPendingRuns'),
    alerts: input.alerts === undefined ? undefined : alertPolicy(input.alerts),
    pauseAfterDead: input.pauseAfterDead === undefined ? 0 : intIn(input.pauseAfterDead, 0, 1000, 'pauseAfterDead'),
  };
}
