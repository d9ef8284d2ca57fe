// Everything that runs only on the leader, for one term: fire scheduler, dispatcher, lease
// keeper, result batcher, watchdog, starting-deadline sweep and history trimming, plus the
// worker sessions connected to this leader.
//
// Start order matters: (1) watch applied entries (queued, handled later in log order), (2) pass a
// read barrier so the state machine holds every entry committed before this term, (3) wait for
// cluster time, (4) give every RUNNING run one lease duration of grace from the takeover, so
// workers that survived the old leader can re-attach, (5) build the timing wheel and start the
// loops. Workers that connect meanwhile wait for `ready` before they are welcomed.
import type { Logger } from 'pino';
import { AttemptOutcome } from '../../gen/herald/v1/run.js';
import type { HeldRun, WorkerHello } from '../../gen/herald/v1/worker_service.js';
import type { FsmCommand, FsmResult, SchedulerStateMachine } from '../../fsm/index.js';
import { decodeCommand, decodeJobHeads, decodeSignals } from '../../fsm/index.js';
import { unsafeSwitches } from '../../fsm/apply/unsafe-switches.js';
import { HeraldError } from '../../herald-error.js';
import { systemMonotonicClock } from '../../raft/driver/monotonic-clock.js';
import { DeadlineSweeper } from './deadline-sweeper.js';
import { Dispatcher, leaseMsOf } from './dispatch/dispatcher.js';
import { FireScheduler } from './fire/fire-scheduler.js';
import { JobCache } from './job-cache.js';
import { proposeCommand, proposeUnread, type LeaderContext } from './leader-term.js';
import { LeaseKeeper } from './leases/lease-keeper.js';
import { LeaseTable } from './leases/lease-table.js';
import type { NodeMetrics } from '../node/metrics.js';
import type { HeraldNode } from '../node/herald-node.js';
import { RESULT_TAG, type AppliedEntry, type ObservedStateMachine } from './observed-state-machine.js';
import { ResultBatcher } from './result-batcher.js';
import type { SchedulerConfig } from './leader-config.js';
import { Watchdog } from './watchdog.js';
import { SessionRegistry, type WorkerSession } from './worker-session.js';

export interface LeaderServicesDeps {
  node: HeraldNode;
  observed: ObservedStateMachine;
  config: SchedulerConfig;
  metrics: NodeMetrics;
  log: Logger;
  term: number;
}

const RESULT_OUTCOMES = new Set([AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED, AttemptOutcome.ATTEMPT_OUTCOME_FAILED, AttemptOutcome.ATTEMPT_OUTCOME_TIMED_OUT]);

const SIGNAL_REASON: Record<number, string> = {
  [RESULT_TAG.delete]: 'job deleted',
  [RESULT_TAG.fire]: 'replaced by a newer run (overlap policy REPLACE)',
  [RESULT_TAG.cancel]: 'run cancelled',
};

/**
 * The accept-stale-tokens negative control (unsafe-switches.ts): a holder whose token was
 * superseded is not told it lost its lease, so it finishes and reports, and the FSM (same switch)
 * accepts that report. Never true without the test-only opt-in.
 */
function staleTolerated(outcome: string): boolean {
  return (outcome === 'stale-token' || outcome === 'other-worker') && unsafeSwitches().acceptStaleTokens;
}

export class LeaderServices {
  readonly ctx: LeaderContext;
  readonly sessions = new SessionRegistry();
  readonly leases = new LeaseTable(systemMonotonicClock);
  readonly fire: FireScheduler;
  readonly dispatcher: Dispatcher;
  readonly leaseKeeper: LeaseKeeper;
  readonly results: ResultBatcher;
  readonly watchdog: Watchdog;
  readonly deadlines: DeadlineSweeper;
  private activeFlag = true;
  private readyFlag = false;
  private readonly readyPromise: Promise<boolean>;
  private resolveReady!: (ok: boolean) => void;
  private trimTimer: NodeJS.Timeout | undefined;
  private trimming = false;
  private trimRounds = 0;

  constructor(private readonly deps: LeaderServicesDeps) {
    const { node, config, metrics } = deps;
    const fsm: SchedulerStateMachine = deps.observed.fsm;
    this.readyPromise = new Promise((r) => (this.resolveReady = r));
    this.ctx = {
      node,
      fsm,
      config,
      metrics,
      log: deps.log,
      leases: this.leases,
      sessions: this.sessions,
      jobs: new JobCache(fsm),
      term: deps.term,
      now: () => node.clusterClock.nowMs(),
      active: () => this.activeFlag && node.driver.isLeader(),
      propose: <T extends FsmResult['type']>(cmd: FsmCommand, expect: T, timeoutMs = 10_000) => {
        if (!this.activeFlag) return Promise.reject(new HeraldError('NOT_LEADER', 'leadership of this term is over'));
        return proposeCommand(node, cmd, expect, timeoutMs);
      },
      proposeUnread: (cmd: FsmCommand, expect: FsmResult['type'], timeoutMs = 10_000) => {
        if (!this.activeFlag) return Promise.reject(new HeraldError('NOT_LEADER', 'leadership of this term is over'));
        return proposeUnread(node, cmd, expect, timeoutMs);
      },
      wakeDispatcher: () => this.dispatcher.wake(),
      dispatchRoom: () => this.dispatcher.dispatchRoom(),
      wakeFires: () => this.fire.pump(),
      claimInFlight: (runId) => this.dispatcher.claimInFlight(runId),
      claimBehindFire: (fired, nowMs, hintOf) => this.dispatcher.claimBehindFire(fired, nowMs, hintOf),
    };
    this.fire = new FireScheduler(this.ctx);
    this.dispatcher = new Dispatcher(this.ctx);
    this.leaseKeeper = new LeaseKeeper(this.ctx);
    this.results = new ResultBatcher(this.ctx);
    this.watchdog = new Watchdog(this.ctx);
    this.deadlines = new DeadlineSweeper(this.ctx);
  }

  get active(): boolean {
    return this.activeFlag;
  }

  get ready(): boolean {
    return this.readyFlag && this.activeFlag;
  }

  /** Resolves true once workers can be served, false if leadership ended first. */
  whenReady(): Promise<boolean> {
    return this.readyPromise;
  }

  async start(): Promise<void> {
    const { node, observed, config, log } = this.deps;
    observed.setListener((entries) => this.onApplied(entries));
    const t0 = Date.now();
    await node.readIndex({ timeoutMs: node.driver.electionTimeoutMs() * 4 });
    const now = await this.waitClusterTime(node.driver.electionTimeoutMs() * 4);
    if (!this.activeFlag) return;
    const adopted = await this.adoptRunning();
    if (!this.activeFlag) return;
    await this.fire.start(now);
    if (!this.activeFlag) return;
    this.dispatcher.start();
    this.leaseKeeper.start();
    this.watchdog.start();
    this.deadlines.start();
    this.trimTimer = setInterval(() => void this.trim(), config.trimIntervalMs);
    this.readyFlag = true;
    this.resolveReady(true);
    log.info({ term: this.deps.term, adopted, tookMs: Date.now() - t0 }, 'leader services started');
  }

  /** Stops proposing and returns the open sessions (the caller redirects them to the new leader). */
  stop(): WorkerSession[] {
    if (!this.activeFlag) return [];
    this.activeFlag = false;
    this.readyFlag = false;
    this.resolveReady(false);
    if (this.deps.observed) this.deps.observed.setListener(undefined);
    clearInterval(this.trimTimer);
    this.fire.stop();
    this.dispatcher.stop();
    this.leaseKeeper.stop();
    this.results.stop();
    this.watchdog.stop();
    this.deadlines.stop();
    this.leases.clear();
    return this.sessions.all();
  }

  // ---- worker sessions ------------------------------------------------------------------

  /** A hello: registers the session and decides which held runs it keeps. */
  async attach(session: WorkerSession, held: readonly HeldRun[]): Promise<{ adopted: HeldRun[]; rejected: HeldRun[] }> {
    const out = await this.reattach(session, held);
    this.releaseUnheld(session.workerId, held);
    this.sessions.add(session);
    this.deps.metrics.workersConnected.set(this.sessions.all().length);
    this.dispatcher.wake();
    return out;
  }

  detach(session: WorkerSession): void {
    this.sessions.remove(session);
    this.deps.metrics.workersConnected.set(this.sessions.all().length);
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
      const outcome = this.leases.renew(h.runId, h.fencingToken, session.workerId);
      if (outcome === 'renewed' || (outcome === 'unknown-run' && (await this.resultRecorded(h, session.workerId)))) adopted.push(ref);
      else if (staleTolerated(outcome)) adopted.push(ref); // negative control: the stale holder keeps going
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
  private releaseUnheld(workerId: string, held: readonly HeldRun[]): void {
    const listed = new Set(held.map((h) => h.runId));
    const released: string[] = [];
    for (const lease of this.leases.heldBy(workerId)) {
      if (listed.has(lease.runId) || this.dispatcher.claimInFlight(lease.runId)) continue;
      lease.deadlineMs = 0;
      released.push(lease.runId);
    }
    if (released.length > 0) this.deps.log.info({ workerId, runs: released.slice(0, 20), count: released.length }, 'worker reconnected without runs leased to it (never delivered): expiring them now');
  }

  /** True when the run's attempt under this token, by this worker, already ended with a result. */
  async resultRecorded(h: HeldRun, workerId: string): Promise<boolean> {
    const run = await this.ctx.fsm.getRun(h.runId);
    const attempt = run?.attempts.find((a) => a.fencingToken === h.fencingToken);
    return !!attempt && attempt.workerId === workerId && RESULT_OUTCOMES.has(attempt.outcome);
  }

  heartbeat(session: WorkerSession, runs: readonly HeldRun[]): void {
    if (!this.activeFlag) return;
    for (const h of runs) {
      const outcome = this.leases.renew(h.runId, h.fencingToken, session.workerId);
      if (outcome === 'renewed' || staleTolerated(outcome)) continue;
      if (outcome === 'unknown-run') {
        // Maybe only the ack of its result is missing (it comes with the re-sent result).
        void this.resultRecorded(h, session.workerId).then((recorded) => {
          if (!recorded && this.activeFlag) session.send({ message: { $case: 'leaseLost', leaseLost: { runId: h.runId, fencingToken: h.fencingToken, reason: 'the run is no longer running under this lease (finished, cancelled or expired)' } } });
        });
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

  credits(session: WorkerSession, n: number): void {
    session.addCredits(n);
    this.dispatcher.wake();
  }

  drain(session: WorkerSession): void {
    session.draining = true;
    session.credits = 0;
  }

  static validateHello(hello: WorkerHello): void {
    if (!/^[A-Za-z0-9._:-]{1,128}$/.test(hello.workerId)) {
      throw new HeraldError('INVALID_ID', `hello.worker_id "${hello.workerId.slice(0, 200)}" must be 1–128 characters of [A-Za-z0-9._:-]`, { field: 'worker_id' });
    }
    if (hello.taskTypes.length === 0 || hello.taskTypes.length > 256) {
      throw new HeraldError('INVALID_ARGUMENT', 'hello.task_types must list 1–256 task types', { field: 'task_types' });
    }
    for (const t of hello.taskTypes) {
      if (!/^[A-Za-z0-9._:-]{1,128}$/.test(t)) throw new HeraldError('INVALID_ARGUMENT', `hello.task_types: bad task type "${t.slice(0, 200)}"`, { field: 'task_types' });
    }
    if (!Number.isInteger(hello.capacity) || hello.capacity < 0 || hello.capacity > 100_000) {
      throw new HeraldError('INVALID_ARGUMENT', `hello.capacity must be 0–100000 (got ${hello.capacity})`, { field: 'capacity' });
    }
    if (hello.heldRuns.length > 100_000) throw new HeraldError('INVALID_ARGUMENT', 'hello.held_runs lists too many runs', { field: 'held_runs' });
  }

  // ---- internals --------------------------------------------------------------------------

  private onApplied(entries: readonly AppliedEntry[]): void {
    if (!this.activeFlag) return;
    this.fire.onApplied(entries);
    for (const e of entries) {
      if (e.tag !== RESULT_TAG.job && e.tag !== RESULT_TAG.jobs && e.tag !== RESULT_TAG.delete) continue;
      try {
        // A job changed by a job or jobs entry is in its result (a refused item changed nothing);
        // the heads are read without the specs that decoding the command would cost.
        if (e.tag !== RESULT_TAG.delete) for (const j of decodeJobHeads(e.result)) this.ctx.jobs.invalidate(j.id);
        else {
          const cmd = decodeCommand(e.data);
          if ('jobId' in cmd) this.ctx.jobs.invalidate(cmd.jobId);
        }
      } catch {
        this.ctx.jobs.clear();
      }
    }
    let wake = false;
    const signalled: AppliedEntry[] = [];
    for (const e of entries) {
      if (e.tag === RESULT_TAG.delete || e.tag === RESULT_TAG.fire || e.tag === RESULT_TAG.cancel) signalled.push(e);
      if (e.tag === RESULT_TAG.fire || e.tag === RESULT_TAG.trigger || e.tag === RESULT_TAG.backfill || e.tag === RESULT_TAG.runItems || e.tag === RESULT_TAG.cancel) wake = true;
    }
    if (wake) this.dispatcher.wake();
    // Decode outside apply: apply must stay fast and must never fail because of us.
    if (signalled.length > 0) setImmediate(() => this.deliverSignals(signalled));
  }

  private deliverSignals(entries: readonly AppliedEntry[]): void {
    if (!this.activeFlag) return;
    for (const e of entries) {
      for (const s of decodeSignals(e.result)) {
        if (this.leases.get(s.runId)?.fencingToken === s.fencingToken) this.leases.release(s.runId);
        this.sessions.ofWorker(s.workerId)?.send({
          message: { $case: 'cancel', cancel: { runId: s.runId, fencingToken: s.fencingToken, reason: SIGNAL_REASON[e.tag] ?? 'cancelled' } },
        });
      }
    }
  }

  private async waitClusterTime(timeoutMs: number): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const now = this.ctx.now();
      if (now !== undefined) return now;
      if (!this.activeFlag) throw new HeraldError('NOT_LEADER', 'leadership ended before cluster time was known');
      if (Date.now() > deadline) throw new HeraldError('NOT_READY', 'no quorum of fresh clock samples for cluster time');
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Every RUNNING run gets one lease duration from now: its worker may still be alive. */
  private async adoptRunning(): Promise<number> {
    const runs = await this.ctx.fsm.runningRuns();
    const leaseOf = new Map<string, number>();
    for (const run of runs) {
      if (!leaseOf.has(run.jobId)) leaseOf.set(run.jobId, leaseMsOf(await this.ctx.jobs.get(run.jobId), this.deps.config.defaultLeaseMs));
      this.leases.adopt(run.id, run.fencingToken, run.workerId, leaseOf.get(run.jobId)!);
    }
    return runs.length;
  }

  private async trim(): Promise<void> {
    const now = this.ctx.now();
    if (now === undefined || !this.ctx.active() || this.trimming) return;
    const jobIds = this.results.trims.take();
    // With no history due, idempotency-key expiry alone goes out about every 10 s: an idle
    // cluster should not write a log entry every round.
    if (jobIds.length === 0 && this.trimRounds++ % Math.max(1, Math.round(10_000 / this.deps.config.trimIntervalMs)) !== 0) return;
    this.trimming = true;
    try {
      // Idempotency-key expiry rides along, bounded the same way.
      await this.ctx.propose({ type: 'trimHistory', nowMs: now, jobIds, maxIdempotencyKeys: 200 }, 'trim', 10_000);
    } catch (e) {
      this.results.trims.putBack(jobIds);
      if (this.ctx.active()) this.deps.log.debug({ err: e }, 'trimHistory failed');
    } finally {
      this.trimming = false;
    }
  }
}
