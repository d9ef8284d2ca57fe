// Re-drive (RetryRun, RetryRuns): a run that ended DEAD or CANCELLED, or waits FAILED for its
// backoff, becomes PENDING again, due now. Its attempts stay in its history; its next claim is a
// new attempt whose fencing token is that claim's Raft index, above every token it had. The
// job's retry budget restarts: attempts made before the re-drive (attemptBase) no longer count.
//
// The rest follows what a backfill run does: under FORBID / BUFFER_ONE (unless ignoreOverlap) a
// run re-driven while its job has active runs is held and released in turn; a paused job's run is
// dispatched all the same (pause stops slots from firing, as for triggers). The run leaves the
// terminal runs its job's retention counts, so no trim removes it while it is pending or running.
import { OverlapPolicy } from '../../gen/herald/v1/job.js';
import { RunState } from '../../gen/herald/v1/run.js';
import type { ApplyTxn } from '../store/apply-txn.js';
import type { RetryRunsCommand } from '../commands/commands.js';
import type { ItemError, RetryResult } from '../commands/results.js';
import { isTerminal } from '../store/records.js';
import { overlapOf } from '../commands/dispatch-hint.js';
import { addActive, addHeld } from './run-transitions.js';
import { itemError } from './item-errors.js';
import { prefetch } from './apply-run-lifecycle.js';

/** Most runs one retryRuns command re-drives; more is refused whole (the API bounds its calls to this). */
export const MAX_RETRY_RUNS_PER_COMMAND = 500;

/** The states a run can be re-driven from. */
export const RETRYABLE_STATES: ReadonlySet<RunState> = new Set([RunState.RUN_STATE_DEAD, RunState.RUN_STATE_CANCELLED, RunState.RUN_STATE_FAILED]);

type Item = RetryResult['items'][number];

export async function applyRetryRuns(txn: ApplyTxn, cmd: RetryRunsCommand): Promise<RetryResult> {
  if (cmd.runIds.length > MAX_RETRY_RUNS_PER_COMMAND) {
    const error = itemError('LIMIT_EXCEEDED', `a re-drive carries at most ${MAX_RETRY_RUNS_PER_COMMAND} runs (got ${cmd.runIds.length})`);
    return { type: 'retry', items: cmd.runIds.map(() => ({ error })) };
  }
  if (cmd.onlyState !== 0 && !RETRYABLE_STATES.has(cmd.onlyState)) {
    const error = itemError('INVALID_ARGUMENT', `state ${RunState[cmd.onlyState] ?? cmd.onlyState} cannot be re-driven; use DEAD, CANCELLED or FAILED`);
    return { type: 'retry', items: cmd.runIds.map(() => ({ error })) };
  }
  await prefetch(txn, cmd.runIds);
  const items: Item[] = [];
  const seen = new Set<string>();
  for (const runId of cmd.runIds) {
    // A run named twice is re-driven once: the second would find it PENDING.
    if (seen.has(runId)) {
      items.push({ error: itemError('INVALID_ARGUMENT', `run "${runId}" is named twice`) });
      continue;
    }
    seen.add(runId);
    items.push(await retryOne(txn, cmd, runId));
  }
  return { type: 'retry', items };
}

function refuse(error: ItemError): Item {
  return { error };
}

async function retryOne(txn: ApplyTxn, cmd: RetryRunsCommand, runId: string): Promise<Item> {
  const k = txn.runIdKey(runId);
  if (!k) return refuse(itemError('INVALID_ID', `"${runId.slice(0, 200)}" is not a run id`));
  const rec = await txn.getRunAt(k.key);
  if (!rec) return refuse(itemError('RUN_NOT_FOUND', `run "${runId}" does not exist (it may have been trimmed by its job's history retention)`));
  const run = rec.run;
  const state = run.state;
  if (!RETRYABLE_STATES.has(state)) {
    return refuse(itemError('INVALID_STATE', `run "${runId}" is ${RunState[state]}; only DEAD, CANCELLED or FAILED runs can be re-driven`, 'NOT_RETRYABLE'));
  }
  if (cmd.onlyState !== 0 && state !== cmd.onlyState) {
    return refuse(itemError('INVALID_STATE', `run "${runId}" is ${RunState[state]} now, no longer ${RunState[cmd.onlyState]}`, 'STATE_CHANGED'));
  }
  // Deleting a job deletes its runs; a run without its job is refused, never revived alone.
  const job = await txn.getJob(run.jobId);
  if (!job?.job.spec) return refuse(itemError('JOB_NOT_FOUND', `job "${run.jobId}" of run "${runId}" does not exist`));
  const wasTerminal = isTerminal(state);
  const policy = overlapOf(job.job.spec);
  const queue = !cmd.ignoreOverlap && (policy === OverlapPolicy.OVERLAP_POLICY_FORBID || policy === OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE);
  // A FAILED run is one of the job's active runs already: it only waits no longer.
  const held = wasTerminal ? queue && job.job.activeRuns > 0 : rec.held;
  run.state = RunState.RUN_STATE_PENDING;
  run.notBeforeUnixMs = cmd.nowMs;
  run.finishedUnixMs = 0;
  run.reason = '';
  run.workerId = '';
  run.leaseDeadlineUnixMs = 0;
  run.redriveCount += 1;
  run.redrivenUnixMs = cmd.nowMs;
  run.requestedBy = cmd.principal ?? '';
  run.requestId = cmd.requestId ?? '';
  rec.attemptBase = run.attempt;
  rec.held = held;
  txn.putRun(rec);
  if (wasTerminal) {
    addActive(job);
    if (held) addHeld(job);
    txn.putJob(job);
  }
  return { run };
}
