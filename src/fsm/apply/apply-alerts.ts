// Alerts that cannot be lost, and pause-on-failure (issue 31). When a run of a job enters FAILED
// (a failed attempt, retry due), DEAD or MISSED — whichever command did it — the same apply
// writes an alert run of the task type the job's AlertPolicy names for that event: a run of the
// system job "herald:alerts:<task type>", whose payload is the event as JSON. So an alert is
// committed with its cause or not at all, and is then dispatched, leased, retried and kept like
// any run. DEAD runs also count towards JobSpec.pause_after_dead (a success resets the count,
// run-transitions.ts). The leader's watchdog reports stalled jobs with a raiseAlerts command
// (applyRaiseAlerts). A job that names no alert task type and no pause_after_dead goes by its task
// type's defaults (TaskTypeConfig alerts / pause_after_dead, a replicated record read in the same
// apply). Deterministic: only the command's time and the stored state are used.
import { Job, JobSpec, JobState, type AlertPolicy } from '../../gen/herald/v1/job.js';
import { RunState, type Run } from '../../gen/herald/v1/run.js';
import { NOT_READ, type ApplyTxn } from '../store/apply-txn.js';
import type { RunStateEvent } from '../store/run-events.js';
import type { JobRecord } from '../store/records.js';
import type { RaiseAlertsCommand } from '../commands/commands.js';
import type { AlertsResult, AlertItemResult } from '../commands/results.js';
import { addActive, newRun } from './run-transitions.js';
import { recordUnfiredSlots } from './unfired-slots.js';
import { asItemError, itemError } from './item-errors.js';
import { manualRunId, parseRunId } from '../commands/run-id.js';
import { ALERT_JOB_PREFIX, SYSTEM_JOB_PREFIX, validateId } from '../commands/validation.js';
import { decodeTaskTypeRecord } from '../commands/task-type-config.js';
import { taskTypeKey } from '../store/key-layout.js';
import type { TaskTypeConfig } from '../../gen/herald/v1/task_type_service.js';

export type AlertEvent = 'failure' | 'dead' | 'missed' | 'watchdog';

/** The system job holding the alert runs of `taskType`. */
export function alertJobId(taskType: string): string {
  return ALERT_JOB_PREFIX + taskType;
}

/**
 * How alert runs are retried: a webhook that is down for a while (a deploy, an outage) still gets
 * the alert — 10 attempts, 1 s doubling to at most 5 min (about 20 minutes in all).
 */
export const ALERT_RETRY = { maxAttempts: 10, initialBackoffMs: 1_000, maxBackoffMs: 300_000, backoffMultiplier: 2, nonRetryableErrorTypes: [] };

function alertTaskType(policy: AlertPolicy | undefined, event: AlertEvent): string {
  if (!policy) return '';
  switch (event) {
    case 'failure':
      return policy.onFailure;
    case 'dead':
      return policy.onDead;
    case 'missed':
      return policy.onMissed;
    case 'watchdog':
      return policy.onWatchdog;
  }
}

function namesAny(p: AlertPolicy | undefined): p is AlertPolicy {
  return p !== undefined && (p.onFailure !== '' || p.onDead !== '' || p.onMissed !== '' || p.onWatchdog !== '');
}

/** The task type's config (its defaults for jobs that set none), as this apply sees the store. */
async function taskTypeConfig(txn: ApplyTxn, job: Job): Promise<TaskTypeConfig | undefined> {
  const taskType = job.spec?.taskType ?? '';
  if (taskType === '') return undefined;
  const bytes = await txn.getRaw(taskTypeKey(taskType));
  return bytes === undefined ? undefined : decodeTaskTypeRecord(bytes);
}

/** The job's own alert policy when it names any task type; else its task type's default. */
async function alertPolicyOf(txn: ApplyTxn, job: Job): Promise<AlertPolicy | undefined> {
  const own = job.spec?.alerts;
  if (namesAny(own)) return own;
  return (await taskTypeConfig(txn, job))?.alerts;
}

/** The job's pause_after_dead, or its task type's default when it sets none (0); `byDefault` says which. */
async function pauseAfterDeadOf(txn: ApplyTxn, job: Job): Promise<{ limit: number; byDefault: boolean }> {
  const own = job.spec?.pauseAfterDead ?? 0;
  if (own > 0) return { limit: own, byDefault: false };
  return { limit: (await taskTypeConfig(txn, job))?.pauseAfterDead ?? 0, byDefault: true };
}

function eventOf(state: RunState): AlertEvent | undefined {
  if (state === RunState.RUN_STATE_FAILED) return 'failure';
  if (state === RunState.RUN_STATE_DEAD) return 'dead';
  if (state === RunState.RUN_STATE_MISSED) return 'missed';
  return undefined;
}

/** What an alert run's payload says (docs/alerts.md): keys in a fixed order, so every replica writes the same bytes. */
export interface AlertPayload {
  readonly event: AlertEvent;
  readonly job_id: string;
  readonly task_type: string;
  readonly run_id: string;
  readonly slot_unix_ms: number;
  readonly state: string;
  readonly attempt: number;
  readonly error: { readonly type: string; readonly message: string } | null;
  readonly reason: string;
  readonly consecutive_dead_runs: number;
  readonly job_paused: boolean;
  readonly time_unix_ms: number;
}

function payloadOfRun(event: AlertEvent, run: Run, job: Job, nowMs: number): AlertPayload {
  const last = run.attempts[run.attempts.length - 1];
  const error = last?.error ? { type: last.error.type, message: last.error.message } : null;
  return {
    event,
    job_id: run.jobId,
    task_type: run.taskType,
    run_id: run.id,
    slot_unix_ms: run.slotUnixMs,
    state: RunState[run.state]!.replace('RUN_STATE_', ''),
    attempt: run.attempt,
    error,
    reason: run.reason,
    consecutive_dead_runs: job.consecutiveDeadRuns,
    job_paused: job.state === JobState.JOB_STATE_PAUSED,
    time_unix_ms: nowMs,
  };
}

function alertJobRecord(taskType: string, nowMs: number): JobRecord {
  const spec = JobSpec.fromPartial({
    taskType,
    // Never fires: the job is COMPLETED from the start and only ever gets alert runs.
    schedule: { kind: { $case: 'at', at: { atUnixMs: Math.max(1, nowMs) } } },
    retry: ALERT_RETRY,
    labels: { 'herald.system': 'alerts' },
  });
  const job = Job.fromPartial({ id: alertJobId(taskType), spec, state: JobState.JOB_STATE_COMPLETED, version: 1, createdUnixMs: nowMs, updatedUnixMs: nowMs });
  return { job, manualSeq: 0, heldRunId: '', terminalRuns: 0, trimDueMs: 0 };
}

/** Writes one alert run of `taskType` (creating its system job on first use); returns its id. */
export async function writeAlertRun(txn: ApplyTxn, taskType: string, payload: AlertPayload, nowMs: number): Promise<string> {
  const jobId = alertJobId(taskType);
  const rec = (await txn.getJob(jobId)) ?? alertJobRecord(taskType, nowMs);
  const id = manualRunId(jobId, nowMs, rec.manualSeq);
  rec.manualSeq += 1;
  await txn.getRun(parseRunId(id)!);
  const run = newRun(rec, { id, slotMs: nowMs, scheduledMs: nowMs, nowMs, state: RunState.RUN_STATE_PENDING, manual: true });
  run.run.payload = Buffer.from(JSON.stringify(payload));
  txn.putRun(run);
  addActive(rec);
  txn.putJob(rec);
  return id;
}

/** Counts a DEAD run and pauses the job once it reaches its pause_after_dead. */
async function countDead(txn: ApplyTxn, rec: JobRecord, run: Run, nowMs: number): Promise<void> {
  const job = rec.job;
  job.consecutiveDeadRuns += 1;
  const { limit, byDefault } = job.state === JobState.JOB_STATE_ACTIVE ? await pauseAfterDeadOf(txn, job) : { limit: 0, byDefault: false };
  if (limit > 0 && job.consecutiveDeadRuns >= limit) {
    // As PauseJob does: due slots never fired get their MISSED record first (I2).
    await recordUnfiredSlots(txn, rec, nowMs, 'came due but was not fired before the job paused itself (pause_after_dead)');
    job.state = JobState.JOB_STATE_PAUSED;
    job.pauseNote = `paused after ${job.consecutiveDeadRuns} consecutive DEAD runs (pause_after_dead: ${limit}${byDefault ? `, task type ${job.spec?.taskType ?? ''}'s default` : ''}; last: ${run.id}); resume with "herald job resume ${job.id}"`;
    job.version += 1;
    job.updatedUnixMs = nowMs;
  }
  txn.putJob(rec);
}

async function onRunEvent(txn: ApplyTxn, ev: RunStateEvent, nowMs: number): Promise<void> {
  const run = ev.rec.run;
  // Alert runs themselves raise nothing: no alert about an alert, no loop.
  if (run.jobId.startsWith(SYSTEM_JOB_PREFIX)) return;
  const event = eventOf(ev.state);
  if (!event) return;
  const loaded = txn.loadedJob(run.jobId);
  const rec = loaded === NOT_READ ? await txn.getJob(run.jobId) : loaded;
  if (!rec) return; // the job was deleted in this command: its runs went with it
  if (event === 'dead') await countDead(txn, rec, run, nowMs);
  const taskType = alertTaskType(await alertPolicyOf(txn, rec.job), event);
  if (taskType !== '') await writeAlertRun(txn, taskType, payloadOfRun(event, run, rec.job, nowMs), nowMs);
}

/**
 * Alerts and DEAD counts for the run events of the command just applied (the transaction records
 * them as runs are stored). Pausing a job may record MISSED slots: those are events too, handled
 * in the same loop.
 */
export async function applyRunEvents(txn: ApplyTxn, nowMs: number): Promise<void> {
  for (let events = txn.runEvents.take(); events; events = txn.runEvents.take()) {
    for (const ev of events) await onRunEvent(txn, ev, nowMs);
  }
}

/**
 * The leader's watchdog saw these jobs' due slots without a run past its grace (firing stalled).
 * Each job whose AlertPolicy names on_watchdog gets one alert run per stalled slot: a slot already
 * alerted (the job record keeps the latest) is not alerted again, whichever leader reports it.
 */
export async function applyRaiseAlerts(txn: ApplyTxn, cmd: RaiseAlertsCommand): Promise<AlertsResult> {
  const items: AlertItemResult[] = [];
  for (const item of cmd.items) {
    try {
      validateId(item.jobId, 'job_id');
    } catch (e) {
      items.push({ error: asItemError(e), runId: '' });
      continue;
    }
    const rec = await txn.getJob(item.jobId);
    if (!rec) {
      items.push({ error: itemError('JOB_NOT_FOUND', `job "${item.jobId}" does not exist`), runId: '' });
      continue;
    }
    const job = rec.job;
    const taskType = alertTaskType(await alertPolicyOf(txn, job), 'watchdog');
    // Fired meanwhile (the cursor moved past it), already alerted, or nobody to tell: nothing.
    if (taskType === '' || job.state !== JobState.JOB_STATE_ACTIVE || job.nextFireUnixMs !== item.slotMs || (rec.watchdogSlotMs ?? 0) >= item.slotMs) {
      items.push({ runId: '' });
      continue;
    }
    rec.watchdogSlotMs = item.slotMs;
    txn.putJob(rec);
    const payload: AlertPayload = {
      event: 'watchdog',
      job_id: job.id,
      task_type: job.spec?.taskType ?? '',
      run_id: '',
      slot_unix_ms: item.slotMs,
      state: '',
      attempt: 0,
      error: null,
      reason: item.reason.slice(0, 1024) || 'due slot has no run past the watchdog grace (firing stalled)',
      consecutive_dead_runs: job.consecutiveDeadRuns,
      job_paused: false,
      time_unix_ms: cmd.nowMs,
    };
    items.push({ runId: await writeAlertRun(txn, taskType, payload, cmd.nowMs) });
  }
  return { type: 'alerts', items };
}
