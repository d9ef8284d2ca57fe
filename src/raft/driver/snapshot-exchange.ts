// Snapshots between leader and follower. A leader ships the state machine's snapshot to a
// follower the log no longer covers (one transfer per follower at a time, beside the loop); a
// follower restores from the snapshot the transport staged, once the log recorded it.

import { message } from '../core/core-messages.js';
import type { MemoryStorage } from '../core/memory-storage.js';
import type { RaftNode } from '../core/raft-node.js';
import type { RaftTransport, SnapshotStaging } from '../ports.js';
import type { StateMachine } from '../state-machine.js';
import type { Message, NodeId, SnapshotMeta } from '../types.js';
import type { ApplyPipeline } from './apply-pipeline.js';
import type { DriverState } from './driver-state.js';

/** Overall deadline of one transfer. */
const SEND_TIMEOUT_MS = 10 * 60_000;

export class SnapshotExchange {
  private readonly inFlight = new Set<NodeId>();

  constructor(
    private readonly state: DriverState,
    private readonly node: RaftNode,
    private readonly storage: MemoryStorage,
    private readonly stateMachine: StateMachine,
    private readonly transport: RaftTransport,
    private readonly staging: SnapshotStaging,
    private readonly pipeline: ApplyPipeline,
    /** Runs the ready loop soon. */
    private readonly wake: () => void,
  ) {}

  /** The core asked to send a snapshot ('snap' message): ship one unless a transfer to that peer runs. */
  startSend(m: Message): void {
    const to = m.to;
    if (this.inFlight.has(to)) return;
    const state = this.state;
    // A state machine that cannot give its own snapshot (a failed write it holds, a store it
    // cannot read) is failed: retrying the send every heartbeat kept a leader that could never
    // catch a follower up in office forever (Raft simulator, seed 401278). The node stops and
    // restarts from what is durable, as after a failed apply; a failed transfer is retried.
    let readFailure: unknown;
    const sm = this.stateMachine;
    const source = {
      snapshot: () =>
        sm.snapshot().catch((e: unknown) => {
          readFailure = e ?? new Error('snapshot read failed');
          throw e;
        }),
    };
    const sending = this.transport.sendSnapshot({
      to,
      term: m.term,
      confAt: (i) => this.node.confStateAt(i),
      stateMachine: source,
      termOf: (i) => this.storage.term(i),
      timeoutMs: SEND_TIMEOUT_MS,
    });
    if (!sending) return;
    this.inFlight.add(to);
    const log = state.logger.child({ peer: to });
    log.info({ compactedTo: m.snapshot?.index }, 'sending snapshot');
    sending.then(
      (r) => {
        state.stats.snapshotsSent++;
        log.info(r, 'snapshot sent');
        this.inFlight.delete(to);
        if (!state.stopped) {
          this.node.reportSnapshot(to, true);
          this.wake();
        }
      },
      (e: unknown) => {
        this.inFlight.delete(to);
        if (state.stopped) return;
        if (readFailure !== undefined) {
          state.fail(readFailure);
          return;
        }
        log.warn({ err: e }, 'snapshot send failed');
        this.node.reportSnapshot(to, false);
        this.wake();
      },
    );
  }

  /** The log now records a snapshot from the leader: restore the state machine from the staged file. */
  async install(meta: SnapshotMeta): Promise<void> {
    const state = this.state;
    await this.stateMachine.restore(meta, this.staging.read(meta));
    state.stats.snapshotsInstalled++;
    state.logger.info({ index: meta.index, term: meta.term }, 'snapshot installed');
    await this.staging.prune(meta);
    state.proposals.supersededUpTo(meta.index);
    this.pipeline.setApplied(Math.max(state.applied, meta.index));
  }
}

/** The 'snap' message for a snapshot received from `from` and staged: stepping it makes the core install it. */
export function snapshotMessage(from: NodeId, to: NodeId, term: number, meta: SnapshotMeta): Message {
  return { ...message('snap', from, to, term), snapshot: meta };
}
