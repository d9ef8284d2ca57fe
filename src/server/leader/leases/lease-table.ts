// The leader's in-memory view of run leases. Heartbeats extend a lease here without a log write;
// only expiry goes through the log (an expire-leases command), so a lease is lost only when the
// leader has really not heard from the holder for a whole lease duration (monotonic time).
//
// A run of a job with an execution timeout also has a time-out instant: heartbeats never extend
// its lease past it, and once it passes the lease keeper ends the attempt as TIMED_OUT (the
// worker's own AbortSignal may be ignored, or a worker written from the proto may not have one).
//
// It also knows the runs whose claim is in flight (the dispatcher proposed it, it has not applied
// yet): their leases are about to be granted, so the lease sweeps and a reconnecting worker's
// hello must leave them alone, and dispatch rounds must not claim them again.
//
// Both together are what the dispatcher's limits count (running-counts.ts): a run counts from the
// moment its claim is planned until its lease goes or its holder reports its result (the handler
// is done; result-batcher.ts), so a limit is never exceeded while a claim is in flight, and a new
// leader that adopts every RUNNING run at takeover counts them all.
import type { Job } from '../../../gen/herald/v1/job.js';
import type { Run } from '../../../gen/herald/v1/run.js';
import type { Clock } from '../../node/cluster-clock.js';
import { RunningCounts, type RunKey } from './running-counts.js';

/**
 * How long past its execution timeout an attempt may run before the leader ends it: a worker
 * that honours the timeout reports a TIMED_OUT failure itself within this.
 */
export const EXECUTION_TIMEOUT_GRACE_MS = 2_000;

/** A job's lease duration: its spec's, or the leader's default. */
export function leaseMsOf(job: Job | undefined, defaultMs: number): number {
  const ms = job?.spec?.leaseDurationMs ?? 0;
  return ms > 0 ? ms : defaultMs;
}

/**
 * What is left of a running attempt's execution time at cluster time `nowMs` (undefined: its job
 * sets no timeout). Without a cluster time the whole timeout is left: late, never early.
 */
export function remainingExecutionMs(run: Run, job: Job | undefined, nowMs: number | undefined): number | undefined {
  const timeoutMs = job?.spec?.executionTimeoutMs ?? 0;
  if (timeoutMs <= 0) return undefined;
  const started = run.attempts[run.attempts.length - 1]?.startedUnixMs ?? 0;
  return nowMs === undefined || started === 0 ? timeoutMs : started + timeoutMs - nowMs;
}

export interface Lease {
  runId: string;
  fencingToken: number;
  workerId: string;
  durationMs: number;
  /** Monotonic deadline. */
  deadlineMs: number;
  /** Monotonic instant the attempt is timed out at (execution timeout + grace); 0 = none. */
  timeoutAtMs: number;
}

export type RenewOutcome = 'renewed' | 'unknown-run' | 'stale-token' | 'other-worker';

export class LeaseTable {
  private readonly leases = new Map<string, Lease>();
  /**
   * Runs whose claim is in flight: the ready index still lists them until the claim applies. A
   * claim settles only once it has applied here (or failed), and the ready index is read
   * synchronously from what was applied, so no read can list a settled run.
   */
  private readonly claiming = new Set<string>();

  /** Runs counted against the limits: claimed (in flight) or leased. */
  readonly running = new RunningCounts();

  constructor(private readonly monotonic: Clock) {}

  get size(): number {
    return this.leases.size;
  }

  /** Leases held per worker id (ListWorkers). */
  heldByWorker(): Map<string, number> {
    const held = new Map<string, number>();
    for (const l of this.leases.values()) held.set(l.workerId, (held.get(l.workerId) ?? 0) + 1);
    return held;
  }

  /** A claim of the run is being proposed (its lease is granted when it commits). */
  claimStarted(runId: string, key: RunKey): void {
    this.claiming.add(runId);
    this.running.add(runId, key);
  }

  /** The claim of the run applied or failed: the ready index and this table now say where it is. */
  claimSettled(runId: string): void {
    this.claiming.delete(runId);
    if (!this.leases.has(runId)) this.running.remove(runId);
  }

  /** True while a claim of this run is being proposed. */
  claimInFlight(runId: string): boolean {
    return this.claiming.has(runId);
  }

  /** How many runs have a claim in flight. */
  get claimsInFlight(): number {
    return this.claiming.size;
  }

  /** A claim committed: the worker holds the run from now for durationMs. */
  grant(runId: string, fencingToken: number, workerId: string, durationMs: number, key?: RunKey): Lease {
    if (key) this.running.add(runId, key);
    const lease = { runId, fencingToken, workerId, durationMs, deadlineMs: this.monotonic.nowMs() + durationMs, timeoutAtMs: 0 };
    this.leases.set(runId, lease);
    return lease;
  }

  /**
   * The attempt under `lease` may run `remainingMs` more (its execution timeout less what it has
   * run), plus the grace: its lease ends then at the latest, whatever the heartbeats say.
   */
  limitExecution(lease: Lease, remainingMs: number): void {
    lease.timeoutAtMs = this.monotonic.nowMs() + Math.max(0, remainingMs) + EXECUTION_TIMEOUT_GRACE_MS;
    if (lease.deadlineMs > lease.timeoutAtMs) lease.deadlineMs = lease.timeoutAtMs;
  }

  /** True when the lease ends because its attempt ran out of execution time (not for silence). */
  timedOut(lease: Lease): boolean {
    return lease.timeoutAtMs > 0 && lease.timeoutAtMs <= this.monotonic.nowMs();
  }

  /**
   * After a leader change every running run gets one lease duration from the takeover (DESIGN §3
   * step 6 and issue 6), so workers that survived have time to reconnect and re-attach.
   */
  adopt(runId: string, fencingToken: number, workerId: string, durationMs: number, key: RunKey): Lease {
    return this.grant(runId, fencingToken, workerId, durationMs, key);
  }

  renew(runId: string, fencingToken: number, workerId: string): RenewOutcome {
    const lease = this.leases.get(runId);
    if (!lease) return 'unknown-run';
    if (lease.fencingToken !== fencingToken) return 'stale-token';
    if (lease.workerId !== workerId) return 'other-worker';
    const deadline = this.monotonic.nowMs() + lease.durationMs;
    // Past its execution timeout a run keeps the deadline it has: heartbeats do not save it.
    lease.deadlineMs = lease.timeoutAtMs > 0 && deadline > lease.timeoutAtMs ? lease.timeoutAtMs : deadline;
    return 'renewed';
  }

  get(runId: string): Lease | undefined {
    return this.leases.get(runId);
  }

  release(runId: string): void {
    this.leases.delete(runId);
    if (!this.claiming.has(runId)) this.running.remove(runId);
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
    this.running.clear();
  }
}
