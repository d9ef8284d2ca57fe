// Proposals waiting for their entry to be applied. A proposal is identified by the (index, term)
// the core gave its entry: if that entry is applied, the proposal succeeded; if an entry of
// another term is applied at the index, it definitely failed (safe to retry); if leadership was
// lost before either happened, the outcome is unknown after a grace period.

import { HeraldError } from '../../herald-error.js';
import type { DriverTimers, TimerHandle } from '../ports.js';
import type { Entry } from '../types.js';

/**
 * A proposal's bytes, or a function that encodes them when the entry is appended (called again
 * for each attempt): a command stamped with a time gets the time it enters the log, so a wait
 * before the append (a leadership transfer settling) cannot put it behind later stamps.
 */
export type ProposalData = Uint8Array | (() => Uint8Array);

/** The bytes of `data` now. */
export function proposalBytes(data: ProposalData): Uint8Array {
  return typeof data === 'function' ? data() : data;
}

export interface ProposalOutcome {
  index: number;
  result: Uint8Array;
}

interface Pending {
  term: number;
  resolve: (o: ProposalOutcome) => void;
  reject: (e: Error) => void;
  timer: TimerHandle;
  leadershipLost: boolean;
  /** Answered once its entry is evaluated, before the state machine's write lands (evaluated()). */
  early: boolean;
}

export class ProposalTracker {
  private readonly pending = new Map<number, Pending>();
  /** Pending proposals that take their answer once evaluated. */
  private earlyCount = 0;

  constructor(private readonly timers: Pick<DriverTimers, 'after' | 'cancel'>) {}

  get size(): number {
    return this.pending.size;
  }

  track(index: number, term: number, timeoutMs: number, early = false): Promise<ProposalOutcome> {
    // An older proposal at this index lost its entry to a truncation before this node applied
    // that far, and this node leads again: its entry may still survive on another node, so its
    // outcome is unknown (found by the simulator: it used to be overwritten and never settle).
    const older = this.pending.get(index);
    if (older) {
      this.remove(index, older);
      this.timers.cancel(older.timer);
      older.reject(new HeraldError('OUTCOME_UNKNOWN', `entry ${index} of term ${older.term} was replaced in this node's log; it may or may not commit elsewhere`));
    }
    return new Promise<ProposalOutcome>((resolve, reject) => {
      const p: Pending = { term, resolve, reject, timer: undefined as unknown as TimerHandle, leadershipLost: false, early };
      p.timer = this.timers.after(timeoutMs, () => {
        if (this.pending.get(index) !== p) return;
        this.remove(index, p);
        p.reject(
          p.leadershipLost
            ? new HeraldError('OUTCOME_UNKNOWN', `leadership was lost after entry ${index} was appended; it may or may not commit`)
            : new HeraldError('PROPOSAL_TIMEOUT', `entry ${index} was not committed within ${timeoutMs} ms; it may still commit`),
        );
      });
      this.pending.set(index, p);
      if (early) this.earlyCount++;
    });
  }

  private remove(index: number, p: Pending): void {
    this.pending.delete(index);
    if (p.early) this.earlyCount--;
  }

  /** Some pending proposal takes its answer once evaluated (evaluated() has work). */
  hasEarly(): boolean {
    return this.earlyCount > 0;
  }

  /**
   * The results of entries the state machine evaluated, before its write of them lands: the
   * proposals that asked for it are answered now. The entries are committed (in the log of a
   * quorum), and every replica that applies them gets these results, so the answer is as durable
   * as one given after the write; this node's reads that must see the write wait for the applied
   * index, which moves only once the write landed.
   */
  evaluated(entries: readonly Entry[], results: readonly Uint8Array[], leaderId: string): void {
    if (this.earlyCount === 0) return;
    this.settle(entries, results, leaderId, true);
  }

  hasPending(): boolean {
    return this.pending.size > 0;
  }

  /** A local proposal waits for the entry at this index. */
  waitsFor(index: number): boolean {
    return this.pending.has(index);
  }

  /** Called with each applied batch and its results. */
  applied(entries: readonly Entry[], results: readonly Uint8Array[], leaderId: string): void {
    if (this.pending.size === 0) return;
    this.settle(entries, results, leaderId, false);
  }

  private settle(entries: readonly Entry[], results: readonly Uint8Array[], leaderId: string, earlyOnly: boolean): void {
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!;
      const p = this.pending.get(e.index);
      if (!p || (earlyOnly && !p.early)) continue;
      this.remove(e.index, p);
      this.timers.cancel(p.timer);
      if (e.term === p.term) p.resolve({ index: e.index, result: results[i] ?? new Uint8Array(0) });
      else {
        p.reject(
          new HeraldError('NOT_LEADER', `entry ${e.index} was replaced by a newer leader's log; the proposal was not applied`, {
            leaderId: leaderId || undefined,
            notApplied: true,
          }),
        );
      }
    }
  }

  /**
   * Leadership lost: appended proposals may still commit under the new leader (and be applied
   * here), so they wait at most `graceMs` more before failing with OUTCOME_UNKNOWN.
   */
  leadershipLost(graceMs: number): void {
    for (const [index, p] of this.pending) {
      if (p.leadershipLost) continue;
      p.leadershipLost = true;
      this.timers.cancel(p.timer);
      p.timer = this.timers.after(graceMs, () => {
        if (this.pending.get(index) !== p) return;
        this.remove(index, p);
        p.reject(new HeraldError('OUTCOME_UNKNOWN', `leadership was lost after entry ${index} was appended; it may or may not commit`));
      });
    }
  }

  /** Any entry at or below a restored snapshot's index: its outcome can no longer be observed. */
  supersededUpTo(index: number): void {
    for (const [i, p] of this.pending) {
      if (i > index) continue;
      this.remove(i, p);
      this.timers.cancel(p.timer);
      p.reject(new HeraldError('OUTCOME_UNKNOWN', `entry ${i} was covered by an installed snapshot; outcome unknown`));
    }
  }

  failAll(make: (index: number) => Error): void {
    for (const [i, p] of this.pending) {
      this.timers.cancel(p.timer);
      p.reject(make(i));
    }
    this.pending.clear();
    this.earlyCount = 0;
  }
}
