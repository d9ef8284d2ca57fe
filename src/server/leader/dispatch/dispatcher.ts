// The leader's dispatcher: ready runs to workers with credits.
//
// A round reads the ready index (priority, then not-before; kept in memory by the state machine,
// so a round reads no record) for the task types that have spare capacity, plans with
// planDispatch (fair across types and workers), reserves the credits at once
// and proposes ONE claimRuns command. Assignments are sent only after the claim commits, with
// the fencing token the claim got (its Raft index) and a lease granted in the LeaseTable. Rounds
// are paced by credits and by the admission limit (claimBatchSize per round, maxClaimsInFlight
// rounds at once), so a herd of 100k fired runs drains at the speed workers take them.
//
// Claim behind fire: when nothing is waiting in the ready index, the runs a fireRuns command is
// about to create are claimed by a claimRuns entry right behind it (same Ready, same fsync, one
// round instead of two, no ready-index read). The dispatcher plans that claim (claimBehindFire)
// and the fire scheduler proposes the fire and the claim together as adjacent entries; the
// outcome comes back here (claimProposed). The claim's apply checks each run as always (exists,
// pending, due, deadline); a run the fire did not create as pending (missed, skipped, jittered)
// is simply refused and its credit returned. With a backlog the ready index decides, so
// priorities and not-before order hold. FireDispatch is all the fire scheduler sees of the
// dispatcher; the dispatcher tells it of new room through the listener it is given.
//
// Dispatch lead: runs due within dispatchLeadMs are claimed now, the claim saying so (aheadMs);
// the assignment tells the worker how long to hold the run (start_delay_ms, from cluster time),
// and the lease counts from then. A fire and its claim are an fsynced commit round plus a tick
// late otherwise, on every run.
//
// Limits (dispatch-gate.ts): when any is configured, a round reads only task types with room and
// admits the ready runs within each task type's max_running and rate and each job's
// max_concurrent; the rest stay PENDING (their reason is read from the gate: waitingFor). Runs
// held back by a limit are no backlog for fire pacing, so they never slow other task types.
import type { RunAssignment } from '../../../gen/herald/v1/worker_service.js';
import { hintedDueMs, scheduledRunId, type ClaimItem, type ClaimItemResult, type ClaimRunsCommand, type DispatchHint, type FireItem, type ReadyEntry } from '../../../fsm/index.js';
import type { ProposalOutcome } from '../../../raft/driver/proposal-tracker.js';
import { planDispatch, type DispatchAssignment, type DispatchCandidate } from './dispatch-plan.js';
import type { DispatchGate } from './dispatch-gate.js';
import { checkedResult, type LeaderReads, type LeaderTerm } from '../leader-term.js';
import type { LeaseTable } from '../leases/lease-table.js';
import type { SessionRegistry, WorkerSession } from '../worker-session.js';
import { cancelTimer, timersOf, type LeaderTimers, type TimerHandle } from '../leader-timers.js';

/** Shared by assignments without a payload: the encoder only reads it. */
const NO_PAYLOAD = Buffer.alloc(0);

/**
 * The sessions whose credits a plan took, by the run's place in the plan (an array, not a map by
 * run id: no hashing or map growth per run); a delivered run's place is cleared, so settling gives
 * back only the credits of runs that were not delivered.
 */
type Reserved = (WorkerSession | undefined)[];

/** Connected workers' room for runs claimed behind their fire: credits, and the task types served. */
export interface DispatchRoom {
  readonly credits: number;
  readonly taskTypes: ReadonlySet<string>;
}

/**
 * A claim of the runs a fire will create, planned by the dispatcher for the fire scheduler to
 * propose right behind the fire. Until its outcome comes back (claimProposed) the plan holds the
 * workers' credits and marks its runs as being claimed.
 */
export interface ClaimBehindFire {
  readonly command: ClaimRunsCommand;
  readonly plan: readonly DispatchAssignment[];
  readonly reserved: Reserved;
}

/**
 * What the fire scheduler may ask of the dispatcher: the room workers have (fire pacing), a claim
 * of what a fire creates and what became of it once proposed, and a round when new runs may be ready.
 */
export interface FireDispatch {
  dispatchRoom(): DispatchRoom | undefined;
  claimBehindFire(fired: readonly FireItem[], nowMs: number, hintOf: (jobId: string) => DispatchHint | undefined): ClaimBehindFire | undefined;
  claimProposed(claim: ClaimBehindFire, outcome: Promise<ProposalOutcome>): void;
  wake(): void;
}

/** Told when workers may have room for slots the fire scheduler holds (FireScheduler.pump). */
export type RoomListener = () => void;

/** What the dispatcher uses of its term. */
export interface DispatcherDeps extends Pick<LeaderTerm, 'config' | 'metrics' | 'log' | 'now' | 'active' | 'propose'> {
  readonly timers?: LeaderTimers;
  readonly reads: Pick<LeaderReads, 'readyEntries'>;
  /** Leases granted as claims commit, and the runs whose claim is in flight. */
  readonly leases: LeaseTable;
  readonly sessions: Pick<SessionRegistry, 'all'>;
  /** The limits; consulted only while one is configured. */
  readonly gate: DispatchGate;
  /** A read of the limits in flight (a round waits for it: a new limit applies at once). */
  limitsPending(): Promise<void> | undefined;
}

export class Dispatcher implements FireDispatch {
  private inFlight = 0;
  private wakePending = false;
  private scheduled = false;
  private stopped = false;
  private poll: TimerHandle | undefined;
  /** A round when a task type held back by its rate gets its next token. */
  private rateTimer: TimerHandle | undefined;
  private readonly timers: LeaderTimers;
  private roomListener: RoomListener | undefined;

  /** The last ready read found runs it could not plan (or filled a whole round): a backlog. */
  private backlog = true;

  /** Counters for benches and debugging. */
  readonly stats = { rounds: 0, claims: 0, claimed: 0, claimMs: 0, readMs: 0, claimsBehindFire: 0 };

  /** The lateness histogram's (only) series, looked up once: observe() on the metric costs a closure and a label object per run. */
  private readonly fireLateness: { observe(value: number): void };

  constructor(private readonly ctx: DispatcherDeps) {
    this.timers = timersOf(ctx);
    this.fireLateness = ctx.metrics.fireLateness.labels({});
    // Room under a limit appears when a counted run's lease goes: a round then, not at the poll.
    ctx.leases.running.onRemoved = () => {
      if (ctx.gate.active) this.wake();
    };
  }

  /** Who hears that workers may have room again (the fire scheduler, for the slots it holds). */
  setRoomListener(listener: RoomListener | undefined): void {
    this.roomListener = listener;
  }

  start(): void {
    this.poll = this.timers.every(this.ctx.config.dispatchPollMs, () => this.wake());
    this.wake();
  }

  stop(): void {
    this.stopped = true;
    cancelTimer(this.timers, this.poll);
    cancelTimer(this.timers, this.rateTimer);
    this.ctx.leases.running.onRemoved = undefined;
  }

  /**
   * What a fire may create now for a claim right behind it to take at once (fire pacing,
   * fire-scheduler.ts pacedToTake): the connected workers' credits — none while fired runs wait in
   * the ready index for them (a backlog: they go first) — and the task types they serve;
   * undefined when no worker is connected (nothing to wait for).
   */
  dispatchRoom(): DispatchRoom | undefined {
    if (this.stopped) return undefined;
    let credits = 0;
    const taskTypes = new Set<string>();
    for (const s of this.ctx.sessions.all()) {
      if (s.draining) continue;
      credits += s.credits;
      for (const t of s.taskTypes) taskTypes.add(t);
    }
    if (taskTypes.size === 0) return undefined;
    return { credits: this.backlog ? 0 : credits, taskTypes };
  }

  /** Runs a round soon; wake-ups while one is pending coalesce. */
  wake(): void {
    if (this.stopped) return;
    if (this.inFlight >= this.ctx.config.maxClaimsInFlight) {
      this.wakePending = true;
      return;
    }
    if (this.scheduled) return;
    this.scheduled = true;
    this.timers.soon(() => {
      this.scheduled = false;
      void this.round();
    });
  }

  private async round(): Promise<void> {
    const ctx = this.ctx;
    if (this.stopped || !ctx.active() || this.inFlight >= ctx.config.maxClaimsInFlight) return;
    const pending = ctx.limitsPending();
    if (pending) await pending;
    const now = ctx.now();
    if (now === undefined) return;
    const open = this.openSessions();
    if (open.length === 0) return;
    const types = new Set<string>();
    let total = 0;
    for (const s of open) {
      total += s.credits;
      for (const t of s.taskTypes) types.add(t);
    }
    const gate = ctx.gate.active ? ctx.gate : undefined;
    if (gate) {
      gate.beginRound();
      // Task types at a limit are not read at all: their runs would fill the round's read.
      for (const t of types) if (!gate.hasRoom(t)) types.delete(t);
      if (types.size === 0) {
        this.armRateTimer();
        return;
      }
    }
    const limit = Math.min(total, ctx.config.claimBatchSize);
    this.inFlight++;
    let plan: DispatchAssignment[] = [];
    const reserved: Reserved = [];
    let more = false;
    try {
      this.stats.rounds++;
      const tRead = this.timers.nowMs();
      // Runs due within the dispatch lead go now: the worker holds each until its instant.
      const lead = ctx.config.dispatchLeadMs;
      // Jobs at max_concurrent may fill part of the read: read further past them. Without job
      // limits, no more than the task types' room can be admitted: read no more than that.
      const want = gate ? gate.readLimit(types, limit) : limit;
      const ready = ctx.reads.readyEntries({ limit: want + ctx.leases.claimsInFlight, taskTypes: [...types], nowMs: now + lead });
      this.stats.readMs += this.timers.nowMs() - tRead;
      const runs = new Map<string, ReadyEntry>();
      for (const r of ready) if (!ctx.leases.claimInFlight(r.runId)) runs.set(r.runId, r);
      // Ready entries are candidates as they are (planDispatch only reads them).
      const candidates = gate ? gate.admit([...runs.values()]) : [...runs.values()];
      this.backlog = candidates.length > 0;
      if (candidates.length === 0) return;
      // Credits may have changed while we read; plan against the sessions as they are now.
      plan = this.plan(candidates, this.openSessions(), now + lead, limit, reserved);
      gate?.started(plan);
      this.backlog = plan.length < candidates.length || plan.length === limit;
      if (plan.length === 0) return;
      more = plan.length === limit;

      const claimNow = Math.max(now, ctx.now() ?? now);
      // Lease deadline 0: the claim's apply sets it from the run's start and its job's lease
      // duration, and its result carries what the assignment needs of the job (no job read here).
      const items: ClaimItem[] = plan.map((a) => ({ runId: a.runId, workerId: a.workerId, leaseDeadlineMs: 0 }));
      const tClaim = this.timers.nowMs();
      const res = await ctx.propose(this.claimCommand(claimNow, items), 'claim', 10_000);
      this.stats.claims++;
      this.stats.claimed += items.length;
      this.stats.claimMs += this.timers.nowMs() - tClaim;
      if (!ctx.active()) return;
      this.deliver(res.items, items, reserved, claimNow);
    } catch (e) {
      if (ctx.active()) ctx.log.warn({ err: e, planned: plan.length }, 'dispatch round failed');
      // A claim whose outcome is unknown may still commit: its runs are then RUNNING with a
      // lease nobody renews; adoption at the next takeover or the lease sweep recovers them.
    } finally {
      this.settle(plan, reserved);
      this.inFlight--;
      if (more || this.wakePending) {
        this.wakePending = false;
        this.wake();
      }
      if (ctx.gate.active) this.armRateTimer();
      // The backlog may be gone and credits are what they are now: slots held for room may go.
      if (!this.backlog) this.roomListener?.();
    }
  }

  /**
   * Plans a claim of the runs a fireRuns command will create, for the fire scheduler to propose
   * right behind it: only without a known backlog, and only for jobs whose dispatch hint (their
   * last fire's) says when their runs are due (the slot, or the slot plus a jitter the hint can
   * compute: hintedDueMs). Nothing here waits: the plan is reserved (credits, runs being claimed)
   * until claimProposed hears what became of it.
   */
  claimBehindFire(fired: readonly FireItem[], nowMs: number, hintOf: (jobId: string) => DispatchHint | undefined): ClaimBehindFire | undefined {
    const ctx = this.ctx;
    if (this.stopped || this.backlog || !ctx.active()) return undefined;
    // Limits being read: the round decides, once they are known.
    if (ctx.limitsPending()) return undefined;
    const workers = this.openSessions();
    if (workers.length === 0) return undefined;
    const candidates: DispatchCandidate[] = [];
    for (const f of fired) {
      const hint = hintOf(f.jobId);
      if (!hint) continue;
      const dueMs = hintedDueMs(f.jobId, f.slotMs, hint);
      if (dueMs === undefined) continue;
      const runId = scheduledRunId(f.jobId, f.slotMs);
      if (ctx.leases.claimInFlight(runId)) continue;
      candidates.push({ runId, jobId: f.jobId, taskType: hint.taskType, priority: hint.priority, notBeforeMs: dueMs });
    }
    const gate = ctx.gate.active ? ctx.gate : undefined;
    // Runs of a task type held back by a limit wait in the ready index: a fire must not overtake them.
    const admitted = gate ? gate.admit(candidates.filter((c) => !gate.held.has(c.taskType))) : candidates;
    // Held by a limit: the ready index has them once the fire applies; a round takes them at room.
    if (admitted.length < candidates.length) this.wake();
    if (admitted.length === 0) return undefined;
    let total = 0;
    for (const s of workers) total += s.credits;
    const reserved: Reserved = [];
    const lead = ctx.config.dispatchLeadMs;
    const plan = this.plan(admitted, workers, nowMs + lead, Math.min(total, ctx.config.claimBatchSize), reserved);
    gate?.started(plan);
    // Fired runs left unclaimed wait in the ready index: the next fires must not overtake them.
    if (plan.length < admitted.length) this.backlog = true;
    if (plan.length === 0) return undefined;
    const items: ClaimItem[] = plan.map((a) => ({ runId: a.runId, workerId: a.workerId, leaseDeadlineMs: 0 }));
    return { command: this.claimCommand(nowMs, items), plan, reserved };
  }

  /** A claim planned by claimBehindFire was proposed behind its fire: assignments once it commits. */
  claimProposed(claim: ClaimBehindFire, outcome: Promise<ProposalOutcome>): void {
    const ctx = this.ctx;
    const { command, plan, reserved } = claim;
    this.stats.claimsBehindFire++;
    let refused = true;
    void outcome
      .then((out) => {
        const res = checkedResult(command, 'claim', out.result);
        this.stats.claimed += command.items.length;
        refused = res.items.some((r) => !r.run);
        if (ctx.active()) this.deliver(res.items, command.items, reserved, command.nowMs);
      })
      .catch((e: unknown) => {
        if (ctx.active()) ctx.log.warn({ err: e, planned: plan.length }, 'claim behind fire failed');
      })
      .finally(() => {
        this.settle(plan, reserved);
        // A refused run that is pending after all (not due, say) is the ready index's again.
        if (refused) this.wake();
      });
  }

  /** A claimRuns command of `items` (lease deadlines 0: from each job, or our default). */
  private claimCommand(nowMs: number, items: ClaimItem[]): ClaimRunsCommand {
    return { type: 'claimRuns', nowMs, items, aheadMs: this.ctx.config.dispatchLeadMs, defaultLeaseMs: this.ctx.config.defaultLeaseMs };
  }

  /** Sessions that may be given runs now. */
  private openSessions(): WorkerSession[] {
    return this.ctx.sessions.all().filter((s) => !s.draining && s.credits > 0);
  }

  /**
   * Plans `candidates` over `workers` (planDispatch) and reserves the plan: a credit per planned
   * run taken from its worker (recorded in `reserved`, at the run's place in the plan), the run
   * marked as being claimed.
   */
  private plan(candidates: readonly DispatchCandidate[], workers: readonly WorkerSession[], nowMs: number, limit: number, reserved: Reserved): DispatchAssignment[] {
    const plan = planDispatch(
      candidates,
      workers.map((s) => ({ workerId: s.workerId, taskTypes: s.taskTypes, credits: s.credits })),
      { nowMs, limit },
    );
    const bySession = new Map(workers.map((s) => [s.workerId, s]));
    for (const a of plan) {
      const s = bySession.get(a.workerId)!;
      s.credits--;
      reserved.push(s);
      this.ctx.leases.claimStarted(a.runId, a);
    }
    return plan;
  }

  /** A round when a task type held back by its rate has its next start (the poll is too coarse for rates). */
  private armRateTimer(): void {
    const ms = this.ctx.gate.msUntilRateRoom();
    if (ms === undefined || this.rateTimer !== undefined) return;
    this.rateTimer = this.timers.after(Math.max(1, ms), () => {
      this.rateTimer = undefined;
      this.wake();
    });
  }

  /** A claim settled: credits of runs not delivered go back; the ready index now says where its runs are. */
  private settle(plan: readonly DispatchAssignment[], reserved: Reserved): void {
    for (const s of reserved) if (s) s.credits++;
    for (const a of plan) this.ctx.leases.claimSettled(a.runId);
  }

  /** Claim results: assignments for the runs claimed, credits back for the rest. */
  private deliver(results: readonly ClaimItemResult[], items: readonly ClaimItem[], reserved: Reserved, claimNowMs: number): void {
    const ctx = this.ctx;
    // Per worker, in claim order: one write per worker per claim instead of one per run.
    const out = new Map<WorkerSession, { assignments: RunAssignment[]; leases: { deadlineMs: number }[] }>();
    let missed = 0;
    // Without a cluster time now, the claim's: earlier than now, so a held run starts late, never early.
    const now = ctx.now() ?? claimNowMs;
    for (let i = 0; i < results.length; i++) {
      const r = results[i]!;
      const session = reserved[i]!;
      reserved[i] = undefined;
      if (!r.run) {
        session.credits++;
        if (r.error?.reason === 'DEADLINE_PASSED') missed++;
        continue;
      }
      const run = r.run;
      const item = items[i]!;
      const leaseMs = run.leaseDurationMs > 0 ? run.leaseDurationMs : ctx.config.defaultLeaseMs;
      // Claimed ahead of its instant (dispatch lead): the worker holds it until then.
      const startDelayMs = Math.max(0, run.notBeforeUnixMs - now);
      const lease = ctx.leases.grant(run.id, run.fencingToken, item.workerId, leaseMs);
      lease.deadlineMs += startDelayMs;
      if (run.executionTimeoutMs > 0) ctx.leases.limitExecution(lease, startDelayMs + run.executionTimeoutMs);
      if (run.attempt === 1) this.fireLateness.observe(run.latenessMs / 1000);
      let o = out.get(session);
      if (!o) out.set(session, (o = { assignments: [], leases: [] }));
      o.leases.push(lease);
      o.assignments.push({
        runId: run.id,
        jobId: run.jobId,
        taskType: run.taskType,
        slotUnixMs: run.slotUnixMs,
        scheduledUnixMs: run.scheduledUnixMs,
        attempt: run.attempt,
        fencingToken: run.fencingToken,
        leaseDeadlineUnixMs: run.leaseDeadlineUnixMs,
        leaseDurationMs: leaseMs,
        payload: run.payload.length === 0 ? NO_PAYLOAD : Buffer.from(run.payload.buffer, run.payload.byteOffset, run.payload.byteLength),
        executionTimeoutMs: run.executionTimeoutMs,
        manual: run.manual,
        backfilled: run.backfilled,
        startDelayMs,
      });
    }
    if (missed > 0) ctx.metrics.missedSlots.inc({ reason: 'starting_deadline' }, missed);
    for (const [session, o] of out) {
      // The worker went away between plan and commit: it never saw the runs, so nothing runs
      // them. Expire their leases at the next sweep instead of waiting a whole lease duration.
      const sent = session.sendAssignments(o.assignments);
      for (let i = sent; i < o.leases.length; i++) o.leases[i]!.deadlineMs = 0;
    }
  }

}
