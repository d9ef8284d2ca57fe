// The leader's view of one follower (etcd's tracker.Progress) and its flow-control state:
//  - probe: one append at a time until the follower's match is found (after a rejection or restart);
//  - replicate: optimistic pipelining, bounded by the in-flight window;
//  - snapshot: waiting for an InstallSnapshot to land; no appends are sent.

import { Inflights } from './inflights.js';

export type ProgressState = 'probe' | 'replicate' | 'snapshot';

export class Progress {
  match = 0;
  next: number;
  state: ProgressState = 'probe';
  /** The snapshot index sent while in snapshot state. */
  pendingSnapshot = 0;
  /** Heard from since the last check-quorum round. */
  recentActive = false;
  /** In probe state: an append is outstanding, so hold further ones until a reply or heartbeat. */
  probeSent = false;
  readonly inflights: Inflights;

  constructor(next: number, maxInflight: number) {
    this.next = next;
    this.inflights = new Inflights(maxInflight);
  }

  private resetState(state: ProgressState): void {
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.state = state;
    this.inflights.reset();
  }

  becomeProbe(): void {
    // After a snapshot, resume just past it (or past match if the follower has more).
    if (this.state === 'snapshot') {
      const pending = this.pendingSnapshot;
      this.resetState('probe');
      this.next = Math.max(this.match + 1, pending + 1);
    } else {
      this.resetState('probe');
      this.next = this.match + 1;
    }
  }

  becomeReplicate(): void {
    this.resetState('replicate');
    this.next = this.match + 1;
  }

  becomeSnapshot(snapshotIndex: number): void {
    this.resetState('snapshot');
    this.pendingSnapshot = snapshotIndex;
  }

  /** An acknowledgement up to `n`; false when it is stale (already known). */
  maybeUpdate(n: number): boolean {
    let updated = false;
    if (this.match < n) {
      this.match = n;
      updated = true;
      this.probeSent = false;
    }
    this.next = Math.max(this.next, n + 1);
    return updated;
  }

  /** Records an append of entries up to `lastIndex` just sent (or none, for a probe). */
  sentEntries(count: number, lastIndex: number): void {
    if (this.state === 'replicate') {
      if (count > 0) {
        this.next = lastIndex + 1;
        this.inflights.add(lastIndex);
      }
    } else if (this.state === 'probe') {
      this.probeSent = true;
    }
  }

  /**
   * A rejection of the append whose previous index was `rejected`; `matchHint` is where to
   * probe next (fast backtracking). Returns false when the rejection is stale.
   */
  maybeDecrTo(rejected: number, matchHint: number): boolean {
    if (this.state === 'replicate') {
      // Only a rejection of something past match is news; older ones are duplicates.
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    // In probe state only the latest probe (at next-1) counts.
    if (this.next - 1 !== rejected) return false;
    if (this.state === 'probe' && matchHint < this.match) {
      // The follower rejects the probe at our match and points below it: it no longer holds
      // entries it acknowledged (its data dir was wiped, or its disk dropped synced writes).
      // Believe it: commits must not count entries it lost, and backtracking must be able to go
      // below the old match (below our first index that means a snapshot), or it never catches
      // up. A lower match is only ever more conservative: the commit index never moves back.
      this.match = 0;
      this.next = Math.max(matchHint + 1, 1);
      this.probeSent = false;
      return true;
    }
    this.next = Math.max(Math.min(rejected, matchHint + 1), this.match + 1, 1);
    this.probeSent = false;
    return true;
  }

  isPaused(): boolean {
    switch (this.state) {
      case 'probe':
        return this.probeSent;
      case 'replicate':
        return this.inflights.full();
      case 'snapshot':
        return true;
    }
  }
}
