import type { Entry, SnapshotMeta } from './types.js';

/**
 * What the Raft runtime drives. Implemented by the scheduler FSM (src/fsm) and by a small
 * key-value machine used in Raft tests.
 *
 * Contract:
 * - `apply` receives committed entries in log order, exactly once each across restarts: the
 *   implementation writes its changes and the new applied index in one atomic LevelDB batch.
 *   It returns one encoded result per entry (empty for no-op and config entries). With
 *   `wanted`, only entries it accepts need a result (the rest may be empty): followers have
 *   nobody waiting for most results, and encoding them is a large share of apply.
 * - `apply` is deterministic (DESIGN I5): no wall clock, randomness or I/O besides its batch.
 * - `snapshot` opens a consistent point-in-time view (a LevelDB snapshot) and streams it as
 *   chunks without copying the whole state into memory; `restore` replaces the whole state.
 */
/** Whether anyone waits for the result of the entry at this index (undefined = every entry). */
export type ResultWanted = (index: number) => boolean;

/**
 * Called (at most once per apply call) with the call's results once they are known, before the
 * call's write: proposals that asked to be answered then are (ProposalTracker.evaluated). A state
 * machine may ignore it; the results then reach the proposals when the apply resolves.
 */
export type ResultsEvaluated = (results: Uint8Array[]) => void;

/**
 * Effects replication, for state machines that offer it: the leader applies with
 * applyCapturing and sends the writes it computed to its followers beside the log; a follower
 * holding them when it applies those committed entries writes them (applyEffects) instead of
 * evaluating the entries. Committed entries are the same on every replica and apply is
 * deterministic, so the effects are exactly what evaluation would write: only ever a shortcut.
 */
export type EffectsOutcome = 'applied' | 'stale' | 'gap' | 'malformed';

export interface EffectsReplication {
  applyCapturing(entries: readonly Entry[], wanted?: ResultWanted, evaluated?: ResultsEvaluated): Promise<{ results: Uint8Array[]; effects: Uint8Array | undefined }>;
  /**
   * 'applied'; 'stale' / 'gap' when they do not start at the applied index, 'malformed' when they
   * do not decode (nothing written: the entries are evaluated). Throws only what stops the node
   * (a store error): never a reason to skip entries.
   */
  applyEffects(effects: Uint8Array): Promise<EffectsOutcome>;
  /** The applied range effects cover (from = the applied index they start at); throws when malformed. */
  effectsRange(effects: Uint8Array): { fromApplied: number; toApplied: number };
}

export interface StateMachine {
  apply(entries: readonly Entry[], wanted?: ResultWanted, evaluated?: ResultsEvaluated): Promise<Uint8Array[]>;
  /** Present when the state machine can replicate the writes of an apply (see EffectsReplication). */
  readonly effects?: EffectsReplication;
  /** The index of the last entry applied (0 when fresh). */
  appliedIndex(): Promise<number>;
  snapshot(): Promise<SnapshotSource>;
  restore(meta: SnapshotMeta, chunks: AsyncIterable<Uint8Array>): Promise<void>;
  /**
   * Makes every applied batch durable (one synced write). `apply` batches may be written
   * without fsync because the log is the durable record; the runtime calls `sync` before it
   * compacts the log past the applied index, and before it writes a snapshot marker.
   */
  sync(): Promise<void>;
  /** A digest of the whole state (tests compare replicas with it). */
  stateHash(): Promise<string>;
  close(): Promise<void>;
}

export interface SnapshotSource {
  /** The applied index (and its term, filled by the runtime) the view reflects. */
  readonly appliedIndex: number;
  chunks(): AsyncIterable<Uint8Array>;
  close(): Promise<void>;
}
