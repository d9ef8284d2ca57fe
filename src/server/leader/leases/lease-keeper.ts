// Lease expiry on the leader. Heartbeats renew leases in the LeaseTable only (no log write);
// when a lease's monotonic deadline passes, the run's expiry goes through the log (one batched
// expireLeases command), which makes the run ready again — its next claim carries a higher
// fencing token — and the holder, if still connected, is told it lost the lease.
//
// A lease that ended at its execution timeout (lease-table.ts) is not an expiry: the attempt is
// finished through the log as a TIMED_OUT failure (a finishRuns item, fenced by its token, so
// the retry policy decides what follows exactly as for a worker's own timeout report), and the
// holder gets a RunCancel. A result it sends afterwards is refused as stale by the fencing check.
import type { Dispatcher } from '../dispatch/dispatcher.js';
import type { JobCache } from '../job-cache.js';
import type { LeaderReads, LeaderTerm } from '../leader-term.js';
import type { SessionRegistry } from '../worker-session.js';
import { finishFailure } from '../../../fsm/commands/commands.js';
import { leaseMsOf, remainingExecutionMs, type Lease, type LeaseTable } from './lease-table.js';
import { cancelTimer, timersOf, type LeaderTimers, type TimerHandle } from '../leader-timers.js';

/** The RunCancel reason a timed-out attempt's worker gets. */
export const EXECUTION_TIMEOUT_REASON = 'execution timeout';

const MAX_EXPIRE_BATCH = 5_000;
/** How often RUNNING runs missing from the lease table are looked for (ms). */
const ORPHAN_SWEEP_MS = 5_000;
const MAX_ORPHAN_SCAN = 50_000;

/** What the lease keeper uses of its term and of the other components. */
export interface LeaseKeeperDeps extends Pick<LeaderTerm, 'config' | 'metrics' | 'log' | 'now' | 'active' | 'propose'> {
  readonly timers?: LeaderTimers;
  readonly reads: Pick<LeaderReads, 'runningRuns'>;
  readonly jobs: Pick<JobCache, 'get'>;
  readonly leases: LeaseTable;
  readonly sessions: Pick<SessionRegistry, 'ofWorker'>;
  /** Expired runs are ready again: a dispatch round soon. */
  readonly dispatcher: Pick<Dispatcher, 'wake'>;
}

export class LeaseKeeper {
  private timer: TimerHandle | undefined;
  private orphanTimer: TimerHandle | undefined;
  /** Leases whose expiry (or timeout) proposal is in flight: no sweep proposes them again meanwhile. */
  private readonly expiring = new Set<string>();
  private stopped = false;

  constructor(private readonly ctx: LeaseKeeperDeps) {}

  start(): void {
    const timers = timersOf(this.ctx);
    this.timer = timers.every(this.ctx.config.leaseSweepMs, () => void this.sweep());
    this.orphanTimer = timers.every(ORPHAN_SWEEP_MS, () => void this.adoptOrphans());
  }

  stop(): void {
    this.stopped = true;
    cancelTimer(timersOf(this.ctx), this.timer);
    cancelTimer(timersOf(this.ctx), this.orphanTimer);
  }

  /**
   * A claim whose proposal failed with an unknown outcome may still have committed: its run is
   * RUNNING under a lease this leader never granted, so nothing would ever expire it. Any RUNNING
   * run missing from the table gets a lease from now (one duration), like a takeover adoption.
   * Cost follows the runs in flight, not the jobs stored.
   */
  async adoptOrphans(): Promise<number> {
    const ctx = this.ctx;
    if (this.stopped || !ctx.active()) return 0;
    let adopted = 0;
    try {
      // Records are read only for runs the table lacks (ids come from the state index).
      const running = await ctx.reads.runningRuns(MAX_ORPHAN_SCAN, (id) => !ctx.leases.get(id) && !ctx.leases.claimInFlight(id));
      for (const run of running) {
        if (this.stopped || !ctx.active()) break;
        if (ctx.leases.get(run.id) || ctx.leases.claimInFlight(run.id)) continue;
        const job = await ctx.jobs.get(run.jobId);
        if (ctx.leases.get(run.id) || ctx.leases.claimInFlight(run.id)) continue;
        const lease = ctx.leases.adopt(run.id, run.fencingToken, run.workerId, leaseMsOf(job, ctx.config.defaultLeaseMs), run);
        const left = remainingExecutionMs(run, job, ctx.now());
        if (left !== undefined) ctx.leases.limitExecution(lease, left);
        adopted++;
      }
      if (adopted > 0) ctx.log.warn({ adopted }, 'running runs without a lease on this leader adopted (a claim outcome was unknown)');
    } catch (e) {
      if (ctx.active()) ctx.log.warn({ err: e }, 'orphan lease sweep failed');
    }
    return adopted;
  }

  /**
   * Proposes the expiry of the leases due and not already in flight. Sweeps overlap: one proposal
   * that never answers (up to its 10 s timeout) holds only its own leases, not every later expiry.
   */
  private async sweep(): Promise<void> {
    const ctx = this.ctx;
    if (this.stopped || !ctx.active()) return;
    const due = ctx.leases.expired(MAX_EXPIRE_BATCH + this.expiring.size).filter((l) => !this.expiring.has(l.runId)).slice(0, MAX_EXPIRE_BATCH);
    if (due.length === 0 || ctx.now() === undefined) return;
    const batch: Lease[] = [];
    const timedOut: Lease[] = [];
    for (const l of due) (ctx.leases.timedOut(l) ? timedOut : batch).push(l);
    for (const l of due) this.expiring.add(l.runId);
    try {
      await Promise.all([timedOut.length > 0 ? this.timeOut(timedOut) : undefined, batch.length > 0 ? this.expire(batch) : undefined]);
    } finally {
      for (const l of due) this.expiring.delete(l.runId);
    }
  }

  /** Ends attempts that ran past their execution timeout (plus grace) as TIMED_OUT failures. */
  private async timeOut(batch: readonly Lease[]): Promise<void> {
    const ctx = this.ctx;
    // Stamped as it is proposed: a time taken before another proposal was awaited would sit
    // below commands proposed meanwhile (command times never decrease in log order).
    const now = ctx.now();
    if (now === undefined) return;
    try {
      const items = batch.map((l) =>
        finishFailure(l.runId, l.fencingToken, {
          type: 'ExecutionTimeout',
          message: 'the attempt ran past its execution timeout; ended by the leader',
          retryable: true,
          timedOut: true,
        }),
      );
      const res = await ctx.propose({ type: 'finishRuns', nowMs: now, items }, 'runItems', 10_000);
      if (!ctx.active()) return;
      let ended = 0;
      res.items.forEach((r, i) => {
        const l = batch[i]!;
        if (ctx.leases.get(l.runId)?.fencingToken === l.fencingToken) ctx.leases.release(l.runId);
        if (r.error) return; // finished, cancelled or re-claimed meanwhile
        ended++;
        ctx.sessions.ofWorker(l.workerId)?.send({ message: { $case: 'cancel', cancel: { runId: l.runId, fencingToken: l.fencingToken, reason: EXECUTION_TIMEOUT_REASON } } });
      });
      if (ended > 0) {
        ctx.metrics.executionTimeouts.inc(ended);
        ctx.log.warn({ timedOut: ended, runs: batch.slice(0, 10).map((l) => l.runId) }, 'attempts ran past their execution timeout: ended as TIMED_OUT');
        ctx.dispatcher.wake();
      }
    } catch (e) {
      if (ctx.active()) ctx.log.warn({ err: e, runs: batch.length }, 'ending timed-out attempts failed; retrying on the next sweep');
    }
  }

  private async expire(batch: readonly Lease[]): Promise<void> {
    const ctx = this.ctx;
    const now = ctx.now();
    if (now === undefined) return;
    try {
      const res = await ctx.propose(
        { type: 'expireLeases', nowMs: now, items: batch.map((l) => ({ runId: l.runId, fencingToken: l.fencingToken })) },
        'runItems',
        10_000,
      );
      if (!ctx.active()) return;
      let expired = 0;
      res.items.forEach((r, i) => {
        const l = batch[i]!;
        if (ctx.leases.get(l.runId)?.fencingToken === l.fencingToken) ctx.leases.release(l.runId);
        if (r.error) return; // finished, cancelled or re-claimed meanwhile: nothing to expire
        expired++;
        ctx.sessions.ofWorker(l.workerId)?.send({
          message: { $case: 'leaseLost', leaseLost: { runId: l.runId, fencingToken: l.fencingToken, reason: 'lease expired: no heartbeat within the lease duration' } },
        });
      });
      if (expired > 0) {
        ctx.metrics.leaseExpiries.inc(expired);
        ctx.log.info({ expired }, 'leases expired; runs are ready again');
        ctx.dispatcher.wake();
      }
    } catch (e) {
      if (ctx.active()) ctx.log.warn({ err: e, leases: batch.length }, 'expireLeases failed; retrying on the next sweep');
    }
  }
}
