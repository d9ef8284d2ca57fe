// herald.v1.TaskTypeService: per task type limits (max_running, start rate), replicated in the
// state machine (putTaskType / deleteTaskType commands) and enforced by the leader's dispatcher.
// Writes are proposed on the leader (a follower forwards the call, leader-route.ts). Reads are
// served by any node after a read barrier.
import { stampedAtAppend } from '../node/stamped-proposal.js';
import type { Logger } from 'pino';
import { TaskTypeServiceClient, type TaskTypeServiceServer } from '../../gen/herald/v1/task_type_service.js';
import { decodeResult, validateTaskTypeConfig, validateTaskTypeName, type FsmCommand, type SchedulerStateMachine, type TaskTypeResult } from '../../fsm/index.js';
import { HeraldError } from '../../herald-error.js';
import type { HeraldNode } from '../node/herald-node.js';
import type { NodeMetrics } from '../node/metrics.js';
import { unary, type CallContext } from './unary-handler.js';
import { LeaderRoute, type LeaderRouteNode } from './leader-route.js';

export interface TaskTypeServiceContext {
  node: Pick<HeraldNode, 'propose' | 'readIndex'> & LeaderRouteNode;
  fsm: Pick<SchedulerStateMachine, 'getTaskType' | 'listTaskTypes'>;
  logger: Logger;
  metrics?: NodeMetrics;
  audit?: Logger;
  proposalTimeoutMs: number;
}

export interface TaskTypeServiceHandle {
  implementation: TaskTypeServiceServer;
  close(): void;
}

export function createTaskTypeService(ctx: TaskTypeServiceContext): TaskTypeServiceHandle {
  const route = new LeaderRoute(ctx.node, TaskTypeServiceClient);
  const deps = { logger: ctx.logger, metrics: ctx.metrics, audit: ctx.audit };

  function timeoutFor(call: CallContext): number {
    const left = call.remainingMs() - 50;
    if (left <= 0) throw new HeraldError('PROPOSAL_TIMEOUT', 'the call deadline passed before the write could be proposed');
    return Math.min(ctx.proposalTimeoutMs, left);
  }

  async function propose(timeoutMs: number, command: FsmCommand): Promise<TaskTypeResult> {
    const out = await ctx.node.propose(stampedAtAppend(command, ctx.node.clusterClock), { forward: false, timeoutMs });
    const r = decodeResult(out.result);
    if (r.type === 'rejected') throw new HeraldError(r.error.code, r.error.message, { field: r.error.reason || undefined });
    if (r.type !== 'taskType') throw new HeraldError('INTERNAL', `state machine answered ${r.type} where taskType was expected`);
    // Validation errors name their field in `reason` (item-errors.ts rejectionOf).
    if (r.error) throw new HeraldError(r.error.code, r.error.message, r.error.reason ? { field: r.error.reason } : {});
    return r;
  }

  async function barrier(call: CallContext): Promise<void> {
    await ctx.node.readIndex({ timeoutMs: timeoutFor(call) });
  }

  function notFound(taskType: string): HeraldError {
    return new HeraldError('TASK_TYPE_NOT_FOUND', `task type "${taskType}" has no config (set one with SetTaskType)`);
  }

  const implementation: TaskTypeServiceServer = {
    setTaskType: unary('SetTaskType', deps, async (req, call) => {
      const config = req.config;
      validateTaskTypeConfig(config);
      const timeoutMs = timeoutFor(call);
      return route.onLeader('setTaskType', req, call, timeoutMs, async (nowMs) => {
        const r = await propose(timeoutMs, { type: 'putTaskType', nowMs, config: { ...config, updatedUnixMs: 0 } });
        return { config: r.config };
      });
    }),
    getTaskType: unary('GetTaskType', deps, async (req, call) => {
      validateTaskTypeName(req.taskType);
      await barrier(call);
      const config = await ctx.fsm.getTaskType(req.taskType);
      if (!config) throw notFound(req.taskType);
      return { config };
    }),
    listTaskTypes: unary('ListTaskTypes', deps, async (_req, call) => {
      await barrier(call);
      return { configs: await ctx.fsm.listTaskTypes() };
    }),
    deleteTaskType: unary('DeleteTaskType', deps, async (req, call) => {
      validateTaskTypeName(req.taskType);
      const timeoutMs = timeoutFor(call);
      return route.onLeader('deleteTaskType', req, call, timeoutMs, async (nowMs) => {
        await propose(timeoutMs, { type: 'deleteTaskType', nowMs, taskType: req.taskType });
        return {};
      });
    }),
  };
  return { implementation, close: () => route.close() };
}
