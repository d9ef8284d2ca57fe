// JobService.RetryRun and RetryRuns (re-drive, fsm/apply/apply-retry-runs.ts). A bulk call reads
// its runs on the leader (after a read barrier) and proposes them as one retryRuns entry; apply
// checks each again, so a run that moved on in between is reported, never re-driven wrongly.
import type { JobServiceServer, RetryRunsFailure } from '../../gen/herald/v1/job_service.js';
import { RunState } from '../../gen/herald/v1/run.js';
import {
  MAX_RETRY_RUNS_PER_COMMAND,
  RETRYABLE_STATES,
  requireRunId,
  validateId,
  type FsmCommand,
  type FsmResult,
  type SchedulerStateMachine,
} from '../../fsm/index.js';
import { HeraldError } from '../../herald-error.js';
import type { HeraldNode } from '../node/herald-node.js';
import { grpcStatusOf } from '../grpc/grpc-status-map.js';
import type { NodeMetrics } from '../node/metrics.js';
import type { Logger } from 'pino';
import { expectType, itemError } from './fsm-result.js';
import { unary, type CallContext } from './unary-handler.js';

export interface RedriveHandlerDeps {
  deps: { logger: Logger; metrics?: NodeMetrics; audit?: Logger };
  onLeader<Req, Res>(method: string, request: Req, call: CallContext, run: (nowMs: number) => Promise<Res>): Promise<Res>;
  propose(command: FsmCommand, call: CallContext): Promise<FsmResult>;
  timeoutFor(call: CallContext): number;
  node: Pick<HeraldNode, 'readIndex'>;
  fsm: Pick<SchedulerStateMachine, 'redriveCandidates'>;
}

export function createRedriveHandlers(h: RedriveHandlerDeps): Pick<JobServiceServer, 'retryRun' | 'retryRuns'> {
  return {
    retryRun: unary('RetryRun', h.deps, async (req, call) => {
      requireRunId(req.runId);
      return h.onLeader('retryRun', req, call, async (nowMs) => {
        const cmd: FsmCommand = { type: 'retryRuns', nowMs, runIds: [req.runId], onlyState: 0, ignoreOverlap: req.ignoreOverlap };
        const item = expectType(await h.propose(cmd, call), 'retry').items[0];
        if (!item) throw new HeraldError('INTERNAL', 'retry returned no item result');
        if (item.error) throw itemError(item.error);
        return { run: item.run };
      });
    }),

    retryRuns: unary('RetryRuns', h.deps, async (req, call) => {
      if (req.jobId !== '') validateId(req.jobId, 'job_id');
      if (req.taskType !== '') validateId(req.taskType, 'task_type');
      if (req.jobId === '' && req.taskType === '') {
        throw new HeraldError('INVALID_ARGUMENT', 'job_id or task_type: a bulk re-drive names a job or a task type (or both)', { field: 'job_id' });
      }
      const state = req.state === RunState.RUN_STATE_UNSPECIFIED ? RunState.RUN_STATE_DEAD : req.state;
      if (!RETRYABLE_STATES.has(state)) {
        throw new HeraldError('INVALID_ARGUMENT', `state: ${RunState[state] ?? state} runs cannot be re-driven; use DEAD, CANCELLED or FAILED`, { field: 'state' });
      }
      for (const [v, field] of [[req.finishedFromUnixMs, 'finished_from_unix_ms'], [req.finishedToUnixMs, 'finished_to_unix_ms']] as const) {
        if (!Number.isSafeInteger(v) || v < 0) throw new HeraldError('INVALID_ARGUMENT', `${field}: an instant in ms, 0 for none (got ${v})`, { field });
      }
      if (req.finishedFromUnixMs > 0 && req.finishedToUnixMs > 0 && req.finishedToUnixMs <= req.finishedFromUnixMs) {
        throw new HeraldError('INVALID_ARGUMENT', 'finished_to_unix_ms: must be after finished_from_unix_ms', { field: 'finished_to_unix_ms' });
      }
      if (!Number.isInteger(req.maxRuns) || req.maxRuns < 0 || req.maxRuns > MAX_RETRY_RUNS_PER_COMMAND) {
        throw new HeraldError('INVALID_ARGUMENT', `max_runs: between 1 and ${MAX_RETRY_RUNS_PER_COMMAND} (0 means ${MAX_RETRY_RUNS_PER_COMMAND})`, { field: 'max_runs' });
      }
      return h.onLeader('retryRuns', req, call, async (nowMs) => {
        await h.node.readIndex({ timeoutMs: h.timeoutFor(call) });
        const found = await h.fsm.redriveCandidates({
          state,
          ...(req.jobId !== '' ? { jobId: req.jobId } : {}),
          ...(req.taskType !== '' ? { taskType: req.taskType } : {}),
          fromMs: req.finishedFromUnixMs,
          toMs: req.finishedToUnixMs,
          limit: req.maxRuns || MAX_RETRY_RUNS_PER_COMMAND,
          ...(req.pageToken !== '' ? { pageToken: req.pageToken } : {}),
        });
        const runIds: string[] = [];
        const failures: RetryRunsFailure[] = [];
        if (found.runIds.length > 0) {
          const cmd: FsmCommand = { type: 'retryRuns', nowMs, runIds: found.runIds, onlyState: state, ignoreOverlap: req.ignoreOverlap };
          const r = expectType(await h.propose(cmd, call), 'retry');
          found.runIds.forEach((runId, i) => {
            const item = r.items[i];
            if (item && !item.error) runIds.push(runId);
            else failures.push({ runId, code: grpcStatusOf[item?.error?.code ?? 'INTERNAL'], message: item?.error?.message ?? 'no item result' });
          });
        }
        return { runIds, failures, more: found.more, nextPageToken: found.nextPageToken };
      });
    }),
  };
}
