// The checker's public surface, for the simulator and the chaos suite (see README.md).
export { checkOperations, describeResult, DEFAULT_MAX_STEPS } from './checker.js';
export type { CheckBudget, CheckOptions, CheckResult, IllegalExplanation } from './checker.js';
export { hashPrimitive, hashString, partitionBy } from './model.js';
export type { Model, Operation, StepResult } from './model.js';
export { kvModel } from './kv-model.js';
export type { KvInput, KvOperation, KvOutput, KvState } from './kv-model.js';
export { documentModel, nondeterministicDocumentModel } from './document-model.js';
export type { DocInput, DocOperation, DocOutput, DocRecord, DocState, DocumentModelOptions } from './document-model.js';
export { powersetModel } from './nondeterministic-model.js';
export type { NondeterministicModel, StateSet } from './nondeterministic-model.js';
export { HistoryRecorder, parseHistory, serializeHistory } from './history-recorder.js';
export type { OpHandle } from './history-recorder.js';
