import type { Clock } from '../../node/cluster-clock.js';

/**
 * The leader's in-memory view of run leases. Heartbeats extend a lease here without a log write;
 * only expiry goes through the log (an expire-leases command), so a lease is lost only when the
 * leader has really not heard from the holder for a whole lease duration (monotonic time).
 */
export interface Lease {
  runId: string;
  fencingToken: number;
  workerId: string;
  durationMs: number;
  /** Monotonic deadline. */
  deadlineMs: number;
}

export type RenewOutcome = 'renewed' | 'unknown-run' | 'stale-token' | 'other-worker';

export class LeaseTable {
  private readonly leases = new Map<string, Lease>();

  constructor(private readonly monotonic: Clock) {}

  get size(): number {
    return this.leases.size;
  }

  /** A claim committed: the worker holds the run from now for durationMs. */
  grant(runId: string, fencingToken: number, workerId: string, durationMs: number): Lease {
    const lease = { runId, fencingToken, workerId, durationMs, deadlineMs: this.monotonic.nowMs() + durationMs };
    this.leases.set(runId, lease);
    return lease;
  }

  /**
   * After a leader change every running run gets one lease duration from the takeover (DESIGN §3
   * step 6 and issue 6), so workers that survived have time to reconnect and re-attach.
   */
  adopt(runId: string, fencingToken: number, workerId: string, durationMs: number): Lease {
    return this.grant(runId, fencingToken, workerId, durationMs);
  }

  renew(runId: string, fencingToken: number, workerId: string): RenewOutcome {
    const lease = this.leases.get(runId);
    if (!lease) return 'unknown-run';
    if (lease.fencingToken !== fencingToken) return 'stale-token';
    if (lease.workerId !== workerId) return 'other-worker';
    lease.deadlineMs = this.monotonic.nowMs() + lease.durationMs;
    return 'renewed';
  }

  get(runId: string): Lease | undefined {
    return this.leases.get(runId);
  }

  release(runId: string): void {
    this.leases.delete(runId);
  }

  /** Leases whose deadline passed, oldest first, at most `limit`. They stay until released. */
  expired(limit = Infinity): Lease[] {
    const now = this.monotonic.nowMs();
    const out: Lease[] = [];
    for (const lease of this.leases.values()) if (lease.deadlineMs <= now) out.push(lease);
    out.sort((a, b) => a.deadlineMs - b.deadlineMs);
    return out.length > limit ? out.slice(0, limit) : out;
  }

  heldBy(workerId: string): Lease[] {
    return [...this.leases.values()].filter((l) => l.workerId === workerId);
  }

  clear(): void {
    this.leases.clear();
  }
}
