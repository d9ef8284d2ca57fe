// Runs an operator asks for outside the schedule: triggerJob (a manual run now) and backfillJob
// (runs for past slots). Both follow the job's overlap policy unless the command says
// ignoreOverlap: a manual run of a FORBID job must not overlap a scheduled one. A trigger is
// treated as a slot would be, except that FORBID (or a BUFFER_ONE job with a run buffered
// already) refuses it instead of recording a SKIPPED run: the caller is there to be told.
// Backfill runs under FORBID / BUFFER_ONE queue behind each other (held, released one at a
// time, oldest slot first) instead of starting together.
import { JobState, OverlapPolicy } from '../../gen/herald/v1/job.js';
import { RunState } from '../../gen/herald/v1/run.js';
import type { ApplyTxn } from '../store/apply-txn.js';
import type { BackfillJobCommand, TriggerJobCommand } from '../commands/commands.js';
import { triggerIdemKey } from '../store/key-layout.js';
import { lookupIdem, storeIdem } from './idempotency.js';
import type { BackfillResult, CancelSignal, TriggerResult } from '../commands/results.js';
import { addActive, addHeld, cancelActiveRuns, newRun } from './run-transitions.js';
import { overlapOf } from '../commands/dispatch-hint.js';
import { isTerminal } from '../store/records.js';
import { asItemError, itemError } from './item-errors.js';
import { backfillRunId, manualRunId, parseRunId, scheduledRunId } from '../commands/run-id.js';
import { slotsInRange } from '../schedule/index.js';
import { validateUserJobId, validateIdempotencyKey } from '../commands/validation.js';
import { FEATURE_LEVEL } from '../commands/feature-levels.js';
import type { JobRecord } from '../store/records.js';
import type { ItemError } from '../commands/results.js';

export const DEFAULT_BACKFILL_MAX_RUNS = 1000;
export const MAX_BACKFILL_RUNS = 10_000;

export async function applyTriggerJob(txn: ApplyTxn, cmd: TriggerJobCommand): Promise<TriggerResult> {
  try {
    validateUserJobId(cmd.jobId, 'job_id');
    validateIdempotencyKey(cmd.idempotencyKey);
  } catch (e) {
    return { type: 'trigger', error: asItemError(e), created: false };
  }
  const idemKey = cmd.idempotencyKey === '' ? undefined : triggerIdemKey(cmd.jobId, cmd.idempotencyKey);
  const prior = idemKey ? await lookupIdem(txn, idemKey, cmd.nowMs) : undefined;
  if (prior?.error) return { type: 'trigger', error: itemError(prior.error.code, prior.error.message), created: false };
  const rec = await txn.getJob(cmd.jobId);
  if (!rec) {
    const error = itemError('JOB_NOT_FOUND', `job "${cmd.jobId}" does not exist`);
    // The key keeps this answer (idempotency.ts): a late attempt of the same request must not
    // run the job after the client was told it does not exist.
    if (idemKey) storeIdem(txn, idemKey, '', cmd.nowMs, error);
    return { type: 'trigger', error, created: false };
  }
  if (prior) {
    const p = parseRunId(prior.target);
    const run = p ? await txn.getRun(p) : undefined;
    if (run) return { type: 'trigger', run: run.run, created: false };
  }
  const id = manualRunId(cmd.jobId, cmd.nowMs, rec.manualSeq);
  const policy = rec.job.spec ? overlapOf(rec.job.spec) : OverlapPolicy.OVERLAP_POLICY_ALLOW;
  let held = false;
  const signals: CancelSignal[] = [];
  if (!cmd.ignoreOverlap && rec.job.activeRuns > 0 && policy !== OverlapPolicy.OVERLAP_POLICY_ALLOW) {
    if (policy === OverlapPolicy.OVERLAP_POLICY_REPLACE) {
      signals.push(...(await cancelActiveRuns(txn, rec, cmd.nowMs, `replaced by run ${id} (overlap policy REPLACE)`)).signals);
    } else if (policy === OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE && rec.heldRunId === '') {
      held = true;
    } else {
      // Not stored under the idempotency key: nothing happened, a later retry may run.
      const active = await firstActiveRun(txn, cmd.jobId);
      const what = policy === OverlapPolicy.OVERLAP_POLICY_FORBID ? `run ${active} is still active` : `run ${rec.heldRunId} is already buffered behind run ${active}`;
      const msg = `job "${cmd.jobId}" has overlap policy ${OverlapPolicy[policy]} and ${what}; wait for it, cancel it, or trigger with ignore_overlap`;
      return { type: 'trigger', error: itemError('INVALID_STATE', msg, 'OVERLAP'), created: false };
    }
  }
  rec.manualSeq += 1;
  await txn.getRun(parseRunId(id)!);
  const run = newRun(rec, { id, slotMs: cmd.nowMs, scheduledMs: cmd.nowMs, nowMs: cmd.nowMs, state: RunState.RUN_STATE_PENDING, manual: true, held, requestedBy: cmd.principal, requestId: cmd.requestId });
  txn.putRun(run);
  addActive(rec);
  if (held) {
    // Count first: with no explicit count, heldRunsOf infers one from heldRunId, so setting the id
    // first counted this run twice on a record read from the store but once on one whose count
    // apply had set earlier in the batch — replicas applying different batches diverged.
    addHeld(rec);
    rec.heldRunId = id;
  }
  txn.putJob(rec);
  if (idemKey) storeIdem(txn, idemKey, id, cmd.nowMs);
  return signals.length > 0 ? { type: 'trigger', run: run.run, created: true, signals } : { type: 'trigger', run: run.run, created: true };
}

/** The id of the job's first unheld active run (for a refusal's message). */
async function firstActiveRun(txn: ApplyTxn, jobId: string): Promise<string> {
  const ids = await txn.activeRunIdsOf(jobId);
  for (const id of ids) {
    const p = parseRunId(id);
    const rec = p ? await txn.getRun(p) : undefined;
    if (rec && !rec.held && !isTerminal(rec.run.state)) return id;
  }
  return ids[0] ?? '(unknown)';
}

/**
 * Feature level 4: a backfill whose slots (ascending) reach the job's trim horizon is refused
 * whole. Retention deleted the run records up to that slot, so "no record" there no longer means
 * "never ran": running such a slot could run it twice, for a backfill even under the id a worker
 * already ran (I1). Below level 4 it refuses nothing, whatever the record holds (apply as before:
 * replicas of an older build may apply the same entry).
 */
async function trimmedSlotsRefusal(txn: ApplyTxn, rec: JobRecord, slots: readonly number[]): Promise<ItemError | undefined> {
  const horizon = rec.trimmedThroughSlotMs ?? 0;
  if (slots.length === 0 || slots[0]! > horizon) return undefined;
  if ((await txn.featureLevel()) < FEATURE_LEVEL.TRIM_HORIZON) return undefined;
  const at = new Date(horizon).toISOString();
  const msg = `job "${rec.job.id}": run history through slot ${at} was trimmed by retention, so whether those slots ran is unknown; backfill from after that slot (from_unix_ms > ${horizon})`;
  return itemError('INVALID_STATE', msg, 'HISTORY_TRIMMED');
}

/** States of a slot's scheduled run after which a backfill may still run the slot. */
const NEVER_STARTED = new Set([RunState.RUN_STATE_MISSED, RunState.RUN_STATE_SKIPPED]);

export async function applyBackfillJob(txn: ApplyTxn, cmd: BackfillJobCommand): Promise<BackfillResult> {
  try {
    validateUserJobId(cmd.jobId, 'job_id');
  } catch (e) {
    return { type: 'backfill', error: asItemError(e), runIds: [] };
  }
  if (!(cmd.fromMs < cmd.toMs) || cmd.fromMs < 0) {
    return { type: 'backfill', error: itemError('INVALID_ARGUMENT', `from_unix_ms (${cmd.fromMs}) must be before to_unix_ms (${cmd.toMs})`), runIds: [] };
  }
  if (cmd.maxRuns > MAX_BACKFILL_RUNS) {
    return { type: 'backfill', error: itemError('INVALID_ARGUMENT', `max_runs must be at most ${MAX_BACKFILL_RUNS}`), runIds: [] };
  }
  const rec = await txn.getJob(cmd.jobId);
  if (!rec?.job.spec) return { type: 'backfill', error: itemError('JOB_NOT_FOUND', `job "${cmd.jobId}" does not exist`), runIds: [] };
  const job = rec.job;
  const spec = rec.job.spec;
  const maxRuns = cmd.maxRuns || DEFAULT_BACKFILL_MAX_RUNS;
  // Only the past, and only slots the scheduler will not fire itself (below an active job's cursor).
  let upper = Math.min(cmd.toMs, cmd.nowMs + 1);
  if (job.state === JobState.JOB_STATE_ACTIVE && job.nextFireUnixMs > 0) upper = Math.min(upper, job.nextFireUnixMs);
  const slots = cmd.fromMs < upper ? slotsInRange(spec, cmd.fromMs, upper, job.createdUnixMs, maxRuns + 1, txn.schedule) : [];
  const trimmed = await trimmedSlotsRefusal(txn, rec, slots);
  if (trimmed) return { type: 'backfill', error: trimmed, runIds: [] };
  if (slots.length > maxRuns) {
    return { type: 'backfill', error: itemError('LIMIT_EXCEEDED', `the range holds more than ${maxRuns} slots; narrow it or raise max_runs`), runIds: [] };
  }
  const policy = overlapOf(spec);
  // Queued: each run is held until no unheld run of the job is active (run-transitions.ts).
  const queue = !cmd.ignoreOverlap && (policy === OverlapPolicy.OVERLAP_POLICY_FORBID || policy === OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE);
  const runIds: string[] = [];
  for (const slot of slots) {
    const scheduled = await txn.getRun(parseRunId(scheduledRunId(job.id, slot))!);
    if (scheduled && !NEVER_STARTED.has(scheduled.run.state)) continue;
    const id = backfillRunId(job.id, slot);
    if (await txn.getRun(parseRunId(id)!)) continue;
    // The first of an idle job's queue starts at once; every later one waits its turn.
    const held = queue && job.activeRuns > 0;
    txn.putRun(newRun(rec, { id, slotMs: slot, scheduledMs: cmd.nowMs, nowMs: cmd.nowMs, state: RunState.RUN_STATE_PENDING, backfilled: true, held, requestedBy: cmd.principal, requestId: cmd.requestId }));
    addActive(rec);
    if (held) addHeld(rec);
    runIds.push(id);
  }
  if (runIds.length > 0) txn.putJob(rec);
  return { type: 'backfill', runIds };
}
