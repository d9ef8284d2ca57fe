// Linearizable reads: ask the core for a read index (a follower asks the leader), wait until the
// leader confirmed it still leads, then until this node applied that far.
//
// Each request carries a context that names it uniquely across the cluster: the leader keys
// pending reads by context, so two nodes (in one process, as in tests) must never send the same
// one, and a restarted node must not take an answer meant for its previous incarnation. It is
// this driver's random nonce, a counter and the node id.

import { HeraldError, isHeraldError } from '../../herald-error.js';
import type { RaftNode } from '../core/raft-node.js';
import type { DriverTimers, TimerHandle } from '../ports.js';
import type { ReadState } from '../types.js';
import type { ApplyPipeline } from './apply-pipeline.js';
import type { DriverState } from './driver-state.js';
import type { Leadership } from './leadership.js';

interface ReadWaiter {
  resolve: (index: number) => void;
  reject: (e: Error) => void;
  timer: TimerHandle;
}

export class ReadBarrier {
  private readonly reads = new Map<string, ReadWaiter>();
  private readonly idBytes: Buffer;
  private seq = 0;

  constructor(
    private readonly state: DriverState,
    private readonly node: RaftNode,
    private readonly pipeline: ApplyPipeline,
    private readonly leadership: Leadership,
    private readonly timers: DriverTimers,
    /** Runs the ready loop soon. */
    private readonly wake: () => void,
    /** Random per driver instance (a restart gets another). */
    private readonly nonce: number,
    private readonly defaultTimeoutMs: number,
  ) {
    this.idBytes = Buffer.from(state.id, 'utf8');
  }

  /**
   * A linearizable read barrier: resolves with a read index once this node's state machine has
   * applied at least that far. Works on followers (the core asks the leader).
   */
  async readIndex(options: { timeoutMs?: number } = {}): Promise<number> {
    const state = this.state;
    const timers = this.timers;
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    const deadline = timers.nowMs() + timeoutMs;
    for (;;) {
      state.assertRunning();
      const ctx = Buffer.allocUnsafe(12 + this.idBytes.length);
      ctx.writeUInt32BE(this.nonce >>> 0, 0);
      ctx.writeDoubleBE(++this.seq, 4);
      this.idBytes.copy(ctx, 12);
      const key = ctx.toString('base64');
      const attemptMs = Math.min(deadline - timers.nowMs(), Math.max(state.electionTimeoutMs(), 200));
      try {
        const p = new Promise<number>((resolve, reject) => {
          const timer = timers.after(Math.max(1, attemptMs), () => {
            this.reads.delete(key);
            reject(new HeraldError('PROPOSAL_TIMEOUT', 'read index not confirmed in time'));
          });
          this.reads.set(key, { resolve, reject, timer });
        });
        try {
          this.node.readIndex(ctx);
        } catch (e) {
          const w = this.reads.get(key);
          if (w) {
            timers.cancel(w.timer);
            this.reads.delete(key);
          }
          throw e;
        }
        this.wake();
        const index = await p;
        await this.pipeline.waitApplied(index);
        return index;
      } catch (e) {
        // No leader yet, or the request was dropped by a leader change: retry until the deadline.
        const retryable = isHeraldError(e, 'NO_LEADER') || isHeraldError(e, 'PROPOSAL_TIMEOUT');
        if (!retryable || timers.nowMs() + 10 >= deadline) {
          if (isHeraldError(e, 'NO_LEADER')) throw e;
          throw isHeraldError(e) ? e : new HeraldError('INTERNAL', String(e));
        }
        await this.leadership.waitForLeaderChange(Math.min(50, deadline - timers.nowMs()));
      }
    }
  }

  /** A Ready's read states: each read resolves with its index (it then waits to apply that far). */
  confirm(readStates: readonly ReadState[]): void {
    for (const rs of readStates) {
      const key = Buffer.from(rs.context.buffer, rs.context.byteOffset, rs.context.byteLength).toString('base64');
      const w = this.reads.get(key);
      if (!w) continue;
      this.reads.delete(key);
      this.timers.cancel(w.timer);
      w.resolve(rs.index);
    }
  }

  /** The driver stopped: every read waiting for its index fails. */
  stop(): void {
    for (const [, r] of this.reads) {
      this.timers.cancel(r.timer);
      r.reject(new HeraldError('SHUTTING_DOWN', 'node is shutting down'));
    }
    this.reads.clear();
  }
}
