// What the leader does with the leases of connected workers: a hello's held runs re-attached (or
// refused), leases the hello does not list expired at once, heartbeats renewing leases (and
// telling the worker of ones it lost), and at takeover one lease duration of grace for every
// RUNNING run. The lease table holds the leases; this is the worker-facing logic around it.
import type { Logger } from 'pino';
import { AttemptOutcome } from '../../../gen/herald/v1/run.js';
import type { HeldRun } from '../../../gen/herald/v1/worker_service.js';
import type { JobCache } from '../job-cache.js';
import type { SchedulerConfig } from '../leader-config.js';
import type { LeaderReads } from '../leader-term.js';
import type { WorkerSession } from '../worker-session.js';
import { leaseMsOf, remainingExecutionMs, type LeaseTable } from './lease-table.js';

const RESULT_OUTCOMES = new Set([AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED, AttemptOutcome.ATTEMPT_OUTCOME_FAILED, AttemptOutcome.ATTEMPT_OUTCOME_TIMED_OUT]);

/**
 * The accept-stale-tokens negative control (unsafe-switches.ts): a holder whose token was
 * superseded is not told it lost its lease, so it finishes and reports, and the FSM (same switch)
 * accepts that report. Never true without the test-only opt-in.
 */
function staleTolerated(outcome: string, acceptStaleTokens: boolean): boolean {
  return (outcome === 'stale-token' || outcome === 'other-worker') && acceptStaleTokens;
}

/** What worker leases use of their term and of the other components. */
export interface WorkerLeasesDeps {
  readonly reads: Pick<LeaderReads, 'getRun' | 'runningRuns' | 'unsafe'>;
  readonly jobs: Pick<JobCache, 'get'>;
  readonly leases: LeaseTable;
  readonly config: Pick<SchedulerConfig, 'defaultLeaseMs'>;
  readonly log: Logger;
  /** Cluster time (undefined until known): what adopted attempts have left of their execution time. */
  readonly now: () => number | undefined;
}

export class WorkerLeases {
  private stopped = false;

  constructor(private readonly deps: WorkerLeasesDeps) {}

  /** The term's services stopped: heartbeats are no longer answered. */
  stop(): void {
    this.stopped = true;
  }

  /**
   * Runs a worker still holds: adopted when run id, token and holder match the lease. A run
   * whose attempt under that token already ended with a result (committed just before a leader
   * change, its ack lost) is adopted too: the worker re-sends the result and gets it
   * acknowledged as accepted instead of being told it lost a lease it never lost.
   */
  async reattach(session: WorkerSession, held: readonly HeldRun[]): Promise<{ adopted: HeldRun[]; rejected: HeldRun[] }> {
    const adopted: HeldRun[] = [];
    const rejected: HeldRun[] = [];
    for (const h of held) {
      const ref = { runId: h.runId, fencingToken: h.fencingToken };
      const outcome = this.deps.leases.renew(h.runId, h.fencingToken, session.workerId);
      if (outcome === 'renewed' || (outcome === 'unknown-run' && (await this.resultRecorded(h, session.workerId)))) adopted.push(ref);
      else if (staleTolerated(outcome, this.deps.reads.unsafe.acceptStaleTokens)) adopted.push(ref); // negative control: the stale holder keeps going
      else if (outcome === 'stale-token' && this.deps.reads.unsafe.adoptWithoutTokenCheck) adopted.push(ref); // negative control: matched by run id alone
      else rejected.push(ref);
    }
    return { adopted, rejected };
  }

  /**
   * A hello lists every run its worker holds (the worker opens a stream only after closing the
   * previous one, so no older assignment can still reach it). A lease this leader keeps for the
   * worker that the hello does not list is a run the worker never received: typically a claim
   * that committed while the old leader died before sending the assignment. Waiting out the
   * takeover grace would only delay that run by a lease duration, so it expires at the next sweep.
   */
  releaseUnheld(workerId: string, held: readonly HeldRun[]): void {
    const { leases } = this.deps;
    const listed = new Set(held.map((h) => h.runId));
    const released: string[] = [];
    for (const lease of leases.heldBy(workerId)) {
      if (listed.has(lease.runId) || leases.claimInFlight(lease.runId)) continue;
      lease.deadlineMs = 0;
      released.push(lease.runId);
    }
    if (released.length > 0) this.deps.log.info({ workerId, runs: released.slice(0, 20), count: released.length }, 'worker reconnected without runs leased to it (never delivered): expiring them now');
  }

  /** True when the run's attempt under this token, by this worker, already ended with a result. */
  async resultRecorded(h: HeldRun, workerId: string): Promise<boolean> {
    const run = await this.deps.reads.getRun(h.runId);
    const attempt = run?.attempts.find((a) => a.fencingToken === h.fencingToken);
    return !!attempt && attempt.workerId === workerId && RESULT_OUTCOMES.has(attempt.outcome);
  }

  heartbeat(session: WorkerSession, runs: readonly HeldRun[]): void {
    if (this.stopped) return;
    for (const h of runs) {
      const outcome = this.deps.leases.renew(h.runId, h.fencingToken, session.workerId);
      if (outcome === 'renewed' || staleTolerated(outcome, this.deps.reads.unsafe.acceptStaleTokens)) continue;
      if (outcome === 'unknown-run') {
        // Maybe only the ack of its result is missing (it comes with the re-sent result).
        void this.resultRecorded(h, session.workerId).then(
          (recorded) => {
            if (!recorded && !this.stopped) session.send({ message: { $case: 'leaseLost', leaseLost: { runId: h.runId, fencingToken: h.fencingToken, reason: 'the run is no longer running under this lease (finished, cancelled or expired)' } } });
          },
          // A failed store read tells nothing: no lease-lost on a guess (the next heartbeat asks
          // again), and never an unhandled rejection, which would take the node down.
          (err: unknown) => this.deps.log.warn({ err, runId: h.runId }, 'could not read a heartbeat\'s unknown run; asking again at the next heartbeat'),
        );
        continue;
      }
      const reason =
        outcome === 'stale-token'
          ? 'the run was claimed again with a newer fencing token'
          : outcome === 'other-worker'
            ? 'the run is held by another worker'
            : 'the run is no longer running under this lease (finished, cancelled or expired)';
      session.send({ message: { $case: 'leaseLost', leaseLost: { runId: h.runId, fencingToken: h.fencingToken, reason } } });
    }
  }

  /**
   * At takeover every RUNNING run gets one lease duration from now: its worker may still be
   * alive, and re-attaches within that grace. Returns how many runs were adopted.
   */
  async adoptRunning(): Promise<number> {
    const { reads, jobs, leases, config } = this.deps;
    const runs = await reads.runningRuns();
    const now = this.deps.now();
    for (const run of runs) {
      const job = await jobs.get(run.jobId);
      const lease = leases.adopt(run.id, run.fencingToken, run.workerId, leaseMsOf(job, config.defaultLeaseMs), run);
      // The execution timeout counts from the attempt's start, not from the takeover.
      const left = remainingExecutionMs(run, job, now);
      if (left !== undefined) leases.limitExecution(lease, left);
      // The drop-claim-lease-on-failover negative control (unsafe-switches.ts): no grace at all.
      if (reads.unsafe.dropClaimLeaseOnFailover) lease.deadlineMs = 0;
    }
    return runs.length;
  }
}
