// The runs whose lease this worker holds, one HeldRun object each (like Temporal's Activity): the
// run owns its phase, its one timer (start delay or execution timeout), its abort and its result,
// and every phase change goes through HeldRun.moveTo, which keeps the per-phase counts of its
// collection. Active runs and free slots are read from those counts, not kept by hand elsewhere.
import { performance } from 'node:perf_hooks';
import type { HeldRun as HeldRunRef, LeaseLost, ResultAck, RunAssignment, RunCancel, RunResult, WorkerWelcome } from '../../gen/herald/v1/worker_service.js';
import type { AbortCause } from './handler-errors.js';
import type { ClientLogger } from '../logger.js';
import { RunAbort } from './run-abort.js';

/**
 * assigned: just taken, not yet placed. waiting: claimed ahead of its instant (start_delay_ms),
 * held until then. queued: waiting for a free slot. executing: its handler runs. reporting: its
 * result awaits an ack. abandoned: no longer held (lease lost, cancelled) but its handler has not
 * settled yet, so it still takes a slot. released: gone for good.
 */
export type Phase = 'assigned' | 'waiting' | 'queued' | 'executing' | 'reporting' | 'abandoned' | 'released';

/** A run whose lease this worker holds (and, once abandoned, whose handler still runs). */
export class HeldRun {
  private phaseValue: Phase = 'assigned';
  /** Monotonic time (performance.now) of the last sign that the cluster still knows our lease. */
  lastContact: number;
  readonly abort = new RunAbort();
  private resultValue: RunResult | undefined;
  /** The start-delay timer while waiting, the execution-timeout timer while executing. */
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly assignment: RunAssignment,
    private readonly runs: HeldRuns,
  ) {
    this.lastContact = performance.now();
  }

  get phase(): Phase {
    return this.phaseValue;
  }

  /** The outcome to report, once the run is in phase 'reporting'. */
  get result(): RunResult | undefined {
    return this.resultValue;
  }

  /** Holds the run until its instant, then hands it to `onStartTime` (on the monotonic clock). */
  wait(delayMs: number, onStartTime: (h: HeldRun) => void): void {
    this.moveTo('waiting');
    // A static callback with timer arguments, as for the execution timeout: no closure per run.
    this.timer = setTimeout(HeldRun.startTimeReached, delayMs, this, onStartTime);
  }

  /** Waits for a free slot, after the runs queued before it. */
  enqueue(): void {
    this.moveTo('queued');
    this.runs.queue.push(this);
  }

  /** Its handler starts; the execution timeout (if any) runs from now. */
  start(): void {
    this.moveTo('executing');
    if (this.assignment.executionTimeoutMs > 0) this.timer = setTimeout(HeldRun.timedOut, this.assignment.executionTimeoutMs, this);
  }

  /**
   * Records the outcome to report (phase 'reporting') and returns it: a run not started (no
   * handler for its task type) or whose handler settled while the run was still held.
   */
  report(outcome: RunResult['outcome']): RunResult {
    this.moveTo('reporting');
    return (this.resultValue = { runId: this.assignment.runId, fencingToken: this.assignment.fencingToken, outcome });
  }

  /**
   * Its handler settled: the outcome to report while the run is still held; undefined after lease
   * loss or cancel (the outcome is not ours), when it frees the slot it kept until now.
   */
  handlerSettled(outcome: RunResult['outcome']): RunResult | undefined {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.phaseValue === 'executing') return this.report(outcome);
    if (this.phaseValue === 'abandoned') this.moveTo('released');
    return undefined;
  }

  /**
   * No longer held (no heartbeats, no report): an executing run keeps its slot as 'abandoned'
   * until its handler settles. True when the run gives back the credit it came with (it never
   * started: waiting or queued).
   */
  release(): boolean {
    clearTimeout(this.timer);
    this.timer = undefined;
    const unstarted = this.phaseValue === 'waiting' || this.phaseValue === 'queued';
    this.moveTo(this.phaseValue === 'executing' ? 'abandoned' : 'released');
    return unstarted;
  }

  private moveTo(to: Phase): void {
    const counts = this.runs.inPhase;
    counts[this.phaseValue] -= 1;
    counts[to] += 1;
    this.phaseValue = to;
  }

  private static startTimeReached(this: void, h: HeldRun, onStartTime: (h: HeldRun) => void): void {
    h.timer = undefined;
    if (h.phaseValue === 'waiting') onStartTime(h);
  }

  private static timedOut(this: void, h: HeldRun): void {
    h.abort.abort('timeout', `execution timeout of ${h.assignment.executionTimeoutMs}ms exceeded`);
  }
}

/** The held runs by run id, the queue for free slots, and counts per phase. */
export class HeldRuns {
  private readonly held = new Map<string, HeldRun>();
  /** Runs in phase 'queued', in the order they came (HeldRun.enqueue adds them). */
  readonly queue: HeldRun[] = [];
  /** How many runs are in each phase (written by HeldRun.moveTo alone). */
  readonly inPhase: Record<Phase, number> = { assigned: 0, waiting: 0, queued: 0, executing: 0, reporting: 0, abandoned: 0, released: 0 };
  private idleWaiters: Array<() => void> = [];

  constructor(
    readonly concurrency: number,
    private readonly logger: ClientLogger,
    /** A dropped run gave back the credit it came with (it was waiting or queued). */
    private readonly onCreditFreed: () => void,
  ) {}

  get size(): number {
    return this.held.size;
  }

  /** Handlers not yet settled, including ones whose run was dropped but which ignore the signal. */
  get activeRuns(): number {
    return this.inPhase.executing + this.inPhase.abandoned;
  }

  /** Slots neither running a handler nor promised to a queued or waiting run (each came with a credit). */
  freeSlots(): number {
    return Math.max(0, this.concurrency - this.activeRuns - this.inPhase.queued - this.inPhase.waiting);
  }

  /** Whether a run that may start now must wait for a slot. */
  slotsTaken(): boolean {
    return this.activeRuns + this.inPhase.queued >= this.concurrency;
  }

  get(runId: string): HeldRun | undefined {
    return this.held.get(runId);
  }

  values(): IterableIterator<HeldRun> {
    return this.held.values();
  }

  /** The runs for a heartbeat or a hello (re-attach). */
  refs(): HeldRunRef[] {
    const refs: HeldRunRef[] = [];
    for (const h of this.held.values()) refs.push({ runId: h.assignment.runId, fencingToken: h.assignment.fencingToken });
    return refs;
  }

  add(a: RunAssignment): HeldRun {
    const h = new HeldRun(a, this);
    this.inPhase.assigned += 1;
    this.held.set(a.runId, h);
    return h;
  }

  /** The next queued run, when a slot is free for it. */
  nextQueued(): HeldRun | undefined {
    return this.activeRuns < this.concurrency ? this.queue.shift() : undefined;
  }

  /**
   * The cluster still knows our leases as of `at` (monotonic; now by default): renews every held
   * run's last contact that is older.
   */
  touchAll(at = performance.now()): void {
    for (const h of this.held.values()) if (h.lastContact < at) h.lastContact = at;
  }

  /** Held runs not yet finished (not reporting), which the lease watchdog watches. */
  unfinished(): number {
    return this.held.size - this.inPhase.reporting;
  }

  /** The lease of `h` is gone: aborts it (the handler sees why) and forgets it. */
  end(h: HeldRun, cause: AbortCause, message: string): void {
    h.abort.abort(cause, message);
    this.drop(h);
  }

  /** Forgets a run: no more heartbeats, no report. Its handler may still be settling. */
  drop(h: HeldRun): void {
    if (this.held.get(h.assignment.runId) !== h) return;
    this.held.delete(h.assignment.runId);
    if (h.phase === 'queued') {
      const q = this.queue.indexOf(h);
      if (q >= 0) this.queue.splice(q, 1);
    }
    // A waiting or queued run gives back the credit it held.
    if (h.release()) this.onCreditFreed();
    this.checkIdle();
  }

  /** Runs never started (queued, then waiting) are dropped: their leases are left to expire. */
  dropUnstarted(): void {
    for (const h of this.queue.slice()) this.drop(h);
    for (const h of [...this.held.values()]) if (h.phase === 'waiting') this.drop(h);
  }

  // ---- messages about held runs ------------------------------------------------------------

  /** Runs the server did not re-attach in its welcome: their leases are gone. */
  rejected(welcome: WorkerWelcome): void {
    for (const r of welcome.rejected) {
      const h = this.held.get(r.runId);
      if (!h || h.assignment.fencingToken !== r.fencingToken) continue;
      this.logger.warn({ runId: r.runId }, 'held run rejected on re-attach');
      this.end(h, 'lease-lost', 'run not re-attached: lease no longer held');
    }
  }

  cancel(c: RunCancel): void {
    const h = this.held.get(c.runId);
    if (!h || (c.fencingToken !== 0 && c.fencingToken !== h.assignment.fencingToken)) return;
    // A finished run's result is already on its way; the server settles it with an ack.
    if (h.phase === 'reporting') return;
    this.logger.info({ runId: c.runId, reason: c.reason }, 'run cancelled');
    this.end(h, 'cancelled', c.reason || 'run cancelled');
  }

  leaseLost(l: LeaseLost): void {
    const h = this.held.get(l.runId);
    if (!h || (l.fencingToken !== 0 && l.fencingToken !== h.assignment.fencingToken)) return;
    this.logger.warn({ runId: l.runId, reason: l.reason }, 'lease lost');
    this.end(h, 'lease-lost', l.reason || 'lease lost');
  }

  /** A result_ack settles the run's result; true when it was for a result this worker reported. */
  acknowledged(ack: ResultAck): boolean {
    const h = this.held.get(ack.runId);
    if (!h || h.assignment.fencingToken !== ack.fencingToken || h.phase !== 'reporting') return false;
    if (!ack.accepted) this.logger.warn({ runId: ack.runId, reason: ack.reason }, 'result not accepted');
    this.drop(h);
    return true;
  }

  // ---- idle ------------------------------------------------------------------------------

  /** No run held and no handler left running. */
  isIdle(): boolean {
    return this.held.size === 0 && this.activeRuns === 0;
  }

  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  checkIdle(): void {
    if (this.isIdle()) this.releaseIdleWaiters();
  }

  /** Resolves every idle() promise now (also when the worker stops with runs still held). */
  releaseIdleWaiters(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
