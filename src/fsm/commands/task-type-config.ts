// Task type configs (TaskTypeService): their validation and the stored record, which is the
// config's own proto encoding (y\0t\0<taskType>, key-layout.ts). Validated again by apply, so
// every replica refuses the same bad config.
import { TaskTypeConfig } from '../../gen/herald/v1/task_type_service.js';
import { HeraldError } from '../../herald-error.js';
import { MAX_PAUSE_AFTER_DEAD, validateAlertPolicy, validateId } from './validation.js';

/** The cap of TaskTypeConfig.max_running and of rate_per_second. */
export const MAX_TASK_TYPE_LIMIT = 1_000_000;
/** The smallest positive rate (one start every 1000 s). */
export const MIN_RATE_PER_SECOND = 0.001;
/** Most task type configs a cluster holds (each is read by the leader at every change). */
export const MAX_TASK_TYPE_CONFIGS = 10_000;

function bad(field: string, msg: string): never {
  throw new HeraldError('INVALID_ARGUMENT', `${field}: ${msg}`, { field });
}

export function validateTaskTypeName(taskType: string, field = 'task_type'): void {
  if (taskType === '') bad(field, 'is required');
  validateId(taskType, field);
}

/** Throws INVALID_ARGUMENT (or INVALID_ID) naming the field. */
export function validateTaskTypeConfig(c: TaskTypeConfig | undefined): asserts c is TaskTypeConfig {
  if (c === undefined) bad('config', 'is required');
  validateTaskTypeName(c.taskType, 'config.task_type');
  if (!Number.isInteger(c.maxRunning) || c.maxRunning < 0 || c.maxRunning > MAX_TASK_TYPE_LIMIT) {
    bad('config.max_running', `must be an integer between 0 (no limit) and ${MAX_TASK_TYPE_LIMIT} (got ${c.maxRunning})`);
  }
  const r = c.ratePerSecond;
  if (!Number.isFinite(r) || r < 0 || r > MAX_TASK_TYPE_LIMIT || (r > 0 && r < MIN_RATE_PER_SECOND)) {
    bad('config.rate_per_second', `must be 0 (no limit) or between ${MIN_RATE_PER_SECOND} and ${MAX_TASK_TYPE_LIMIT} runs per second (got ${r})`);
  }
  if (!Number.isInteger(c.burst) || c.burst < 0 || c.burst > MAX_TASK_TYPE_LIMIT) {
    bad('config.burst', `must be an integer between 0 (the rate rounded up) and ${MAX_TASK_TYPE_LIMIT} (got ${c.burst})`);
  }
  if (c.burst > 0 && r === 0) bad('config.burst', 'needs rate_per_second (a burst without a rate limits nothing)');
  validateAlertPolicy(c.alerts, 'config.alerts', 'INVALID_ARGUMENT');
  if (!Number.isInteger(c.pauseAfterDead) || c.pauseAfterDead < 0 || c.pauseAfterDead > MAX_PAUSE_AFTER_DEAD) {
    bad('config.pause_after_dead', `must be an integer between 0 (never) and ${MAX_PAUSE_AFTER_DEAD} (got ${c.pauseAfterDead})`);
  }
}

/** The bucket size a config's rate gets: its burst, or the rate rounded up (at least 1). */
export function burstOf(c: TaskTypeConfig): number {
  return c.burst > 0 ? c.burst : Math.max(1, Math.ceil(c.ratePerSecond));
}

export function encodeTaskTypeRecord(c: TaskTypeConfig): Uint8Array {
  return TaskTypeConfig.encode(c).finish();
}

export function decodeTaskTypeRecord(bytes: Uint8Array): TaskTypeConfig {
  return TaskTypeConfig.decode(bytes);
}
