// Job spec flags of `job create` and `job update` → a JobSpec, through the SDK's builders so the
// CLI validates exactly like the SDK does. `update` starts from the stored spec and replaces only
// the fields whose flags were given.
import { readFileSync } from 'node:fs';
import { parseDuration } from '../client/duration.js';
import { at, cron, every, jobSpec, type JobSpecInput, type Misfire, type Overlap, type RetryInput, type ScheduleDef } from '../client/job-spec-builders.js';
import type { JobSpec } from '../gen/herald/v1/job.js';
import { parseInstant } from './parse-instant.js';
import { UsageError } from './usage-error.js';

export interface JobSpecFlags {
  taskType?: string;
  cron?: string;
  tz?: string;
  every?: string;
  at?: string;
  payload?: string;
  start?: string;
  end?: string;
  maxAttempts?: string;
  backoff?: string;
  overlap?: string;
  misfire?: string;
  startingDeadline?: string;
  jitter?: string;
  timeoutMs?: string;
  execTimeout?: string;
  lease?: string;
  label?: string[];
  priority?: string;
  maxPendingRuns?: string;
  alertOnFailure?: string;
  alertOnDead?: string;
  alertOnMissed?: string;
  alertOnWatchdog?: string;
  pauseAfterDead?: string;
}

function alertsOf(f: JobSpecFlags): JobSpecInput['alerts'] {
  if (f.alertOnFailure === undefined && f.alertOnDead === undefined && f.alertOnMissed === undefined && f.alertOnWatchdog === undefined) return undefined;
  const out: NonNullable<JobSpecInput['alerts']> = {};
  if (f.alertOnFailure !== undefined) out.onFailure = f.alertOnFailure;
  if (f.alertOnDead !== undefined) out.onDead = f.alertOnDead;
  if (f.alertOnMissed !== undefined) out.onMissed = f.alertOnMissed;
  if (f.alertOnWatchdog !== undefined) out.onWatchdog = f.alertOnWatchdog;
  return out;
}

const OVERLAP: Record<string, Overlap> = { allow: 'allow', forbid: 'forbid', 'buffer-one': 'bufferOne', bufferone: 'bufferOne', replace: 'replace' };
const MISFIRE: Record<string, Misfire> = { skip: 'skip', 'run-once': 'runOnce', runonce: 'runOnce', 'run-all': 'runAll', runall: 'runAll' };

function choice<T>(table: Record<string, T>, value: string, flag: string, shown: string[]): T {
  const v = table[value.toLowerCase().replace(/_/g, '-')];
  if (v === undefined) throw new UsageError(`${flag}: unknown value "${value}" (use one of: ${shown.join(', ')})`);
  return v;
}

function wholeNumber(value: string, flag: string): number {
  if (!/^-?\d+$/.test(value.trim())) throw new UsageError(`${flag}: "${value}" is not a whole number`);
  return Number(value);
}

/** `--label k=v` values → a map; a repeated key keeps the last value. */
export function parseLabels(items: readonly string[], flag = '--label'): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of items) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new UsageError(`${flag}: "${item}" is not key=value`);
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}

/** `--payload` is inline JSON, or @path for a file's bytes as they are. */
export function readPayload(value: string): string | Uint8Array {
  if (value.startsWith('@')) {
    const path = value.slice(1);
    try {
      return readFileSync(path);
    } catch (e) {
      throw new UsageError(`--payload: cannot read ${path}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  try {
    JSON.parse(value);
  } catch {
    throw new UsageError(`--payload: not valid JSON (quote it for the shell, e.g. --payload '{"n":1}', or use @file)`);
  }
  return value;
}

function scheduleOf(f: JobSpecFlags): ScheduleDef | undefined {
  const given = [f.cron !== undefined && '--cron', f.every !== undefined && '--every', f.at !== undefined && '--at'].filter(Boolean);
  if (given.length > 1) throw new UsageError(`${given.join(' and ')} cannot be combined: a job has one schedule`);
  if (f.tz !== undefined && f.cron === undefined) throw new UsageError('--tz only applies to --cron');
  if (f.cron !== undefined) return cron(f.cron, f.tz === undefined ? {} : { tz: f.tz });
  if (f.every !== undefined) return every(f.every);
  if (f.at !== undefined) return at(parseInstant(f.at, '--at'));
  return undefined;
}

function retryOf(f: JobSpecFlags): RetryInput | undefined {
  if (f.maxAttempts === undefined && f.backoff === undefined) return undefined;
  const r: RetryInput = {};
  if (f.maxAttempts !== undefined) r.maxAttempts = wholeNumber(f.maxAttempts, '--max-attempts');
  if (f.backoff !== undefined) r.backoff = f.backoff;
  return r;
}

function execTimeoutOf(f: JobSpecFlags): number | undefined {
  if (f.timeoutMs !== undefined && f.execTimeout !== undefined) throw new UsageError('--timeout-ms and --exec-timeout set the same thing; give one');
  if (f.timeoutMs !== undefined) {
    const ms = wholeNumber(f.timeoutMs, '--timeout-ms');
    if (ms < 0) throw new UsageError('--timeout-ms: must not be negative');
    return ms;
  }
  return f.execTimeout === undefined ? undefined : parseDuration(f.execTimeout, '--exec-timeout');
}

/** The SDK input for the fields whose flags were given (schedule and task type may be missing). */
function partialInput(f: JobSpecFlags): Partial<JobSpecInput> {
  const input: Partial<JobSpecInput> = {};
  if (f.taskType !== undefined) input.taskType = f.taskType;
  const schedule = scheduleOf(f);
  if (schedule) input.schedule = schedule;
  if (f.payload !== undefined) input.payload = readPayload(f.payload);
  if (f.start !== undefined) input.start = parseInstant(f.start, '--start');
  if (f.end !== undefined) input.end = parseInstant(f.end, '--end');
  const retry = retryOf(f);
  if (retry) input.retry = retry;
  if (f.overlap !== undefined) input.overlap = choice(OVERLAP, f.overlap, '--overlap', ['allow', 'forbid', 'buffer-one', 'replace']);
  if (f.misfire !== undefined) input.misfire = choice(MISFIRE, f.misfire, '--misfire', ['skip', 'run-once', 'run-all']);
  if (f.startingDeadline !== undefined) input.startingDeadline = f.startingDeadline;
  if (f.jitter !== undefined) input.jitter = f.jitter;
  const timeout = execTimeoutOf(f);
  if (timeout !== undefined) input.timeout = timeout;
  if (f.lease !== undefined) input.lease = f.lease;
  if (f.label !== undefined && f.label.length > 0) input.labels = parseLabels(f.label);
  if (f.priority !== undefined) input.priority = wholeNumber(f.priority, '--priority');
  if (f.maxPendingRuns !== undefined) input.maxPendingRuns = wholeNumber(f.maxPendingRuns, '--max-pending-runs');
  const alerts = alertsOf(f);
  if (alerts) input.alerts = alerts;
  if (f.pauseAfterDead !== undefined) input.pauseAfterDead = wholeNumber(f.pauseAfterDead, '--pause-after-dead');
  return input;
}

/** The spec for `job create`; --task-type and one of --cron/--every/--at are required. */
export function specForCreate(f: JobSpecFlags): JobSpec {
  const input = partialInput(f);
  if (input.taskType === undefined) throw new UsageError('--task-type is required (the task type workers subscribe to, e.g. demo)');
  if (input.schedule === undefined) throw new UsageError('a schedule is required: --cron "<expr>" [--tz <zone>], --every <duration> or --at <instant>');
  return jobSpec(input as JobSpecInput);
}

/** True when at least one spec flag was given. */
export function hasSpecFlags(f: JobSpecFlags): boolean {
  return Object.keys(partialInput(f)).length > 0;
}

/**
 * The spec for `job update`: the stored spec with the given fields replaced. Labels given are
 * merged into the stored ones (a key with an empty value, `--label k=`, removes that label).
 */
export function specForUpdate(f: JobSpecFlags, base: JobSpec): JobSpec {
  const input = partialInput(f);
  // Build with the stored task type and schedule where not given, so the builder validates the
  // result as a whole; then take only the replaced fields from it.
  const built = jobSpec({
    ...input,
    taskType: input.taskType ?? base.taskType,
    schedule: input.schedule ?? { schedule: base.schedule!, ...(base.dst ? { dst: base.dst } : {}) },
    labels: undefined,
  } as JobSpecInput);
  const out: JobSpec = { ...base, labels: { ...base.labels } };
  if (input.taskType !== undefined) out.taskType = built.taskType;
  if (input.schedule !== undefined) {
    out.schedule = built.schedule;
    out.dst = built.dst;
  }
  if (input.payload !== undefined) out.payload = built.payload;
  if (input.start !== undefined) out.startUnixMs = built.startUnixMs;
  if (input.end !== undefined) out.endUnixMs = built.endUnixMs;
  if (input.retry !== undefined) {
    const prev = base.retry ?? { maxAttempts: 0, initialBackoffMs: 0, maxBackoffMs: 0, backoffMultiplier: 0, nonRetryableErrorTypes: [] };
    out.retry = {
      ...prev,
      ...(input.retry.maxAttempts !== undefined ? { maxAttempts: built.retry!.maxAttempts } : {}),
      ...(input.retry.backoff !== undefined ? { initialBackoffMs: built.retry!.initialBackoffMs } : {}),
    };
  }
  if (input.overlap !== undefined) out.overlapPolicy = built.overlapPolicy;
  if (input.misfire !== undefined) out.misfirePolicy = built.misfirePolicy;
  if (input.startingDeadline !== undefined) out.startingDeadlineMs = built.startingDeadlineMs;
  if (input.jitter !== undefined) out.jitterMs = built.jitterMs;
  if (input.timeout !== undefined) out.executionTimeoutMs = built.executionTimeoutMs;
  if (input.lease !== undefined) out.leaseDurationMs = built.leaseDurationMs;
  if (input.priority !== undefined) out.priority = built.priority;
  if (input.maxPendingRuns !== undefined) out.maxPendingRuns = built.maxPendingRuns;
  if (input.alerts !== undefined) {
    // Only the events whose flags were given change; '' removes that event's alert.
    const prev = base.alerts ?? { onFailure: '', onDead: '', onMissed: '', onWatchdog: '' };
    const given = built.alerts!;
    out.alerts = {
      onFailure: input.alerts.onFailure !== undefined ? given.onFailure : prev.onFailure,
      onDead: input.alerts.onDead !== undefined ? given.onDead : prev.onDead,
      onMissed: input.alerts.onMissed !== undefined ? given.onMissed : prev.onMissed,
      onWatchdog: input.alerts.onWatchdog !== undefined ? given.onWatchdog : prev.onWatchdog,
    };
  }
  if (input.pauseAfterDead !== undefined) out.pauseAfterDead = built.pauseAfterDead;
  if (input.labels !== undefined) {
    for (const [k, v] of Object.entries(input.labels)) {
      if (v === '') delete out.labels[k];
      else out.labels[k] = v;
    }
  }
  return out;
}
