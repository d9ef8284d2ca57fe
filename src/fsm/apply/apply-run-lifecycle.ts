// Run commands after firing: claim (lease + fencing token), finish, expire, cancel, mark.
//
// Fencing: a claim's token is the Raft index of its entry, so tokens only grow. finish and
// expire act only on a RUNNING run carrying exactly that token; anything else is refused per item
// with STALE_FENCING_TOKEN and a reason (STALE_TOKEN: a newer claim exists; NOT_RUNNING: the run
// ended, was cancelled or its lease expired) so the worker learns it lost the lease.
import { Attempt, AttemptOutcome, RunError, RunState } from '../../gen/herald/v1/run.js';
import { NOT_READ, type ApplyTxn, type NotRead } from '../store/apply-txn.js';
import type {
  CancelRunsCommand,
  ClaimRunsCommand,
  ExpireLeasesCommand,
  FinishItem,
  FinishRunsCommand,
  MarkRunsCommand,
} from '../commands/commands.js';
import { MAX_CLAIM_AHEAD_MS } from '../commands/commands.js';
import { budgetAttempts, isDispatchable, isTerminal, type RunRecord } from '../store/records.js';
import type { CancelResult, CancelSignal, ClaimItemResult, ClaimResult, ItemError, RunItemResult, RunItemsResult } from '../commands/results.js';
import { endRun, storeEndedRun } from './run-transitions.js';
import { asItemError, itemError } from './item-errors.js';
import { NO_OUTPUT } from '../commands/run-record-codec.js';
import { effectiveRetry, retryBackoffMs } from '../schedule/index.js';
import { MAX_OUTPUT_BYTES, validateId, validateNote } from '../commands/validation.js';

function runNotFound(runId: string): ItemError {
  return itemError('RUN_NOT_FOUND', `run "${runId}" does not exist`, 'UNKNOWN_RUN');
}

/**
 * The run as the transaction has it (commands prefetch their runs), or its typed refusal; NOT_READ
 * when it has not been read (then loadRun reads it). Items of the hot commands (claim, finish) go
 * through this first: an async read per item cost more than the item's own work.
 */
function loadedRun(txn: ApplyTxn, runId: string): RunRecord | ItemError | NotRead {
  const k = txn.runIdKey(runId);
  if (!k) return itemError('INVALID_ID', `"${runId.slice(0, 200)}" is not a run id`);
  const rec = txn.loadedRunAt(k.key);
  if (rec === NOT_READ) return NOT_READ;
  return rec ?? runNotFound(runId);
}

async function loadRun(txn: ApplyTxn, runId: string): Promise<RunRecord | ItemError> {
  const loaded = loadedRun(txn, runId);
  if (loaded !== NOT_READ) return loaded;
  return (await txn.getRunAt(txn.runIdKey(runId)!.key)) ?? runNotFound(runId);
}

/** The run, if it is RUNNING under `token`; otherwise the typed refusal. */
function fenced(rec: RunRecord | ItemError, runId: string, token: number, acceptStale: boolean): RunRecord | ItemError {
  if (!('run' in rec)) return rec;
  const run = rec.run;
  if (acceptStale && run.state === RunState.RUN_STATE_RUNNING) return rec; // negative control only
  if (token !== run.fencingToken) {
    return itemError('STALE_FENCING_TOKEN', `run "${runId}": token ${token} is not the current one (${run.fencingToken})`, 'STALE_TOKEN');
  }
  if (run.state !== RunState.RUN_STATE_RUNNING) {
    return itemError('STALE_FENCING_TOKEN', `run "${runId}" is ${RunState[run.state]}, no longer running under token ${token}`, 'NOT_RUNNING');
  }
  return rec;
}

async function loadFenced(txn: ApplyTxn, runId: string, token: number, acceptStale = false): Promise<RunRecord | ItemError> {
  return fenced(await loadRun(txn, runId), runId, token, acceptStale);
}

/** Words for a budget count that leaves earlier attempts out. */
function sinceRedrive(rec: RunRecord): string {
  return rec.run.redriveCount > 0 ? ' since the run was re-driven' : '';
}

function currentAttempt(rec: RunRecord): Attempt | undefined {
  return rec.run.attempts[rec.run.attempts.length - 1];
}

/** Reads the named runs and their jobs into the transaction in two batched reads. */
export async function prefetch(txn: ApplyTxn, runIds: readonly string[]): Promise<void> {
  const keys: string[] = [];
  const jobIds: string[] = [];
  for (const id of runIds) {
    const k = txn.runIdKey(id);
    if (!k) continue;
    keys.push(k.key);
    jobIds.push(k.p.jobId);
  }
  await txn.prefetchRunKeys(keys);
  await txn.prefetchJobs(jobIds);
}

/**
 * Ends a run for good and updates its job (active set, BUFFER_ONE release). Synchronous when the
 * records are loaded; otherwise the returned promise settles once done.
 */
function finishFor(txn: ApplyTxn, rec: RunRecord, state: RunState, nowMs: number, reason: string, outcome?: AttemptOutcome): Promise<void> | undefined {
  const wasHeld = rec.held;
  endRun(rec, state, nowMs, reason, outcome);
  return storeEndedRun(txn, rec, wasHeld);
}

export async function applyClaimRuns(txn: ApplyTxn, cmd: ClaimRunsCommand, token: number): Promise<ClaimResult> {
  await prefetch(txn, cmd.items.map((i) => i.runId));
  const items: ClaimItemResult[] = [];
  const ahead = cmd.aheadMs ?? 0;
  const dueBy = cmd.nowMs + (ahead > 0 && ahead <= MAX_CLAIM_AHEAD_MS ? ahead : 0);
  for (const item of cmd.items) {
    try {
      validateId(item.workerId, 'worker_id');
    } catch (e) {
      items.push({ error: asItemError(e) });
      continue;
    }
    const loaded = loadedRun(txn, item.runId);
    const rec = loaded === NOT_READ ? await loadRun(txn, item.runId) : loaded;
    if (!('run' in rec)) {
      items.push({ error: rec });
      continue;
    }
    const run = rec.run;
    if (!isDispatchable(rec)) {
      const why = rec.held ? 'queued behind an active run of its job (overlap policy)' : RunState[run.state];
      items.push({ error: itemError('INVALID_STATE', `run "${run.id}" is not waiting for a worker (${why})`, 'NOT_READY') });
      continue;
    }
    if (run.notBeforeUnixMs > dueBy) {
      items.push({ error: itemError('INVALID_STATE', `run "${run.id}" may not start before ${run.notBeforeUnixMs}`, 'NOT_DUE') });
      continue;
    }
    // Claimed ahead (dispatch lead): the attempt starts when the worker is told to start it.
    const startMs = Math.max(cmd.nowMs, run.notBeforeUnixMs);
    const loadedJob = txn.loadedJob(run.jobId);
    const job = loadedJob === NOT_READ ? await txn.getJob(run.jobId) : loadedJob;
    const spec = job?.job.spec;
    const leaseMs = spec && spec.leaseDurationMs > 0 ? spec.leaseDurationMs : (cmd.defaultLeaseMs ?? 0);
    const leaseDeadline = item.leaseDeadlineMs === 0 && leaseMs > 0 ? startMs + leaseMs : item.leaseDeadlineMs;
    if (leaseDeadline <= cmd.nowMs) {
      const what = item.leaseDeadlineMs === 0 ? 'no lease deadline and no lease duration (job or command default)' : `lease deadline ${item.leaseDeadlineMs} is not after now (${cmd.nowMs})`;
      items.push({ error: itemError('INVALID_ARGUMENT', what) });
      continue;
    }
    const deadline = spec?.startingDeadlineMs ?? 0;
    // A re-driven run was asked for now: its slot's starting deadline no longer applies.
    if (run.attempt === 0 && !run.manual && !run.backfilled && run.redriveCount === 0 && deadline > 0 && cmd.nowMs > run.scheduledUnixMs + deadline) {
      await finishFor(txn, rec, RunState.RUN_STATE_MISSED, cmd.nowMs, `not started within the starting deadline of ${deadline} ms`);
      items.push({ error: itemError('INVALID_STATE', `run "${run.id}" missed its starting deadline; recorded MISSED`, 'DEADLINE_PASSED') });
      continue;
    }
    run.attempt += 1;
    const attempt: Attempt = { number: run.attempt, workerId: item.workerId, fencingToken: token, startedUnixMs: startMs, endedUnixMs: 0, outcome: AttemptOutcome.ATTEMPT_OUTCOME_UNSPECIFIED, error: undefined };
    // A first attempt gets a list of exactly one (a push onto an empty array reserves room for 16).
    if (run.attempts.length === 0) run.attempts = [attempt];
    else run.attempts.push(attempt);
    if (run.attempt === 1) run.latenessMs = Math.max(0, startMs - run.scheduledUnixMs);
    run.state = RunState.RUN_STATE_RUNNING;
    run.workerId = item.workerId;
    run.fencingToken = token;
    run.leaseDeadlineUnixMs = leaseDeadline;
    txn.putRun(rec);
    items.push({
      run: {
        id: run.id,
        jobId: run.jobId,
        taskType: run.taskType,
        slotUnixMs: run.slotUnixMs,
        scheduledUnixMs: run.scheduledUnixMs,
        notBeforeUnixMs: run.notBeforeUnixMs,
        attempt: run.attempt,
        fencingToken: token,
        latenessMs: run.latenessMs,
        leaseDeadlineUnixMs: leaseDeadline,
        leaseDurationMs: leaseMs,
        executionTimeoutMs: spec?.executionTimeoutMs ?? 0,
        // An alert run carries its own (the event); every other run its job's.
        payload: run.payload.length > 0 ? run.payload : (spec?.payload ?? NO_OUTPUT),
        manual: run.manual,
        backfilled: run.backfilled,
      },
    });
  }
  return { type: 'claim', items };
}

async function finishOne(txn: ApplyTxn, nowMs: number, item: FinishItem, acceptStale: boolean): Promise<RunItemResult> {
  const unspecified = RunState.RUN_STATE_UNSPECIFIED;
  if (item.succeeded && item.output.length > MAX_OUTPUT_BYTES) {
    return { error: itemError('INVALID_ARGUMENT', `output is ${item.output.length} bytes; the limit is ${MAX_OUTPUT_BYTES}`), state: unspecified };
  }
  const loaded = loadedRun(txn, item.runId);
  const rec = fenced(loaded === NOT_READ ? await loadRun(txn, item.runId) : loaded, item.runId, item.fencingToken, acceptStale);
  if (!('run' in rec)) return { error: rec, state: unspecified };
  const run = rec.run;
  const attempt = currentAttempt(rec);
  if (item.succeeded) {
    // Copied (the command's bytes are not the run's to keep); most runs share the empty one.
    run.output = item.output.length === 0 ? NO_OUTPUT : Buffer.from(item.output);
    if (attempt) attempt.outcome = AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED;
    const reading = finishFor(txn, rec, RunState.RUN_STATE_SUCCEEDED, nowMs, '', AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED);
    if (reading) await reading;
    return { state: run.state };
  }
  const error = RunError.fromPartial({ type: item.errorType, message: item.errorMessage, retryable: item.retryable || item.timedOut });
  const outcome = item.timedOut ? AttemptOutcome.ATTEMPT_OUTCOME_TIMED_OUT : AttemptOutcome.ATTEMPT_OUTCOME_FAILED;
  if (attempt) attempt.error = error;
  const job = await txn.getJob(run.jobId);
  const policy = effectiveRetry(job?.job.spec?.retry);
  let dead = '';
  if (!error.retryable) dead = `error${error.type ? ` ${error.type}` : ''} is not retryable`;
  else if (policy.nonRetryableErrorTypes.includes(error.type)) dead = `error type ${error.type} is never retried by the job's retry policy`;
  // The budget counts the attempts since the run's last re-drive (all of them when never re-driven).
  else if (budgetAttempts(rec) >= policy.maxAttempts) dead = `attempt ${budgetAttempts(rec)} of ${policy.maxAttempts}${sinceRedrive(rec)} failed`;
  if (dead) {
    await finishFor(txn, rec, RunState.RUN_STATE_DEAD, nowMs, dead, outcome);
    return { state: run.state };
  }
  if (attempt) {
    attempt.endedUnixMs = nowMs;
    attempt.outcome = outcome;
  }
  run.state = RunState.RUN_STATE_FAILED;
  run.leaseDeadlineUnixMs = 0;
  run.notBeforeUnixMs = nowMs + retryBackoffMs(job?.job.spec?.retry, budgetAttempts(rec) + 1, run.id);
  txn.putRun(rec);
  return { state: run.state };
}

export async function applyFinishRuns(txn: ApplyTxn, cmd: FinishRunsCommand, acceptStale = false): Promise<RunItemsResult> {
  await prefetch(txn, cmd.items.map((i) => i.runId));
  const items: RunItemResult[] = [];
  for (const item of cmd.items) items.push(await finishOne(txn, cmd.nowMs, item, acceptStale));
  return { type: 'runItems', items };
}

export async function applyExpireLeases(txn: ApplyTxn, cmd: ExpireLeasesCommand, acceptStale = false): Promise<RunItemsResult> {
  await prefetch(txn, cmd.items.map((i) => i.runId));
  const items: RunItemResult[] = [];
  for (const item of cmd.items) {
    const rec = await loadFenced(txn, item.runId, item.fencingToken, acceptStale);
    if (!('run' in rec)) {
      items.push({ error: rec, state: RunState.RUN_STATE_UNSPECIFIED });
      continue;
    }
    const run = rec.run;
    const job = await txn.getJob(run.jobId);
    const policy = effectiveRetry(job?.job.spec?.retry);
    if (budgetAttempts(rec) >= policy.maxAttempts) {
      // A worker that dies on every attempt (a poison run) must not loop forever.
      const what = `lease expired on attempt ${budgetAttempts(rec)} of ${policy.maxAttempts}${sinceRedrive(rec)}`;
      await finishFor(txn, rec, RunState.RUN_STATE_DEAD, cmd.nowMs, what, AttemptOutcome.ATTEMPT_OUTCOME_LEASE_EXPIRED);
    } else {
      const attempt = currentAttempt(rec);
      if (attempt) {
        attempt.endedUnixMs = cmd.nowMs;
        attempt.outcome = AttemptOutcome.ATTEMPT_OUTCOME_LEASE_EXPIRED;
      }
      // Ready again at once; the next claim carries a higher token (a later Raft index).
      run.state = RunState.RUN_STATE_PENDING;
      run.leaseDeadlineUnixMs = 0;
      run.notBeforeUnixMs = cmd.nowMs;
      txn.putRun(rec);
    }
    items.push({ state: run.state });
  }
  return { type: 'runItems', items };
}

export async function applyCancelRuns(txn: ApplyTxn, cmd: CancelRunsCommand): Promise<CancelResult> {
  await prefetch(txn, cmd.items.map((i) => i.runId));
  const items: CancelResult['items'][number][] = [];
  const signals: CancelSignal[] = [];
  for (const item of cmd.items) {
    try {
      validateNote(item.reason, 'reason');
    } catch (e) {
      items.push({ error: asItemError(e) });
      continue;
    }
    const rec = await loadRun(txn, item.runId);
    if (!('run' in rec)) {
      items.push({ error: rec });
      continue;
    }
    if (isTerminal(rec.run.state)) {
      items.push({ error: itemError('INVALID_STATE', `run "${rec.run.id}" already ended (${RunState[rec.run.state]})`) });
      continue;
    }
    const wasHeld = rec.held;
    const signal = endRun(rec, RunState.RUN_STATE_CANCELLED, cmd.nowMs, item.reason || 'cancelled');
    rec.run.requestedBy = cmd.principal ?? '';
    rec.run.requestId = cmd.requestId ?? '';
    await storeEndedRun(txn, rec, wasHeld);
    if (signal) signals.push(signal);
    items.push({ run: rec.run });
  }
  return { type: 'cancel', items, signals };
}

export async function applyMarkRuns(txn: ApplyTxn, cmd: MarkRunsCommand): Promise<RunItemsResult> {
  await prefetch(txn, cmd.items.map((i) => i.runId));
  const items: RunItemResult[] = [];
  for (const item of cmd.items) {
    const rec = await loadRun(txn, item.runId);
    if (!('run' in rec)) {
      items.push({ error: rec, state: RunState.RUN_STATE_UNSPECIFIED });
      continue;
    }
    const s = rec.run.state;
    if (s !== RunState.RUN_STATE_PENDING && s !== RunState.RUN_STATE_FAILED) {
      items.push({ error: itemError('INVALID_STATE', `run "${rec.run.id}" is ${RunState[s]}; only waiting runs can be marked`), state: RunState.RUN_STATE_UNSPECIFIED });
      continue;
    }
    const state = item.outcome === 'missed' ? RunState.RUN_STATE_MISSED : RunState.RUN_STATE_SKIPPED;
    await finishFor(txn, rec, state, cmd.nowMs, item.reason.slice(0, 1024) || (item.outcome === 'missed' ? 'missed' : 'skipped'));
    items.push({ state });
  }
  return { type: 'runItems', items };
}
