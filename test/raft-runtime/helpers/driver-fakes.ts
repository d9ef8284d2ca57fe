// Fakes for driving one RaftDriver in-process: timers that never fire (only the test's messages
// move the node), and a state machine that applies nothing and is extended where a test records.
import type { DriverTimers, TimerHandle } from '../../../src/raft/ports.js';
import type { SnapshotSource, StateMachine } from '../../../src/raft/state-machine.js';
import type { Entry } from '../../../src/raft/types.js';

export const stillTimers: DriverTimers = {
  nowMs: () => 0,
  every: () => ({}) as TimerHandle,
  after: () => ({}) as TimerHandle,
  cancel: () => undefined,
  soon: (fn) => void setImmediate(fn),
};

/** One event-loop turn. */
export const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

export class NoopMachine implements StateMachine {
  constructor(private readonly appliedAt = 0) {}
  async apply(entries: readonly Entry[]): Promise<Uint8Array[]> {
    return entries.map(() => new Uint8Array(0));
  }
  async appliedIndex(): Promise<number> {
    return this.appliedAt;
  }
  async snapshot(): Promise<SnapshotSource> {
    throw new Error('not used');
  }
  async restore(): Promise<void> {}
  async sync(): Promise<void> {}
  async stateHash(): Promise<string> {
    return '';
  }
  async close(): Promise<void> {}
}
