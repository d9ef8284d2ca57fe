// How a run is shown: a table row (run ls), aligned fields plus an attempts table (run get), and
// a stable JSON object for scripts.
import { AttemptOutcome, RunState, type Attempt, type Run } from '../../gen/herald/v1/run.js';
import { enumName, formatInstant, formatMs, formatWhen, payloadPreview } from './format.js';
import { payloadJson } from './job-view.js';

export const RUN_HEADERS = ['id', 'job', 'state', 'attempt', 'slot', 'finished', 'worker', 'late', 'kind'];
export const ATTEMPT_HEADERS = ['#', 'worker', 'token', 'started', 'ended', 'outcome', 'error'];

export function runState(run: Run): string {
  return enumName(RunState, run.state, 'RUN_STATE_');
}

/** Terminal states: the run will not change any more (FAILED is not one: a retry is scheduled). */
export function isTerminal(run: Run): boolean {
  return ![RunState.RUN_STATE_PENDING, RunState.RUN_STATE_RUNNING, RunState.RUN_STATE_FAILED, RunState.RUN_STATE_UNSPECIFIED].includes(run.state);
}

function runKind(run: Run): string {
  return run.manual ? 'manual' : run.backfilled ? 'backfill' : 'scheduled';
}

export function runRow(run: Run): string[] {
  return [
    run.id,
    run.jobId,
    runState(run),
    String(run.attempt),
    formatInstant(run.slotUnixMs),
    formatInstant(run.finishedUnixMs),
    run.workerId || '-',
    run.latenessMs ? formatMs(run.latenessMs) : '-',
    runKind(run),
  ];
}

export function runFields(run: Run, nowMs = Date.now()): Array<[string, string]> {
  const fields: Array<[string, string]> = [
    ['id', run.id],
    ['job', run.jobId],
    ['task type', run.taskType],
    ['state', runState(run) + (run.reason ? ` (${run.reason})` : '')],
    ['kind', runKind(run)],
    ['slot', formatInstant(run.slotUnixMs)],
    ['scheduled', formatInstant(run.scheduledUnixMs)],
    ['attempt', String(run.attempt)],
    ['worker', run.workerId || '-'],
    ['fencing token', run.fencingToken ? String(run.fencingToken) : '-'],
  ];
  if (run.waitingFor) fields.push(['waiting for', run.waitingFor]);
  if (run.state === RunState.RUN_STATE_RUNNING) fields.push(['lease until', formatWhen(run.leaseDeadlineUnixMs, nowMs)]);
  if (run.state === RunState.RUN_STATE_PENDING && run.notBeforeUnixMs) fields.push(['not before', formatWhen(run.notBeforeUnixMs, nowMs)]);
  if (run.redriveCount > 0) fields.push(['re-driven', `${run.redriveCount} time(s), last at ${formatInstant(run.redrivenUnixMs)}`]);
  // Who last acted on the run by hand (trigger, backfill, retry, cancel): only when recorded.
  if (run.requestedBy || run.requestId) fields.push(['requested by', [run.requestedBy || '-', run.requestId ? `(request ${run.requestId})` : ''].join(' ').trim()]);
  fields.push(
    ['created', formatInstant(run.createdUnixMs)],
    ['finished', formatInstant(run.finishedUnixMs)],
    ['lateness', formatMs(run.latenessMs)],
    ['output', payloadPreview(run.output, 200)],
  );
  return fields;
}

export function attemptRow(a: Attempt): string[] {
  return [
    String(a.number),
    a.workerId || '-',
    String(a.fencingToken),
    formatInstant(a.startedUnixMs),
    formatInstant(a.endedUnixMs),
    enumName(AttemptOutcome, a.outcome, 'ATTEMPT_OUTCOME_'),
    a.error ? `${a.error.type}: ${a.error.message}${a.error.retryable ? '' : ' (non-retryable)'}` : '-',
  ];
}

export function runJson(run: Run): Record<string, unknown> {
  const { payload: output, payloadBase64: outputBase64 } = payloadJson(run.output);
  return {
    id: run.id,
    jobId: run.jobId,
    taskType: run.taskType,
    state: runState(run),
    attempt: run.attempt,
    slotUnixMs: run.slotUnixMs,
    scheduledUnixMs: run.scheduledUnixMs,
    manual: run.manual,
    backfilled: run.backfilled,
    notBeforeUnixMs: run.notBeforeUnixMs,
    createdUnixMs: run.createdUnixMs,
    finishedUnixMs: run.finishedUnixMs,
    workerId: run.workerId,
    fencingToken: run.fencingToken,
    leaseDeadlineUnixMs: run.leaseDeadlineUnixMs,
    reason: run.reason,
    ...(run.waitingFor ? { waitingFor: run.waitingFor } : {}),
    output,
    ...(outputBase64 === undefined ? {} : { outputBase64 }),
    priority: run.priority,
    latenessMs: run.latenessMs,
    redriveCount: run.redriveCount,
    redrivenUnixMs: run.redrivenUnixMs,
    requestedBy: run.requestedBy,
    requestId: run.requestId,
    attempts: run.attempts.map((a) => ({
      number: a.number,
      workerId: a.workerId,
      fencingToken: a.fencingToken,
      startedUnixMs: a.startedUnixMs,
      endedUnixMs: a.endedUnixMs,
      outcome: enumName(AttemptOutcome, a.outcome, 'ATTEMPT_OUTCOME_'),
      error: a.error ? { type: a.error.type, message: a.error.message, retryable: a.error.retryable } : null,
    })),
  };
}
