// Runs an operator asks for outside the schedule: triggerJob (a manual run now) and backfillJob
// (runs for past slots). Both bypass the overlap policy: the operator asked for these runs.
import { JobState } from '../../gen/herald/v1/job.js';
import { RunState } from '../../gen/herald/v1/run.js';
import type { ApplyTxn } from '../store/apply-txn.js';
import type { BackfillJobCommand, TriggerJobCommand } from '../commands/commands.js';
import { triggerIdemKey } from '../store/key-layout.js';
import { lookupIdem, storeIdem } from './idempotency.js';
import type { BackfillResult, TriggerResult } from '../commands/results.js';
import { addActive, newRun } from './run-transitions.js';
import { asItemError, itemError } from './item-errors.js';
import { backfillRunId, manualRunId, parseRunId, scheduledRunId } from '../commands/run-id.js';
import { slotsInRange } from '../schedule/index.js';
import { validateId, validateIdempotencyKey } from '../commands/validation.js';

export const DEFAULT_BACKFILL_MAX_RUNS = 1000;
export const MAX_BACKFILL_RUNS = 10_000;

export async function applyTriggerJob(txn: ApplyTxn, cmd: TriggerJobCommand): Promise<TriggerResult> {
  try {
    validateId(cmd.jobId, 'job_id');
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
  // Manual runs ignore the overlap policy: an operator asked for this run explicitly.
  const id = manualRunId(cmd.jobId, cmd.nowMs, rec.manualSeq);
  rec.manualSeq += 1;
  await txn.getRun(parseRunId(id)!);
  const run = newRun(rec, { id, slotMs: cmd.nowMs, scheduledMs: cmd.nowMs, nowMs: cmd.nowMs, state: RunState.RUN_STATE_PENDING, manual: true });
  txn.putRun(run);
  addActive(rec);
  txn.putJob(rec);
  if (idemKey) storeIdem(txn, idemKey, id, cmd.nowMs);
  return { type: 'trigger', run: run.run, created: true };
}

/** States of a slot's scheduled run after which a backfill may still run the slot. */
const NEVER_STARTED = new Set([RunState.RUN_STATE_MISSED, RunState.RUN_STATE_SKIPPED]);

export async function applyBackfillJob(txn: ApplyTxn, cmd: BackfillJobCommand): Promise<BackfillResult> {
  try {
    validateId(cmd.jobId, 'job_id');
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
  const slots = cmd.fromMs < upper ? slotsInRange(spec, cmd.fromMs, upper, job.createdUnixMs, maxRuns + 1) : [];
  if (slots.length > maxRuns) {
    return { type: 'backfill', error: itemError('LIMIT_EXCEEDED', `the range holds more than ${maxRuns} slots; narrow it or raise max_runs`), runIds: [] };
  }
  const runIds: string[] = [];
  for (const slot of slots) {
    const scheduled = await txn.getRun(parseRunId(scheduledRunId(job.id, slot))!);
    if (scheduled && !NEVER_STARTED.has(scheduled.run.state)) continue;
    const id = backfillRunId(job.id, slot);
    if (await txn.getRun(parseRunId(id)!)) continue;
    txn.putRun(newRun(rec, { id, slotMs: slot, scheduledMs: cmd.nowMs, nowMs: cmd.nowMs, state: RunState.RUN_STATE_PENDING, backfilled: true }));
    addActive(rec);
    runIds.push(id);
  }
  if (runIds.length > 0) txn.putJob(rec);
  return { type: 'backfill', runIds };
}
