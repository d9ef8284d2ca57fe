// Job commands: put (create), update, delete, pause, resume.
import { Job, JobState, type JobSpec } from '../../gen/herald/v1/job.js';
import { HeraldError } from '../../herald-error.js';
import { NOT_READ, type ApplyTxn } from '../store/apply-txn.js';
import type { DeleteJobCommand, PauseJobCommand, PutJobCommand, ResumeJobCommand, UpdateJobCommand } from '../commands/commands.js';
import { createIdemKey } from '../store/key-layout.js';
import { loadedIdem, lookupIdem, storeIdem } from './idempotency.js';
import type { JobRecord } from '../store/records.js';
import type { DeleteResult, ItemError, JobResult } from '../commands/results.js';
import { cancelActiveRuns } from './run-transitions.js';
import { asItemError, itemError } from './item-errors.js';
import { parseRunId } from '../commands/run-id.js';
import { firstSlotFrom, nextSlotAfter } from '../schedule/index.js';
import { recordUnfiredSlots } from './unfired-slots.js';
import { maxAgeOf, maxRunsOf, TRIM_DUE_NOW } from '../store/retention.js';
import { validateUserJobId, validateIdempotencyKey, validateJobSpec, validateNote, type SpecLimits } from '../commands/validation.js';

function withSchedule(job: Job, next: number | undefined): void {
  job.nextFireUnixMs = next ?? 0;
  if (job.state !== JobState.JOB_STATE_PAUSED) {
    job.state = next === undefined ? JobState.JOB_STATE_COMPLETED : JobState.JOB_STATE_ACTIVE;
  }
}

function notFound(jobId: string): ItemError {
  return itemError('JOB_NOT_FOUND', `job "${jobId}" does not exist`);
}

function jobOut(rec: JobRecord): Job {
  return Job.fromPartial(rec.job);
}

export async function applyPutJob(txn: ApplyTxn, cmd: PutJobCommand, limits: SpecLimits): Promise<JobResult> {
  try {
    validateUserJobId(cmd.jobId, 'job_id');
    validateIdempotencyKey(cmd.idempotencyKey);
    validateJobSpec(cmd.spec, txn.schedule, limits);
  } catch (e) {
    return { type: 'job', error: asItemError(e), created: false };
  }
  const idemKey = cmd.idempotencyKey === '' ? undefined : createIdemKey(cmd.idempotencyKey);
  if (idemKey) {
    // Reads of what a putJobs prefetched are synchronous: no promise per item of a create batch.
    const loadedPrior = loadedIdem(txn, idemKey, cmd.nowMs);
    const prior = loadedPrior === NOT_READ ? await lookupIdem(txn, idemKey, cmd.nowMs) : loadedPrior;
    if (prior?.error) return { type: 'job', error: itemError(prior.error.code, prior.error.message), created: false };
    if (prior) {
      const rec = await txn.getJob(prior.target);
      if (!rec) return { type: 'job', error: itemError('JOB_NOT_FOUND', `the job created with this idempotency key ("${prior.target}") was deleted`), created: false };
      return { type: 'job', job: jobOut(rec), created: false };
    }
  }
  const existing = txn.loadedJob(cmd.jobId);
  if (existing === NOT_READ ? await txn.getJob(cmd.jobId) : existing) {
    const error = itemError('ALREADY_EXISTS', `job "${cmd.jobId}" already exists`);
    // The key answers this from now on (see idempotency.ts): a late attempt of the same request
    // must not create the job after the client was told it exists.
    if (idemKey) storeIdem(txn, idemKey, '', cmd.nowMs, error);
    return { type: 'job', error, created: false };
  }
  // Every field spelled out (the type checker fails here when Job grows one), not fromPartial's
  // generic merge. The command's own spec object, not a copy: it carries the bytes it was decoded
  // from, so the record is written without encoding the spec again (job-record-codec.ts). Apply
  // never mutates it.
  const job: Job = {
    id: cmd.jobId,
    spec: cmd.spec,
    state: JobState.JOB_STATE_ACTIVE,
    version: 1,
    createdUnixMs: cmd.nowMs,
    updatedUnixMs: cmd.nowMs,
    nextFireUnixMs: 0,
    lastSlotUnixMs: 0,
    pauseNote: '',
    activeRuns: 0,
    consecutiveDeadRuns: 0,
    createdBy: cmd.principal ?? '',
    updatedBy: cmd.principal ?? '',
    createdRequestId: cmd.requestId ?? '',
    updatedRequestId: cmd.requestId ?? '',
  };
  withSchedule(job, firstSlotFrom(cmd.spec, cmd.nowMs, cmd.nowMs, 0, txn.schedule));
  const rec: JobRecord = { job, manualSeq: 0, heldRunId: '', terminalRuns: 0, trimDueMs: 0 };
  txn.putJob(rec);
  if (idemKey) storeIdem(txn, idemKey, cmd.jobId, cmd.nowMs);
  // The new record itself rather than a copy (a copy re-encodes the spec): the result is encoded
  // before any later entry runs, and later items of the same putJobs never change this job (a
  // repeated id is ALREADY_EXISTS, a repeated idempotency key answers with a copy).
  return { type: 'job', job: rec.job, created: true };
}

function scheduleBytes(spec: JobSpec): string {
  // Whatever decides slot times; a change to anything else keeps the job's fire cursor.
  return JSON.stringify([spec.schedule, spec.startUnixMs, spec.endUnixMs, spec.dst ?? null]);
}

async function loadForChange(txn: ApplyTxn, jobId: string, expectedVersion: number): Promise<JobRecord | ItemError> {
  try {
    validateUserJobId(jobId, 'job_id');
  } catch (e) {
    return asItemError(e);
  }
  const rec = await txn.getJob(jobId);
  if (!rec) return notFound(jobId);
  if (expectedVersion !== 0 && expectedVersion !== rec.job.version) {
    return itemError('VERSION_MISMATCH', `job "${jobId}" is at version ${rec.job.version}, not ${expectedVersion}`);
  }
  return rec;
}

export async function applyUpdateJob(txn: ApplyTxn, cmd: UpdateJobCommand, limits: SpecLimits): Promise<JobResult> {
  try {
    validateJobSpec(cmd.spec, txn.schedule, limits);
  } catch (e) {
    return { type: 'job', error: asItemError(e), created: false };
  }
  const rec = await loadForChange(txn, cmd.jobId, cmd.expectedVersion);
  if (!('job' in rec)) return { type: 'job', error: rec, created: false };
  const job = rec.job;
  const scheduleChanged = job.spec === undefined || scheduleBytes(job.spec) !== scheduleBytes(cmd.spec);
  if (scheduleChanged && job.state === JobState.JOB_STATE_ACTIVE) {
    // Due slots of the old schedule that were never fired keep a record (under the old spec).
    await recordUnfiredSlots(txn, rec, cmd.nowMs, 'came due but was not fired before the schedule changed (no leader or no quorum at the time)');
  }
  // A new retention is acted on by the next trim round, not only once more runs end.
  if (rec.terminalRuns > 0 && (maxRunsOf(job.spec) !== maxRunsOf(cmd.spec) || maxAgeOf(job.spec) !== maxAgeOf(cmd.spec))) rec.trimDueMs = TRIM_DUE_NOW;
  job.spec = cmd.spec;
  job.version += 1;
  job.updatedUnixMs = cmd.nowMs;
  job.updatedBy = cmd.principal ?? '';
  job.updatedRequestId = cmd.requestId ?? '';
  if (scheduleChanged) {
    // A new schedule starts from now (no catch-up for slots of a schedule that did not exist),
    // but never re-fires a slot at or before the last one handled.
    withSchedule(job, firstSlotFrom(cmd.spec, cmd.nowMs, job.createdUnixMs, job.lastSlotUnixMs, txn.schedule));
  }
  txn.putJob(rec);
  return { type: 'job', job: jobOut(rec), created: false };
}

export async function applyDeleteJob(txn: ApplyTxn, cmd: DeleteJobCommand): Promise<DeleteResult> {
  const rec = await loadForChange(txn, cmd.jobId, cmd.expectedVersion);
  if (!('job' in rec)) return { type: 'delete', error: rec, cancelledRuns: 0, signals: [] };
  const { cancelled, signals } = await cancelActiveRuns(txn, rec, cmd.nowMs, 'job deleted');
  // History goes with the job: nothing may refer to a job that no longer exists.
  for (const run of await txn.runsOfJob(cmd.jobId)) {
    const p = parseRunId(run.run.id);
    if (p) txn.deleteRun(p);
  }
  txn.deleteJob(cmd.jobId);
  return { type: 'delete', cancelledRuns: cancelled, signals };
}

/** `forgetMissed`: the forget-MISSED-on-pause negative control (unsafe-switches.ts), never true in production. */
export async function applyPauseJob(txn: ApplyTxn, cmd: PauseJobCommand, forgetMissed = false): Promise<JobResult> {
  try {
    validateNote(cmd.note, 'note');
  } catch (e) {
    return { type: 'job', error: asItemError(e), created: false };
  }
  const rec = await loadForChange(txn, cmd.jobId, 0);
  if (!('job' in rec)) return { type: 'job', error: rec, created: false };
  if (rec.job.state === JobState.JOB_STATE_COMPLETED) {
    return { type: 'job', error: itemError('INVALID_STATE', `job "${cmd.jobId}" is completed; there is nothing to pause`), created: false };
  }
  if (rec.job.state === JobState.JOB_STATE_ACTIVE && !forgetMissed) {
    await recordUnfiredSlots(txn, rec, cmd.nowMs, 'came due but was not fired before the job was paused (no leader or no quorum at the time)');
  }
  rec.job.state = JobState.JOB_STATE_PAUSED;
  rec.job.pauseNote = cmd.note;
  rec.job.version += 1;
  rec.job.updatedUnixMs = cmd.nowMs;
  rec.job.updatedBy = cmd.principal ?? '';
  rec.job.updatedRequestId = cmd.requestId ?? '';
  txn.putJob(rec);
  return { type: 'job', job: jobOut(rec), created: false };
}

export async function applyResumeJob(txn: ApplyTxn, cmd: ResumeJobCommand): Promise<JobResult> {
  const rec = await loadForChange(txn, cmd.jobId, 0);
  if (!('job' in rec)) return { type: 'job', error: rec, created: false };
  const job = rec.job;
  if (job.state === JobState.JOB_STATE_ACTIVE) return { type: 'job', job: jobOut(rec), created: false };
  if (job.state !== JobState.JOB_STATE_PAUSED) {
    return { type: 'job', error: itemError('INVALID_STATE', `job "${cmd.jobId}" is completed; there is nothing to resume`), created: false };
  }
  job.state = JobState.JOB_STATE_ACTIVE;
  job.pauseNote = '';
  job.version += 1;
  job.updatedUnixMs = cmd.nowMs;
  job.updatedBy = cmd.principal ?? '';
  job.updatedRequestId = cmd.requestId ?? '';
  // Slots that came due while paused are not caught up: the pause is their record (I2).
  if (!job.spec) throw new HeraldError('INTERNAL', `job ${job.id} has no spec`);
  withSchedule(job, nextSlotAfter(job.spec, Math.max(cmd.nowMs - 1, job.lastSlotUnixMs), job.createdUnixMs, txn.schedule));
  txn.putJob(rec);
  return { type: 'job', job: jobOut(rec), created: false };
}
