// State changes of runs that several commands share: creating a run, ending one (which updates
// its job's active set and releases a BUFFER_ONE run waiting behind it), cancelling.
import { AttemptOutcome, RunState, type Run } from '../../gen/herald/v1/run.js';
import { NOT_READ, type ApplyTxn } from '../store/apply-txn.js';
import type { JobRecord, RunRecord } from '../store/records.js';
import { heldRunsOf, isTerminal } from '../store/records.js';
import type { CancelSignal } from '../commands/results.js';
import { parseRunId } from '../commands/run-id.js';
import { NO_OUTPUT } from '../commands/run-record-codec.js';

export interface NewRunFields {
  readonly id: string;
  readonly slotMs: number;
  readonly scheduledMs: number;
  readonly nowMs: number;
  readonly state: RunState;
  readonly reason?: string;
  readonly manual?: boolean;
  readonly backfilled?: boolean;
  readonly held?: boolean;
  /** The caller of a trigger / backfill (Run.requested_by / request_id); '' for scheduled runs. */
  readonly requestedBy?: string;
  readonly requestId?: string;
}

/** A new run record of `job`; terminal records (MISSED/SKIPPED) are finished at creation. */
export function newRun(job: JobRecord, f: NewRunFields): RunRecord {
  const spec = job.job.spec;
  // Every field spelled out (the type checker fails here when Run grows one): fromPartial's
  // generic merge cost more than the rest of creating a run.
  const run: Run = {
    id: f.id,
    jobId: job.job.id,
    taskType: spec?.taskType ?? '',
    slotUnixMs: f.slotMs,
    scheduledUnixMs: f.scheduledMs,
    state: f.state,
    attempt: 0,
    attempts: [],
    backfilled: f.backfilled ?? false,
    manual: f.manual ?? false,
    notBeforeUnixMs: f.scheduledMs,
    createdUnixMs: f.nowMs,
    finishedUnixMs: isTerminal(f.state) ? f.nowMs : 0,
    workerId: '',
    fencingToken: 0,
    leaseDeadlineUnixMs: 0,
    reason: f.reason ?? '',
    output: NO_OUTPUT,
    priority: spec?.priority ?? 0,
    latenessMs: 0,
    redriveCount: 0,
    redrivenUnixMs: 0,
    payload: NO_OUTPUT,
    waitingFor: '',
    requestedBy: f.requestedBy ?? '',
    requestId: f.requestId ?? '',
  };
  return { run, held: f.held ?? false };
}

/** Counts a new non-terminal run as active on its job (its s\0 state key, written with the run, lists it). */
export function addActive(job: JobRecord): void {
  job.job.activeRuns += 1;
}

/** Counts a new held run (BUFFER_ONE, or a backfill queued under FORBID / BUFFER_ONE) on its job. */
export function addHeld(job: JobRecord): void {
  job.heldRuns = heldRunsOf(job) + 1;
}

/**
 * Bookkeeping after a run of `job` reached a terminal state: it leaves the active set (and the
 * held count when it was held), and once no unheld run of the job is active the next held one
 * becomes dispatchable: the BUFFER_ONE run first, then queued backfill runs, oldest slot first.
 * The caller has stored the run and stores the job afterwards. Synchronous unless a held run has
 * to be read: then the returned promise settles once it is released.
 */
export function onRunEnded(txn: ApplyTxn, job: JobRecord | undefined, runId: string, wasHeld = false): Promise<void> | undefined {
  if (!job) return undefined;
  job.job.activeRuns = Math.max(0, job.job.activeRuns - 1);
  let held = heldRunsOf(job);
  if (wasHeld || job.heldRunId === runId) held = Math.max(0, held - 1);
  if (job.heldRunId === runId) job.heldRunId = '';
  job.heldRuns = held;
  // Held runs are active too: when they are all that is left, the next one's turn has come.
  if (held === 0 || job.job.activeRuns > held) return undefined;
  job.heldRuns = held - 1;
  if (job.heldRunId === '') return releaseFirstQueued(txn, job.job.id);
  const k = txn.runIdKey(job.heldRunId);
  job.heldRunId = '';
  if (!k) return undefined;
  const loaded = txn.loadedRunAt(k.key);
  if (loaded !== NOT_READ) return releaseHeld(txn, loaded);
  return txn.getRunAt(k.key).then((held) => releaseHeld(txn, held));
}

function releaseHeld(txn: ApplyTxn, held: RunRecord | undefined): undefined {
  if (held && held.held) {
    held.held = false;
    txn.putRun(held);
  }
  return undefined;
}

/**
 * Releases the held run of the oldest slot (a queued backfill). Only reached with runs queued,
 * so the scan of the job's active runs is paid by queued jobs alone.
 */
async function releaseFirstQueued(txn: ApplyTxn, jobId: string): Promise<void> {
  for (const id of await txn.activeRunIdsOf(jobId)) {
    const p = parseRunId(id);
    const rec = p ? await txn.getRun(p) : undefined;
    if (rec?.held && !isTerminal(rec.run.state)) {
      releaseHeld(txn, rec);
      return;
    }
  }
}

/**
 * Stores a run that endRun just ended and updates its job (active set, BUFFER_ONE release).
 * Synchronous when the transaction has the records (commands prefetch them); otherwise the
 * returned promise settles once done.
 */
export function storeEndedRun(txn: ApplyTxn, rec: RunRecord, wasHeld = false): Promise<void> | undefined {
  txn.putRun(rec);
  const loaded = txn.loadedJob(rec.run.jobId);
  if (loaded === NOT_READ) return txn.getJob(rec.run.jobId).then((job) => updateJobOfEndedRun(txn, job, rec.run, wasHeld));
  return updateJobOfEndedRun(txn, loaded, rec.run, wasHeld);
}

function updateJobOfEndedRun(txn: ApplyTxn, job: JobRecord | undefined, run: Run, wasHeld: boolean): Promise<void> | undefined {
  const reading = onRunEnded(txn, job, run.id, wasHeld);
  if (!job) return reading;
  // A success ends a streak of DEAD runs (JobSpec.pause_after_dead; DEAD ones count in apply-alerts.ts).
  if (job.job.consecutiveDeadRuns > 0 && run.state === RunState.RUN_STATE_SUCCEEDED) job.job.consecutiveDeadRuns = 0;
  if (reading) return reading.then(() => txn.putJob(job));
  txn.putJob(job);
  return undefined;
}

/**
 * Ends a non-terminal run as CANCELLED (or another terminal state): closes a running attempt and
 * returns the signal for its worker when it was RUNNING. Does not touch the job record.
 */
export function endRun(rec: RunRecord, state: RunState, nowMs: number, reason: string, outcome = AttemptOutcome.ATTEMPT_OUTCOME_CANCELLED): CancelSignal | undefined {
  const run = rec.run;
  let signal: CancelSignal | undefined;
  if (run.state === RunState.RUN_STATE_RUNNING) {
    signal = { runId: run.id, workerId: run.workerId, fencingToken: run.fencingToken };
    const attempt = run.attempts[run.attempts.length - 1];
    if (attempt && attempt.endedUnixMs === 0) {
      attempt.endedUnixMs = nowMs;
      attempt.outcome = outcome;
    }
    run.leaseDeadlineUnixMs = 0;
  }
  run.state = state;
  run.finishedUnixMs = nowMs;
  run.reason = reason;
  rec.held = false;
  return signal;
}

/** Cancels every active run of a job (delete, REPLACE); returns signals for running ones. */
export async function cancelActiveRuns(
  txn: ApplyTxn,
  job: JobRecord,
  nowMs: number,
  reason: string,
): Promise<{ cancelled: number; signals: CancelSignal[] }> {
  const signals: CancelSignal[] = [];
  let cancelled = 0;
  for (const id of await txn.activeRunIdsOf(job.job.id)) {
    const p = parseRunId(id);
    const rec = p ? await txn.getRun(p) : undefined;
    if (!rec || isTerminal(rec.run.state)) continue;
    const s = endRun(rec, RunState.RUN_STATE_CANCELLED, nowMs, reason);
    if (s) signals.push(s);
    txn.putRun(rec);
    cancelled++;
  }
  job.job.activeRuns = 0;
  job.heldRunId = '';
  job.heldRuns = 0;
  return { cancelled, signals };
}
