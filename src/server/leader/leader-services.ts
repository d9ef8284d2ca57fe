// The assembly of one term of leadership: everything that runs only on the leader (fire
// scheduler, dispatcher, lease keeper and worker leases, result batcher, watchdog,
// starting-deadline sweep, history trims) and the worker sessions connected to this leader. Each
// component gets the LeaderTerm members and the other components it uses, nothing more; the
// applied-results feed is routed from here to those that act on it.
//
// Start order matters: (1) watch applied entries (queued, handled later in log order), (2) pass a
// read barrier so the state machine holds every entry committed before this term, (3) wait for
// cluster time, (4) give every RUNNING run one lease duration of grace from the takeover, so
// workers that survived the old leader can re-attach, (5) build the timing wheel and start the
// loops. Workers that connect meanwhile wait for `ready` before they are welcomed.
import type { Logger } from 'pino';
import type { HeldRun } from '../../gen/herald/v1/worker_service.js';
import { decodeCommand, decodeJobHeads, decodeSignals, type AppliedKind, type FsmCommand, type FsmResult } from '../../fsm/index.js';
import { HeraldError } from '../../herald-error.js';
import type { NodeMetrics } from '../node/metrics.js';
import type { AppliedEntry, AppliedResultsFeed } from './applied-results-feed.js';
import { DeadlineSweeper } from './deadline-sweeper.js';
import { Dispatcher } from './dispatch/dispatcher.js';
import { DispatchGate } from './dispatch/dispatch-gate.js';
import { LimitsLoader } from './dispatch/limits-loader.js';
import { TaskTypeMetrics } from './task-type-metrics.js';
import { FireScheduler } from './fire/fire-scheduler.js';
import { JobCache } from './job-cache.js';
import type { SchedulerConfig } from './leader-config.js';
import { proposeCommand, type LeaderNode, type LeaderReads, type LeaderTerm } from './leader-term.js';
import { timersOf, type LeaderTimers } from './leader-timers.js';
import { LeaseKeeper } from './leases/lease-keeper.js';
import { LeaseTable } from './leases/lease-table.js';
import { WorkerLeases } from './leases/worker-leases.js';
import { ResultBatcher } from './result-batcher.js';
import { HistoryTrimmer } from './history-trimmer.js';
import { Watchdog } from './watchdog.js';
import { SessionRegistry, type WorkerSession } from './worker-session.js';

export interface LeaderServicesDeps {
  node: LeaderNode;
  feed: AppliedResultsFeed;
  config: SchedulerConfig;
  metrics: NodeMetrics;
  log: Logger;
  term: number;
  /** Monotonic clock and timers (default Node's; the simulator passes simulated time). */
  timers?: LeaderTimers;
}

/** Why a run's worker is told to cancel it, by the kind of entry that stopped the run. */
const SIGNAL_REASON: Partial<Record<AppliedKind, string>> = {
  delete: 'job deleted',
  fire: 'replaced by a newer run (overlap policy REPLACE)',
  trigger: 'replaced by a manual run (overlap policy REPLACE)',
  cancel: 'run cancelled',
};

export class LeaderServices {
  readonly term: LeaderTerm;
  readonly sessions = new SessionRegistry();
  readonly leases: LeaseTable;
  /** The dispatcher's limits, on the same monotonic clock as the leases. */
  readonly gate: DispatchGate;
  private readonly timers: LeaderTimers;
  readonly limits: LimitsLoader;
  private readonly taskTypeMetrics: TaskTypeMetrics;
  /** Job records (lease adoption, deadline sweeps), invalidated by applied job changes. */
  readonly jobs: JobCache;
  readonly fire: FireScheduler;
  readonly dispatcher: Dispatcher;
  readonly workerLeases: WorkerLeases;
  readonly leaseKeeper: LeaseKeeper;
  readonly results: ResultBatcher;
  readonly trimmer: HistoryTrimmer;
  readonly watchdog: Watchdog;
  readonly deadlines: DeadlineSweeper;
  private activeFlag = true;
  private readyFlag = false;
  private readonly readyPromise: Promise<boolean>;
  private resolveReady!: (ok: boolean) => void;

  constructor(private readonly deps: LeaderServicesDeps) {
    const { node, config, metrics, log } = deps;
    const reads: LeaderReads = deps.feed.fsm;
    const timers = (this.timers = timersOf(deps));
    this.leases = new LeaseTable(timers);
    this.gate = new DispatchGate(this.leases.running, timers);
    this.readyPromise = new Promise((r) => (this.resolveReady = r));
    const term: LeaderTerm = {
      node,
      reads,
      config,
      metrics,
      log,
      term: deps.term,
      timers,
      now: () => node.clusterClock.nowMs(),
      active: () => this.activeFlag && node.driver.isLeader(),
      propose: <T extends FsmResult['type']>(cmd: FsmCommand, expect: T, timeoutMs = 10_000) => {
        if (!this.activeFlag) return Promise.reject(new HeraldError('NOT_LEADER', 'leadership of this term is over'));
        return proposeCommand(node, cmd, expect, timeoutMs);
      },
    };
    this.term = term;
    const { leases, sessions } = this;
    const jobs = (this.jobs = new JobCache(reads));
    const gate = this.gate;
    this.limits = new LimitsLoader(reads, (l) => gate.setLimits(l), log);
    const limits = this.limits;
    const dispatcher = (this.dispatcher = new Dispatcher({ ...term, leases, sessions, gate, limitsPending: () => limits.pending }));
    this.taskTypeMetrics = new TaskTypeMetrics(metrics, leases.running, gate);
    this.fire = new FireScheduler({ ...term, dispatch: dispatcher });
    // The dispatcher tells the fire scheduler when workers may have room for the slots it holds.
    dispatcher.setRoomListener(() => this.fire.pump());
    this.workerLeases = new WorkerLeases({ reads, jobs, leases, config, log, now: () => term.now() });
    this.leaseKeeper = new LeaseKeeper({ ...term, jobs, leases, sessions, dispatcher });
    this.results = new ResultBatcher({ ...term, leases, dispatcher });
    this.trimmer = new HistoryTrimmer(term);
    this.watchdog = new Watchdog({ ...term, sessions });
    this.deadlines = new DeadlineSweeper({ ...term, jobs });
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
    const { node, feed, log } = this.deps;
    feed.setListener((entries) => this.onApplied(entries));
    const t0 = this.timers.nowMs();
    await node.readIndex({ timeoutMs: node.driver.electionTimeoutMs() * 4 });
    const now = await this.waitClusterTime(node.driver.electionTimeoutMs() * 4);
    if (!this.activeFlag) return;
    // Limits before anything is dispatched, and every RUNNING run counted (adopted) against them.
    await this.limits.reload();
    const adopted = await this.workerLeases.adoptRunning();
    if (!this.activeFlag) return;
    await this.fire.start(now);
    if (!this.activeFlag) return;
    this.dispatcher.start();
    this.leaseKeeper.start();
    this.watchdog.start();
    this.deadlines.start();
    this.trimmer.start();
    this.taskTypeMetrics.start();
    this.readyFlag = true;
    this.resolveReady(true);
    log.info({ term: this.deps.term, adopted, tookMs: Math.round(this.timers.nowMs() - t0) }, 'leader services started');
  }

  /** Stops proposing and returns the open sessions (the caller redirects them to the new leader). */
  stop(): WorkerSession[] {
    if (!this.activeFlag) return [];
    this.activeFlag = false;
    this.readyFlag = false;
    this.resolveReady(false);
    this.deps.feed.setListener(undefined);
    this.trimmer.stop();
    this.fire.stop();
    this.dispatcher.stop();
    this.workerLeases.stop();
    this.leaseKeeper.stop();
    this.results.stop();
    this.watchdog.stop();
    this.deadlines.stop();
    this.limits.stop();
    this.taskTypeMetrics.stop();
    this.leases.clear();
    return this.sessions.all();
  }

  // ---- worker sessions ------------------------------------------------------------------

  /** A hello: registers the session and decides which held runs it keeps. */
  async attach(session: WorkerSession, held: readonly HeldRun[]): Promise<{ adopted: HeldRun[]; rejected: HeldRun[] }> {
    const out = await this.workerLeases.reattach(session, held);
    this.workerLeases.releaseUnheld(session.workerId, held);
    this.sessions.add(session);
    this.deps.metrics.workersConnected.set(this.sessions.all().length);
    this.dispatcher.wake();
    return out;
  }

  detach(session: WorkerSession): void {
    this.sessions.remove(session);
    this.deps.metrics.workersConnected.set(this.sessions.all().length);
  }

  credits(session: WorkerSession, n: number): void {
    session.addCredits(n);
    this.dispatcher.wake();
  }

  drain(session: WorkerSession): void {
    session.draining = true;
    session.credits = 0;
  }

  // ---- internals --------------------------------------------------------------------------

  private onApplied(entries: readonly AppliedEntry[]): void {
    if (!this.activeFlag) return;
    this.fire.onApplied(entries);
    let wake = false;
    for (const e of entries) {
      if (e.kind !== 'job' && e.kind !== 'jobs' && e.kind !== 'delete') continue;
      wake = true; // a resumed or edited job's runs may be dispatchable now
      try {
        // A job changed by a job or jobs entry is in its result (a refused item changed nothing);
        // the heads are read without the specs that decoding the command would cost.
        if (e.kind !== 'delete') for (const j of decodeJobHeads(e.result)) this.jobs.invalidate(j.id);
        else {
          const cmd = decodeCommand(e.data);
          if ('jobId' in cmd) this.jobs.invalidate(cmd.jobId);
        }
      } catch {
        this.jobs.clear();
      }
    }
    // A task type config or a job's max_concurrent written or deleted: the gate reads them again.
    if (this.limits.reloadIfChanged()) wake = true;
    const signalled: AppliedEntry[] = [];
    for (const e of entries) {
      const k = e.kind;
      if (k === 'delete' || k === 'fire' || k === 'cancel' || k === 'trigger') signalled.push(e);
      if (k === 'fire' || k === 'trigger' || k === 'backfill' || k === 'runItems' || k === 'cancel' || k === 'alerts' || k === 'retry') wake = true;
    }
    if (wake) this.dispatcher.wake();
    // Decode outside apply: apply must stay fast and must never fail because of us.
    if (signalled.length > 0) this.timers.soon(() => this.deliverSignals(signalled));
  }

  private deliverSignals(entries: readonly AppliedEntry[]): void {
    if (!this.activeFlag) return;
    for (const e of entries) {
      for (const s of decodeSignals(e.result)) {
        if (this.leases.get(s.runId)?.fencingToken === s.fencingToken) this.leases.release(s.runId);
        this.sessions.ofWorker(s.workerId)?.send({
          message: { $case: 'cancel', cancel: { runId: s.runId, fencingToken: s.fencingToken, reason: SIGNAL_REASON[e.kind] ?? 'cancelled' } },
        });
      }
    }
  }

  private async waitClusterTime(timeoutMs: number): Promise<number> {
    const deadline = this.timers.nowMs() + timeoutMs;
    for (;;) {
      const now = this.term.now();
      if (now !== undefined) return now;
      if (!this.activeFlag) throw new HeraldError('NOT_LEADER', 'leadership ended before cluster time was known');
      if (this.timers.nowMs() > deadline) throw new HeraldError('NOT_READY', 'no quorum of fresh clock samples for cluster time');
      await new Promise<void>((r) => this.timers.after(10, r));
    }
  }
}
