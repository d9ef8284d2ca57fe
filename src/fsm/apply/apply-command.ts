// Dispatch of one decoded command to its handler. Every handler reads and writes only through
// the transaction and takes time from the command (I5).
import type { ApplyTxn } from '../store/apply-txn.js';
import { applyFireRuns } from './apply-fire-runs.js';
import { applyBackfillJob, applyTriggerJob } from './apply-manual-runs.js';
import { applyDeleteJob, applyPauseJob, applyPutJob, applyResumeJob, applyUpdateJob } from './apply-jobs.js';
import { applyPutJobs } from './apply-put-jobs.js';
import {
  applyCancelRuns,
  applyClaimRuns,
  applyExpireLeases,
  applyFinishRuns,
  applyMarkRuns,
} from './apply-run-lifecycle.js';
import { applyTrimHistory } from './apply-trim.js';
import { applyRunBound } from './apply-run-bound.js';
import { applyRetryRuns } from './apply-retry-runs.js';
import { applyRaiseAlerts, applyRunEvents } from './apply-alerts.js';
import { applyDeleteTaskType, applyPutTaskType } from './apply-task-types.js';
import { applyDeleteToken, applyPutToken } from './apply-tokens.js';
import { applySetFeatureLevel } from './apply-feature-level.js';
import type { FsmCommand } from '../commands/commands.js';
import type { FsmResult } from '../commands/results.js';
import { itemError } from './item-errors.js';
import type { UnsafeSwitches } from './unsafe-switches.js';
import { MAX_TIME_MS, type SpecLimits } from '../commands/validation.js';

/** What apply depends on besides state and command; equal on every node of a cluster. */
export interface ApplyOptions extends SpecLimits {
  readonly unsafe: Required<UnsafeSwitches>;
}

/** Most items one command may carry; more is refused whole (the leader splits batches). */
export const MAX_ITEMS_PER_COMMAND = 100_000;

function itemCount(cmd: FsmCommand): number {
  switch (cmd.type) {
    case 'fireRuns':
    case 'claimRuns':
    case 'finishRuns':
    case 'expireLeases':
    case 'cancelRuns':
    case 'markRuns':
    case 'putJobs':
    case 'raiseAlerts':
      return cmd.items.length;
    case 'trimHistory':
      return cmd.jobIds.length;
    case 'retryRuns':
      return cmd.runIds.length;
    default:
      return 1;
  }
}

export async function applyCommand(txn: ApplyTxn, cmd: FsmCommand, entryIndex: number, limits: ApplyOptions): Promise<FsmResult> {
  const result = await applyOne(txn, cmd, entryIndex, limits);
  // Alerts and DEAD counts of the runs this command changed, in the same transaction (I2: an
  // alert is committed with its cause). Most commands change no run into an alert state.
  await applyRunEvents(txn, cmd.nowMs);
  // The hard retention bound for the jobs whose runs this command (or its alerts) ended.
  await applyRunBound(txn, cmd.nowMs);
  // Their jobs' retention state, per command so that batching does not change it.
  await txn.foldRetention();
  return result;
}

async function applyOne(txn: ApplyTxn, cmd: FsmCommand, entryIndex: number, limits: ApplyOptions): Promise<FsmResult> {
  if (!Number.isSafeInteger(cmd.nowMs) || cmd.nowMs < 0 || cmd.nowMs > MAX_TIME_MS) {
    return { type: 'rejected', error: itemError('INVALID_ARGUMENT', `command time ${cmd.nowMs} is out of range`) };
  }
  if (itemCount(cmd) > MAX_ITEMS_PER_COMMAND) {
    return { type: 'rejected', error: itemError('LIMIT_EXCEEDED', `a command carries at most ${MAX_ITEMS_PER_COMMAND} items`) };
  }
  switch (cmd.type) {
    case 'putJob':
      return applyPutJob(txn, cmd, limits);
    case 'putJobs':
      return applyPutJobs(txn, cmd, limits);
    case 'updateJob':
      return applyUpdateJob(txn, cmd, limits);
    case 'deleteJob':
      return applyDeleteJob(txn, cmd);
    case 'pauseJob':
      return applyPauseJob(txn, cmd, limits.unsafe.forgetMissedOnPause);
    case 'resumeJob':
      return applyResumeJob(txn, cmd);
    case 'triggerJob':
      return applyTriggerJob(txn, cmd);
    case 'backfillJob':
      return applyBackfillJob(txn, cmd);
    case 'fireRuns':
      return applyFireRuns(txn, cmd, limits.unsafe.skipSlotCheck);
    case 'claimRuns':
      return applyClaimRuns(txn, cmd, entryIndex);
    case 'finishRuns':
      return applyFinishRuns(txn, cmd, limits.unsafe.acceptStaleTokens);
    case 'expireLeases':
      return applyExpireLeases(txn, cmd, limits.unsafe.acceptStaleTokens);
    case 'cancelRuns':
      return applyCancelRuns(txn, cmd);
    case 'markRuns':
      return applyMarkRuns(txn, cmd);
    case 'trimHistory':
      return applyTrimHistory(txn, cmd);
    case 'retryRuns':
      return applyRetryRuns(txn, cmd);
    case 'raiseAlerts':
      return applyRaiseAlerts(txn, cmd);
    case 'putTaskType':
      return applyPutTaskType(txn, cmd);
    case 'deleteTaskType':
      return applyDeleteTaskType(txn, cmd);
    case 'putToken':
      return applyPutToken(txn, cmd);
    case 'deleteToken':
      return applyDeleteToken(txn, cmd);
    case 'setFeatureLevel':
      return applySetFeatureLevel(txn, cmd);
  }
}
