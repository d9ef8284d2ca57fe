// What the driver's parts share: its events and counters, the applied index, who leads, and
// whether it stopped or failed. Each part owns the rest of its state; this is only what more
// than one of them reads or writes.

import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { HeraldError } from '../../herald-error.js';
import type { NodeId, Role } from '../types.js';
import type { DriverMutation } from './mutations.js';
import type { ProposalTracker } from './proposal-tracker.js';

export interface RaftTimingOptions {
  /** One core tick, in ms (default 100). */
  tickMs: number;
  /** Election timeout in ticks (default 10; randomized in [n, 2n)). */
  electionTicks: number;
  /** Heartbeat interval in ticks (default 1). */
  heartbeatTicks: number;
}

export interface LeaderChange {
  leaderId: NodeId;
  /** The leader's client address ('' when unknown or no leader). */
  leaderAddress: string;
  term: number;
  role: Role;
}

export interface RaftDriverEvents {
  /** The known leader changed (leaderId '' = none known). */
  leaderChanged: [LeaderChange];
  /** This node became leader (the scheduler starts its timing wheel here). */
  becameLeader: [{ term: number }];
  /** This node stopped being leader. */
  lostLeadership: [{ term: number }];
  /** The state machine applied up to this index. */
  applied: [{ index: number }];
  /** Storage or the state machine failed: the node must stop (it cannot continue safely). */
  fatal: [Error];
  /** A local proposal finished: 'ok' once applied here, else the error code (metrics). */
  proposed: [{ outcome: string; ms: number }];
}

export interface DriverStats {
  readies: number;
  syncedWrites: number;
  entriesPersisted: number;
  entriesApplied: number;
  proposals: number;
  snapshotsSent: number;
  snapshotsInstalled: number;
  compactions: number;
  /** Time compactions took, from start to the log range deleted (they run beside the loop). */
  compactMs: number;
  /** Time spent in log writes / state machine applies (ms), for benches and diagnosis. */
  persistMs: number;
  persistMaxMs: number;
  applyMs: number;
  applyMaxMs: number;
  /** Effects replication: effects sent (leader) and received (follower), entries applied by writing effects (follower). */
  effectsSent: number;
  effectsReceived: number;
  entriesAppliedFromEffects: number;
}

export const NO_LEADER = '';

export class DriverState {
  readonly events = new EventEmitter<RaftDriverEvents>();
  readonly stats: DriverStats = {
    readies: 0,
    syncedWrites: 0,
    entriesPersisted: 0,
    entriesApplied: 0,
    proposals: 0,
    snapshotsSent: 0,
    snapshotsInstalled: 0,
    compactions: 0,
    compactMs: 0,
    effectsSent: 0,
    effectsReceived: 0,
    entriesAppliedFromEffects: 0,
    persistMs: 0,
    persistMaxMs: 0,
    applyMs: 0,
    applyMaxMs: 0,
  };
  /** The state machine's applied index (set by the apply pipeline and snapshot installs). */
  applied: number;
  leader: NodeId = NO_LEADER;
  role: Role = 'follower';
  term = 0;
  stopped = false;
  failed: Error | undefined;

  constructor(
    readonly id: NodeId,
    readonly timing: RaftTimingOptions,
    readonly logger: Logger,
    /** Local proposals waiting for their entries (failed here when the driver fails). */
    readonly proposals: ProposalTracker,
    applied: number,
    /** Deliberate bugs (mutations.ts): the simulator's negative controls only. */
    readonly mutations: ReadonlySet<DriverMutation>,
  ) {
    // Every proposal or read waiting out an election listens for the next leader change: hundreds
    // can wait at once, which is not a leak (each removes its listener when it resolves).
    this.events.setMaxListeners(0);
    this.applied = applied;
  }

  electionTimeoutMs(): number {
    return this.timing.tickMs * this.timing.electionTicks;
  }

  assertRunning(): void {
    if (this.failed) throw new HeraldError('INTERNAL', `node failed: ${this.failed.message}`);
    if (this.stopped) throw new HeraldError('SHUTTING_DOWN', 'node is shutting down');
  }

  /** Storage or the state machine failed: fail what waits and tell the owner (it must stop the node). */
  fail(e: unknown): void {
    const err = e instanceof Error ? e : new Error(String(e));
    if (this.failed) return;
    this.failed = err;
    this.logger.error({ err }, 'raft driver failed; the node must stop');
    this.proposals.failAll((i) => new HeraldError('OUTCOME_UNKNOWN', `node failed before entry ${i} was applied: ${err.message}`));
    this.events.emit('fatal', err);
  }
}
