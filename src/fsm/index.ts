// The scheduler state machine's public surface (for src/server and tests).
//
// Write path: validate the request (validation.ts; apply re-checks everything), build an
// FsmCommand stamped with cluster time, propose encodeCommand(cmd) through Raft; on commit the
// runtime calls SchedulerStateMachine.apply and the proposer hands decodeResult(bytes) back to
// its caller. Batched commands answer per item (an item error never fails the others); running
// runs that must stop (cancel, delete, REPLACE) come back as `signals`. Read path: the
// SchedulerStateMachine's read methods (fsm-reads.ts) straight from LevelDB.
export { SchedulerStateMachine, type SchedulerFsmOptions } from './machine/scheduler-state-machine.js';
export { DEFAULT_WRITE_BUFFER_BYTES } from './machine/open-machine.js';
export { DEFAULT_RECORD_CACHE_BYTES } from './store/record-cache.js';
export type * from './commands/commands.js';
export { finishFailure, finishSuccess, MAX_CLAIM_AHEAD_MS } from './commands/commands.js';
export { encodeCommand, decodeCommand } from './commands/command-codec.js';
export { encodeResult, decodeResult, decodeJobHeads, decodeFireOutcomes, decodeSignals, resultTypeOf, type FireOutcome } from './commands/result-codec.js';
export { SpecCache } from './commands/spec-cache.js';
export type * from './commands/results.js';
export { appliedKindOf, type AppliedKind } from './commands/applied-result.js';
export type { DueSlot, ListJobsQuery, ListRunsQuery, Page, ReadyQuery } from './machine/fsm-reads.js';
export type { ReadyEntry } from './store/ready-index.js';
export { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from './machine/fsm-reads.js';
export { REDRIVE_SCAN_BUDGET, type RedriveCandidates, type RedriveQuery } from './machine/redrive-candidates.js';
export { jobIdOfTrimKey } from './store/key-layout.js';
export { backfillRunId, manualRunId, parseRunId, requireRunId, scheduledRunId, type ParsedRunId } from './commands/run-id.js';
export * from './commands/validation.js';
export { IDEMPOTENCY_TTL_MS } from './apply/idempotency.js';
export { MAX_SLOTS_PER_FIRE_ITEM, DEFAULT_MISFIRE_MAX_RUNS, DEFAULT_MISFIRE_THRESHOLD_MS } from './apply/apply-fire-runs.js';
export { MAX_ITEMS_PER_COMMAND } from './apply/apply-command.js';
export { UNSAFE_ENV, type UnsafeSwitches } from './apply/unsafe-switches.js';
export { DEFAULT_RETENTION_AGE_MS, DEFAULT_RETENTION_RUNS } from './apply/apply-trim.js';
export { DEFAULT_BACKFILL_MAX_RUNS, MAX_BACKFILL_RUNS } from './apply/apply-manual-runs.js';
export { FsmDecodeError } from './commands/binary-codec.js';
export { dispatchHintOf, hintedDueMs, knowsDue, overlapOf } from './commands/dispatch-hint.js';
export { MAX_RETRY_RUNS_PER_COMMAND, RETRYABLE_STATES } from './apply/apply-retry-runs.js';
export { decodeJobRecord, decodeRunRecord } from './store/records.js';
export type { ChangeRecorder, StoreChangeListener } from './machine/store-changes.js';
export { burstOf, validateTaskTypeConfig, validateTaskTypeName, MAX_TASK_TYPE_LIMIT, MAX_TASK_TYPE_CONFIGS } from './commands/task-type-config.js';
export {
  validateTokenGrant,
  isValidTokenId,
  MAX_TOKENS,
  MAX_TOKEN_TASK_TYPES,
  type TokenRecord,
} from './commands/token-record.js';
