// Task type configs: put (create or replace) and delete. A config is one record under
// y\0t\0<taskType>; the leader's dispatcher enforces it (server/leader/dispatch/dispatch-gate.ts).
import type { ApplyTxn } from '../store/apply-txn.js';
import type { DeleteTaskTypeCommand, PutTaskTypeCommand } from '../commands/commands.js';
import type { TaskTypeResult } from '../commands/results.js';
import { decodeTaskTypeRecord, encodeTaskTypeRecord, MAX_TASK_TYPE_CONFIGS, validateTaskTypeConfig, validateTaskTypeName } from '../commands/task-type-config.js';
import { prefixEnd, TASK_TYPE_PREFIX, taskTypeKey } from '../store/key-layout.js';
import { asItemError, itemError } from './item-errors.js';

export async function applyPutTaskType(txn: ApplyTxn, cmd: PutTaskTypeCommand): Promise<TaskTypeResult> {
  try {
    validateTaskTypeConfig(cmd.config);
  } catch (e) {
    return { type: 'taskType', error: asItemError(e) };
  }
  const key = taskTypeKey(cmd.config.taskType);
  if ((await txn.getRaw(key)) === undefined) {
    // Bounded: the leader reads every config whenever one changes.
    const keys = await txn.rawKeys(TASK_TYPE_PREFIX, prefixEnd(TASK_TYPE_PREFIX), MAX_TASK_TYPE_CONFIGS);
    if (keys.length >= MAX_TASK_TYPE_CONFIGS) {
      return { type: 'taskType', error: itemError('LIMIT_EXCEEDED', `a cluster holds at most ${MAX_TASK_TYPE_CONFIGS} task type configs; delete unused ones first`) };
    }
  }
  const config = { ...cmd.config, updatedUnixMs: cmd.nowMs };
  txn.putRaw(key, encodeTaskTypeRecord(config));
  return { type: 'taskType', config };
}

export async function applyDeleteTaskType(txn: ApplyTxn, cmd: DeleteTaskTypeCommand): Promise<TaskTypeResult> {
  try {
    validateTaskTypeName(cmd.taskType);
  } catch (e) {
    return { type: 'taskType', error: asItemError(e) };
  }
  const key = taskTypeKey(cmd.taskType);
  const bytes = await txn.getRaw(key);
  if (bytes === undefined) return { type: 'taskType', error: itemError('TASK_TYPE_NOT_FOUND', `task type "${cmd.taskType}" has no config`) };
  txn.delRaw(key);
  return { type: 'taskType', config: decodeTaskTypeRecord(bytes) };
}
