// How a job is shown: a table row (job ls), aligned fields (job get) and a JSON object whose shape
// is stable for scripts (every field present, enums as lower-case names, payload as text).
import {
  DstFoldPolicy,
  DstGapPolicy,
  JobState,
  MisfirePolicy,
  OverlapPolicy,
  type Job,
  type JobSpec,
  type Schedule,
} from '../../gen/herald/v1/job.js';
import { describeSchedule, enumName, formatInstant, formatMs, formatWhen, payloadPreview, utf8OrUndefined } from './format.js';

export const JOB_HEADERS = ['id', 'task type', 'schedule', 'state', 'next fire', 'last slot', 'active', 'version'];

export function jobState(job: Job): string {
  return enumName(JobState, job.state, 'JOB_STATE_');
}

export function jobRow(job: Job, nowMs = Date.now()): string[] {
  return [
    job.id,
    job.spec?.taskType ?? '-',
    describeSchedule(job.spec?.schedule),
    jobState(job),
    job.state === JobState.JOB_STATE_ACTIVE ? formatWhen(job.nextFireUnixMs, nowMs) : '-',
    formatInstant(job.lastSlotUnixMs),
    String(job.activeRuns),
    String(job.version),
  ];
}

function labelsText(labels: Record<string, string>): string {
  const entries = Object.entries(labels);
  return entries.length === 0 ? '-' : entries.map(([k, v]) => `${k}=${v}`).join(',');
}

export function jobFields(job: Job, nowMs = Date.now()): Array<[string, string]> {
  const s = job.spec;
  const fields: Array<[string, string]> = [
    ['id', job.id],
    ['state', jobState(job) + (job.pauseNote ? ` (${job.pauseNote})` : '')],
    ['version', String(job.version)],
    ['task type', s?.taskType ?? '-'],
    ['schedule', describeSchedule(s?.schedule)],
    ['next fire', job.state === JobState.JOB_STATE_ACTIVE ? formatWhen(job.nextFireUnixMs, nowMs) : '-'],
    ['last slot', formatInstant(job.lastSlotUnixMs)],
    ['active runs', String(job.activeRuns)],
    ['dead in a row', String(job.consecutiveDeadRuns)],
  ];
  if (s) {
    fields.push(
      ['payload', payloadPreview(s.payload, 200)],
      ['start', formatInstant(s.startUnixMs)],
      ['end', formatInstant(s.endUnixMs)],
      ['max attempts', s.retry?.maxAttempts ? String(s.retry.maxAttempts) : 'default'],
      ['backoff', s.retry?.initialBackoffMs ? formatMs(s.retry.initialBackoffMs) : 'default'],
      ['overlap', s.overlapPolicy ? enumName(OverlapPolicy, s.overlapPolicy, 'OVERLAP_POLICY_') : 'default'],
      ['misfire', s.misfirePolicy ? enumName(MisfirePolicy, s.misfirePolicy, 'MISFIRE_POLICY_') : 'default'],
      ['starting deadline', formatMs(s.startingDeadlineMs)],
      ['jitter', formatMs(s.jitterMs)],
      ['exec timeout', formatMs(s.executionTimeoutMs)],
      ['lease', s.leaseDurationMs ? formatMs(s.leaseDurationMs) : 'default'],
      ['priority', String(s.priority)],
      ['labels', labelsText(s.labels)],
      ['alerts', alertsText(s)],
    );
  }
  // Who: shown only when recorded (auth on), so clusters without auth keep their output.
  fields.push(
    ['created', formatInstant(job.createdUnixMs) + byText(job.createdBy, job.createdRequestId)],
    ['updated', formatInstant(job.updatedUnixMs) + byText(job.updatedBy, job.updatedRequestId)],
  );
  return fields;
}

/** " by <name> (request <id>)": each part only when recorded (auth on; feature level 3 for the id). */
function byText(name: string, requestId: string): string {
  return (name === '' ? '' : ` by ${name}`) + (requestId === '' ? '' : ` (request ${requestId})`);
}

function scheduleJson(schedule: Schedule | undefined): Record<string, unknown> | null {
  const kind = schedule?.kind;
  if (!kind) return null;
  switch (kind.$case) {
    case 'cron':
      return { cron: { expression: kind.cron.expression, timeZone: kind.cron.timeZone || 'UTC' } };
    case 'every':
      return { every: { intervalMs: kind.every.intervalMs, anchorUnixMs: kind.every.anchorUnixMs } };
    case 'at':
      return { at: { atUnixMs: kind.at.atUnixMs } };
  }
}

export function payloadJson(bytes: Uint8Array): Record<string, string | null> {
  const text = utf8OrUndefined(bytes);
  return text === undefined ? { payload: null, payloadBase64: Buffer.from(bytes).toString('base64') } : { payload: text };
}

export function specJson(s: JobSpec): Record<string, unknown> {
  return {
    taskType: s.taskType,
    schedule: scheduleJson(s.schedule),
    ...payloadJson(s.payload),
    startUnixMs: s.startUnixMs,
    endUnixMs: s.endUnixMs,
    retry: {
      maxAttempts: s.retry?.maxAttempts ?? 0,
      initialBackoffMs: s.retry?.initialBackoffMs ?? 0,
      maxBackoffMs: s.retry?.maxBackoffMs ?? 0,
      backoffMultiplier: s.retry?.backoffMultiplier ?? 0,
      nonRetryableErrorTypes: s.retry?.nonRetryableErrorTypes ?? [],
    },
    executionTimeoutMs: s.executionTimeoutMs,
    leaseDurationMs: s.leaseDurationMs,
    misfirePolicy: enumName(MisfirePolicy, s.misfirePolicy, 'MISFIRE_POLICY_'),
    misfireMaxRuns: s.misfireMaxRuns,
    startingDeadlineMs: s.startingDeadlineMs,
    overlapPolicy: enumName(OverlapPolicy, s.overlapPolicy, 'OVERLAP_POLICY_'),
    jitterMs: s.jitterMs,
    dst: {
      gap: enumName(DstGapPolicy, s.dst?.gap ?? 0, 'DST_GAP_POLICY_'),
      fold: enumName(DstFoldPolicy, s.dst?.fold ?? 0, 'DST_FOLD_POLICY_'),
    },
    retention: { maxRuns: s.retention?.maxRuns ?? 0, maxAgeMs: s.retention?.maxAgeMs ?? 0 },
    labels: s.labels,
    priority: s.priority,
    alerts: { onFailure: s.alerts?.onFailure ?? '', onDead: s.alerts?.onDead ?? '', onMissed: s.alerts?.onMissed ?? '', onWatchdog: s.alerts?.onWatchdog ?? '' },
    pauseAfterDead: s.pauseAfterDead,
  };
}

/** "dead→alerts, missed→alerts; pause after 3 DEAD" or "-". */
function alertsText(s: JobSpec): string {
  const a = s.alerts;
  const parts = a ? (['failure', 'dead', 'missed', 'watchdog'] as const).map((e, i) => [e, [a.onFailure, a.onDead, a.onMissed, a.onWatchdog][i]!] as const).filter(([, t]) => t !== '').map(([e, t]) => `${e}→${t}`) : [];
  if (s.pauseAfterDead > 0) parts.push(`pause after ${s.pauseAfterDead} DEAD`);
  return parts.length > 0 ? parts.join(', ') : '-';
}

export function jobJson(job: Job): Record<string, unknown> {
  return {
    id: job.id,
    state: jobState(job),
    version: job.version,
    spec: job.spec ? specJson(job.spec) : null,
    createdUnixMs: job.createdUnixMs,
    updatedUnixMs: job.updatedUnixMs,
    nextFireUnixMs: job.nextFireUnixMs,
    lastSlotUnixMs: job.lastSlotUnixMs,
    pauseNote: job.pauseNote,
    activeRuns: job.activeRuns,
    consecutiveDeadRuns: job.consecutiveDeadRuns,
    createdBy: job.createdBy,
    updatedBy: job.updatedBy,
    createdRequestId: job.createdRequestId,
    updatedRequestId: job.updatedRequestId,
  };
}
