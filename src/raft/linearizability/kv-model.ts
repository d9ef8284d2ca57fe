// A key-value register model for the linearizability checker: get, put, delete, append and
// compare-and-set on string values, partitioned by key (each key is an independent register,
// so a 5,000-op history over 50 keys is checked as 50 small ones).
//
// This is the model for the Raft simulator's client history and a template for others.

import type { Model, Operation, StepResult } from './model.js';
import { hashPrimitive, partitionBy } from './model.js';

export type KvInput =
  | { kind: 'get'; key: string }
  | { kind: 'put'; key: string; value: string }
  | { kind: 'delete'; key: string }
  /** Appends to the current value (absent counts as ''): every write stays visible in later reads. */
  | { kind: 'append'; key: string; value: string }
  /** Sets `value` (null deletes) only when the current value is `expected` (null = absent). */
  | { kind: 'cas'; key: string; expected: string | null; value: string | null };

export type KvOutput =
  /** get: the value read (null = absent). */
  | { kind: 'get'; value: string | null }
  /** put, delete, append: acknowledged. */
  | { kind: 'ack' }
  /** cas: whether it swapped. */
  | { kind: 'cas'; ok: boolean };

/** One key's register: its value, or null when absent. */
export type KvState = string | null;

export type KvOperation = Operation<KvInput, KvOutput>;

export const kvModel: Model<KvState, KvInput, KvOutput> = {
  init: () => null,

  step(state: KvState, input: KvInput, output: KvOutput | undefined): StepResult<KvState> {
    switch (input.kind) {
      case 'get':
        if (output === undefined) return [true, state];
        return [output.kind === 'get' && output.value === state, state];
      case 'put':
        return [output === undefined || output.kind === 'ack', input.value];
      case 'delete':
        return [output === undefined || output.kind === 'ack', null];
      case 'append':
        return [output === undefined || output.kind === 'ack', (state ?? '') + input.value];
      case 'cas': {
        const swaps = state === input.expected;
        if (output !== undefined && (output.kind !== 'cas' || output.ok !== swaps)) return [false, state];
        return [true, swaps ? input.value : state];
      }
    }
  },

  partition: (history) => partitionBy(history, (input) => input.key),
  hash: hashPrimitive,
  equal: (a, b) => a === b,
  readOnly: (input) => input.kind === 'get',

  describeOperation(input, output) {
    const out = output === undefined ? '?' : output.kind === 'get' ? JSON.stringify(output.value) : output.kind === 'cas' ? String(output.ok) : 'ok';
    switch (input.kind) {
      case 'get':
        return `get(${input.key}) -> ${out}`;
      case 'put':
      case 'append':
        return `${input.kind}(${input.key}, ${JSON.stringify(input.value)}) -> ${out}`;
      case 'delete':
        return `delete(${input.key}) -> ${out}`;
      case 'cas':
        return `cas(${input.key}, ${JSON.stringify(input.expected)} => ${JSON.stringify(input.value)}) -> ${out}`;
    }
  },
  describeState: (s) => JSON.stringify(s),
};
