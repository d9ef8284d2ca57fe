// The Raft driver's outside world: the log it writes, the network it sends on, the staged
// snapshots it restores from and the timers it runs on. Production implements them with LevelDB
// (storage/log-store.ts), gRPC streams (src/server/peer), files (storage/snapshot-files.ts) and
// Node's timers (system-timers.ts); a simulator implements them with a simulated disk, network
// and clock, so the same driver runs in both.

import type { StateMachine } from './state-machine.js';
import type { ConfState, Entry, HardState, Message, NodeId, SnapshotMeta } from './types.js';

/** A cluster member and where to reach it. */
export interface PeerInfo {
  id: NodeId;
  /** host:port of the peer's RaftService. */
  peerAddress: string;
  /** host:port of the peer's public API ('' when not configured). */
  clientAddress: string;
}

/** What one Ready asks to be written. */
export interface PersistInput {
  hardState?: HardState;
  entries: readonly Entry[];
  snapshot?: SnapshotMeta;
}

/** The durable log, as the driver writes it. Its owner opens and closes it. */
export interface LogSink {
  /**
   * One Ready's snapshot, entries and hard state as one atomic write. `sync` is the Ready's
   * mustSync: term, vote and new entries must be on disk before anyone hears of them.
   */
  persist(input: PersistInput, sync: boolean): Promise<void>;
  /**
   * Records a local snapshot point and drops entries up to `base` (base <= snap.index); the
   * driver made the state machine durable up to snap.index first.
   */
  compact(snap: SnapshotMeta, base: { index: number; term: number }): Promise<void>;
  /**
   * Only a sink that acknowledges writes before they are durable (the skip-fsync control):
   * resolves once they are written, so the state machine never gets ahead of the log. `now`
   * asks for the write at once (a leader about to apply).
   */
  beforeApply?(now: boolean): Promise<void>;
  /** Only such a sink: the driver stopped, write out whatever is held (the owner then closes). */
  drain?(): Promise<void>;
}

/** A snapshot to ship to one follower (the state machine's point-in-time view). */
export interface SnapshotSend {
  to: NodeId;
  /** The leader's term. */
  term: number;
  /** The configuration as of a log index (the snapshot records the one at its applied index). */
  confAt: (index: number) => ConfState;
  /** Where the snapshot is read (a failure here is the node's own, not the transfer's). */
  stateMachine: Pick<StateMachine, 'snapshot'>;
  /** The term of a log index (throws when compacted: the send fails and is retried). */
  termOf: (index: number) => number;
  /** Overall deadline for the transfer. */
  timeoutMs: number;
}

export interface SnapshotSent {
  /** The applied index the snapshot reflects. */
  index: number;
  bytes: number;
}

/** The peers, as the driver talks to them. Delivery is best effort: Raft retries. */
export interface RaftTransport {
  send(messages: readonly Message[]): void;
  /** One apply's effects for every follower (effects replication; dropped for a slow peer). */
  sendEffects(effects: Uint8Array): void;
  /** Resolves once the follower installed it; undefined when `to` is no known peer. */
  sendSnapshot(s: SnapshotSend): Promise<SnapshotSent> | undefined;
}

/** Snapshots received from the leader, staged (verified and durable) until restored. */
export interface SnapshotStaging {
  /** The staged data of the snapshot `meta`. */
  read(meta: SnapshotMeta): AsyncIterable<Uint8Array>;
  /**
   * Drops the staged snapshots at or below `installed` (the state machine restored from it). A
   * newer one staged meanwhile stays: its offer is on its way to the ready loop, which will
   * install it next (dropping it too made that install fail, and the node unable to restart).
   */
  prune(installed: SnapshotMeta): Promise<void>;
}

declare const timerHandle: unique symbol;
/** Opaque: what `after` and `every` return, for `cancel`. */
export type TimerHandle = { readonly [timerHandle]: true };

/** The driver's only source of time: elapsed milliseconds and callbacks. */
export interface DriverTimers {
  /** Monotonic milliseconds since an arbitrary origin. */
  nowMs(): number;
  every(ms: number, fn: () => void): TimerHandle;
  after(ms: number, fn: () => void): TimerHandle;
  cancel(h: TimerHandle): void;
  /** Runs `fn` once the current turn and its I/O callbacks are done (setImmediate). */
  soon(fn: () => void): void;
}
