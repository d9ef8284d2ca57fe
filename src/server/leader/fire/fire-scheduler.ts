// The leader's fire scheduler: turns due slots into runs.
//
// The timing wheel holds each active job's next slot when it falls inside the horizon. It is
// filled by range reads of the FSM's due index as the horizon moves ([loadedUpTo, horizon end)),
// so memory and work follow the slots due, never the jobs stored (I6). On becoming leader the
// first read starts at 0: every job whose cursor is already in the past is due at once, and the
// FSM hands the whole gap since its last-fired cursor to the job's misfire policy.
//
// Firing uses cluster time only (DESIGN §5a). Due slots go out in batched fireRuns commands;
// the job's next slot comes back in the fire result and re-arms the wheel. The claim of a fire's
// runs, when the dispatcher plans one (FireDispatch.claimBehindFire), is proposed with the fire
// as the adjacent log entry, in one proposeBackToBack call. Job changes (create,
// update, pause, resume) are picked up from applied results in log order, so a job created while
// we lead enters the wheel within one scheduler tick of its commit. Because events are applied
// after any due-window page that was read concurrently, the newest state always wins.
import { stampedAtAppend, type StampClock } from '../../node/stamped-proposal.js';
import { JobState } from '../../../gen/herald/v1/job.js';
import { decodeCommand, decodeFireOutcomes, decodeJobHeads, dispatchHintOf, hintedDueMs, knowsDue, type DispatchHint, type FireItem, type FireOutcome, type FireRunsCommand } from '../../../fsm/index.js';
import type { AppliedEntry } from '../applied-results-feed.js';
import type { FireDispatch } from '../dispatch/dispatcher.js';
import { checkResultType, proposeUnread, type LeaderReads, type LeaderTerm } from '../leader-term.js';
import { TimingWheel, type WheelEntry } from './timing-wheel.js';
import { cancelTimer, timersOf, type LeaderTimers, type TimerHandle } from '../leader-timers.js';

const FIRST_PAGE = 10_000;
/** Job records read at once for the hints of jobs entering the wheel without one. */
const HINT_READ_CHUNK = 10_000;
/**
 * Dispatch hints kept at most; cleared wholesale when full (a job without one fires at its slot and
 * is claimed from the ready index). Room for a herd of 100,000 due within the horizon and more.
 */
const MAX_HINTS = 250_000;

/** An applied job or fire result, decoded once as it is applied and handled on the next tick. */
type SchedulerEvent =
  | { readonly kind: 'jobs'; readonly heads: ReturnType<typeof decodeJobHeads> }
  | { readonly kind: 'fire'; readonly items: readonly FireItem[]; readonly outcomes: readonly FireOutcome[] };
/** A failed fire proposal is retried this much later (it is idempotent either way). */
const RETRY_DELAY_MS = 100;
const PROPOSE_TIMEOUT_MS = 10_000;

/** What the fire scheduler uses of its term, and the dispatcher it fires for. */
export interface FireSchedulerDeps extends Pick<LeaderTerm, 'config' | 'metrics' | 'log' | 'now' | 'active'> {
  readonly timers?: LeaderTimers;
  /** Fires are proposed here (never forwarded), with the claim behind them as the adjacent entry. */
  readonly node: Pick<LeaderTerm['node'], 'propose' | 'proposeBackToBack'>;
  readonly reads: Pick<LeaderReads, 'dueWindow' | 'fireCursor' | 'getJobs' | 'specCache' | 'unsafe'>;
  readonly dispatch: FireDispatch;
}

export class FireScheduler {
  private wheel: TimingWheel | undefined;
  /** Every job whose next slot is before this is in the wheel or being fired. */
  private loadedUpTo = 0;
  /** Jobs whose fire command is in flight: a due-window read must not queue them again. */
  private readonly inFlight = new Set<string>();
  private events: SchedulerEvent[] = [];
  /**
   * How each job's next run is dispatched, kept in log order: set as a fire or a change to the job
   * (a create, say) applies, from its result; dropped when the job has no next slot. The lead
   * (fireAtOf) and the claim behind the fire need it; the job record is not read for either.
   */
  private readonly hints = new Map<string, DispatchHint>();
  /** While readHints reads job records: the jobs whose hint an applied change set meanwhile. */
  private hintsTouched: Set<string> | undefined;
  /** Due slots waiting for the fireRuns command in flight to finish. */
  private toFire: WheelEntry[] = [];
  /** Due slots whose runs the claim behind the fire would take: they also wait for worker room (pacedToTake). */
  private paced: WheelEntry[] = [];
  private firesInFlight = 0;
  private timer: TimerHandle | undefined;
  private stopped = false;
  private readonly timers: LeaderTimers;

  constructor(private readonly ctx: FireSchedulerDeps) {
    this.timers = timersOf(ctx);
  }

  /** Queued applied entries (job and fire results), handled in log order on the next tick. */
  onApplied(entries: readonly AppliedEntry[]): void {
    let fired = false;
    for (const e of entries) {
      if (e.kind === 'job' || e.kind === 'jobs') {
        // Heads only: decoding every created job's spec here cost the leader more than the create.
        // Dispatch hints only for jobs the wheel will hold now (the rest enter it later, by
        // due-window reads, and get theirs from their first fire), from specs decoded once per
        // distinct spec (a herd: once).
        const heads = decodeJobHeads(e.result, this.loadedUpTo, this.ctx.reads.specCache);
        for (const h of heads) this.setHint(h.id, h.dispatch);
        this.events.push({ kind: 'jobs', heads });
      } else if (e.kind === 'fire') {
        fired = true;
        // Counts, not run ids: the ids of a herd's fire would be garbage at once.
        const outcomes = decodeFireOutcomes(e.result);
        if (outcomes.length === 0) continue;
        const cmd = decodeCommand(e.data);
        if (cmd.type !== 'fireRuns') continue;
        this.noteHints(cmd.items, outcomes);
        this.events.push({ kind: 'fire', items: cmd.items, outcomes });
      }
    }
    // New runs are in the store now: the dispatcher reads them at once rather than after the
    // next tick's drainEvents (up to a tick of lateness on every run). A fire that created
    // nothing costs one empty ready read.
    if (fired) this.ctx.dispatch.wake();
  }

  /** Builds the wheel from committed state (the caller has passed a read barrier) and starts ticking. */
  async start(nowMs: number): Promise<void> {
    const c = this.ctx.config;
    this.wheel = new TimingWheel({ resolutionMs: c.wheelResolutionMs, horizonMs: c.horizonMs }, nowMs);
    this.loadedUpTo = 0;
    await this.refill();
    this.ctx.log.info({ jobsInWheel: this.wheel.size, horizonMs: c.horizonMs }, 'timing wheel built from committed state');
    if (this.ctx.reads.unsafe.skipSlotCheck) void this.refireLastSlots(nowMs);
    this.schedule();
  }

  /**
   * The skip-slot-check negative control only (unsafe-switches.ts): at the start of a term, fire
   * each due job's last fired slot again, as a leader that lost track of what its predecessor
   * fired would. The FSM, under the same switch, no longer refuses it: the slot runs twice, which
   * the chaos suite's slot checker must report.
   */
  private async refireLastSlots(nowMs: number): Promise<void> {
    try {
      const items: FireItem[] = [];
      for (const s of await this.ctx.reads.dueWindow(0, this.wheel!.horizonEndMs, FIRST_PAGE)) {
        const cursor = await this.ctx.reads.fireCursor(s.jobId);
        if (cursor && cursor.lastSlotMs > 0) items.push({ jobId: s.jobId, slotMs: cursor.lastSlotMs });
      }
      if (items.length === 0 || this.stopped || !this.ctx.active()) return;
      this.ctx.log.warn({ slots: items.length }, 'UNSAFE skip-slot-check: firing the last fired slot of every due job again');
      await proposeUnread(this.ctx.node, { type: 'fireRuns', nowMs, misfireThresholdMs: this.ctx.config.misfireThresholdMs, items }, 'fire', PROPOSE_TIMEOUT_MS);
    } catch (e) {
      this.ctx.log.warn({ err: e }, 'UNSAFE skip-slot-check: re-fire failed');
    }
  }

  stop(): void {
    this.stopped = true;
    this.hints.clear();
    cancelTimer(this.timers, this.timer);
    this.wheel?.clear();
    this.events = [];
    this.toFire = [];
    this.paced = [];
    this.inFlight.clear();
  }

  /** Whether the job's next slot is held in the wheel now (tests, operators). */
  holds(jobId: string): boolean {
    return this.wheel?.has(jobId) ?? false;
  }

  /** Jobs held in the wheel (tests and metrics). */
  get size(): number {
    return this.wheel?.size ?? 0;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.timers.after(this.ctx.config.tickMs, () => void this.tick());
  }

  private async tick(): Promise<void> {
    try {
      const wheel = this.wheel;
      const now = this.ctx.now();
      if (!wheel || now === undefined || !this.ctx.active()) return;
      this.drainEvents();
      // Refill in steps of a few resolutions so a read is not issued every tick.
      if (wheel.horizonEndMs - this.loadedUpTo >= Math.min(1000, this.ctx.config.horizonMs / 4)) await this.refill();
      if (this.stopped) return;
      const due = wheel.advance(this.ctx.now() ?? now);
      if (due.length > 0) this.fire(due, this.ctx.now() ?? now);
      else if (this.paced.length > 0) this.pumpFires(this.ctx.now() ?? now); // held for room
    } catch (e) {
      this.ctx.log.error({ err: e }, 'scheduler tick failed');
    } finally {
      this.schedule();
    }
  }

  private async refill(): Promise<void> {
    const wheel = this.wheel!;
    let limit = FIRST_PAGE;
    while (!this.stopped) {
      const to = wheel.horizonEndMs;
      if (this.loadedUpTo >= to) break;
      const page = await this.ctx.reads.dueWindow(this.loadedUpTo, to, limit);
      if (this.stopped) return;
      let upTo = to;
      let items = page;
      if (page.length === limit) {
        const last = page[page.length - 1]!.slotMs;
        if (page[0]!.slotMs === last) {
          // One instant holds more jobs than a page (a round-time herd): read it whole.
          limit *= 2;
          continue;
        }
        // The page may have cut an instant in two: take that instant on the next page.
        upTo = last;
        items = page.filter((s) => s.slotMs < last);
      }
      const read = await this.readHints(items);
      if (this.stopped) return;
      for (const s of items) {
        if (this.inFlight.has(s.jobId)) continue;
        const hint = this.hints.get(s.jobId) ?? read.get(s.jobId);
        wheel.schedule({ jobId: s.jobId, slotMs: s.slotMs, fireAtMs: this.fireAtOf(s.jobId, s.slotMs, hint) });
      }
      this.loadedUpTo = upTo;
      // Anything applied while the page was read is newer than the page: apply it on top.
      this.drainEvents();
      limit = FIRST_PAGE;
    }
  }

  /**
   * The dispatch hints of jobs entering the wheel without one (created more than a horizon before
   * their slot, or known only from the due index after a leader change), read from their records:
   * a midnight herd then fires each run at its jittered instant from its first night on. Set in
   * the hint map unless an applied change to the job came meanwhile (that change's hint stands).
   */
  private async readHints(items: readonly { jobId: string; slotMs: number }[]): Promise<Map<string, DispatchHint>> {
    const out = new Map<string, DispatchHint>();
    // Slots already due fire at once either way: their fire does not wait for a read (a new
    // leader's first refill holds every overdue job).
    const now = this.ctx.now();
    if (now === undefined) return out;
    const missing = items.filter((s) => s.slotMs > now && !this.hints.has(s.jobId) && !this.inFlight.has(s.jobId)).map((s) => s.jobId);
    if (missing.length === 0) return out;
    const touched = new Set<string>();
    this.hintsTouched = touched;
    try {
      for (let i = 0; i < missing.length && !this.stopped; i += HINT_READ_CHUNK) {
        const jobs = await this.ctx.reads.getJobs(missing.slice(i, i + HINT_READ_CHUNK));
        for (const [id, job] of jobs) {
          if (!job?.spec || job.state !== JobState.JOB_STATE_ACTIVE || touched.has(id)) continue;
          const hint = dispatchHintOf(job.spec);
          out.set(id, hint);
          this.setHint(id, hint);
        }
      }
    } finally {
      this.hintsTouched = undefined;
    }
    return out;
  }

  private noteHints(items: readonly FireItem[], outcomes: readonly FireOutcome[]): void {
    const n = Math.min(items.length, outcomes.length);
    for (let i = 0; i < n; i++) this.setHint(items[i]!.jobId, outcomes[i]!.dispatch);
  }

  private setHint(jobId: string, hint: DispatchHint | undefined): void {
    this.hintsTouched?.add(jobId);
    if (hint === undefined) {
      this.hints.delete(jobId);
      return;
    }
    if (this.hints.size >= MAX_HINTS && !this.hints.has(jobId)) this.hints.clear();
    this.hints.set(jobId, hint);
  }

  /** The job's dispatch hint, if its last fire left one and it has not changed since. */
  readonly hintOf = (jobId: string): DispatchHint | undefined => this.hints.get(jobId);

  private drainEvents(): void {
    if (this.events.length === 0) return;
    const events = this.events;
    this.events = [];
    const m = this.ctx.metrics;
    for (const e of events) {
      if (e.kind === 'jobs') {
        for (const j of e.heads) this.rearm(j.id, j.state === JobState.JOB_STATE_ACTIVE ? j.nextFireUnixMs : 0);
        continue;
      }
      const { items, outcomes } = e;
      let created = 0;
      let missed = 0;
      let skipped = 0;
      let backlogFull = 0;
      const n = Math.min(items.length, outcomes.length);
      for (let i = 0; i < n; i++) {
        const item = items[i]!;
        const r = outcomes[i]!;
        this.inFlight.delete(item.jobId);
        this.rearm(item.jobId, r.nextFireMs);
        created += r.created;
        missed += r.missed;
        skipped += r.skipped;
        backlogFull += r.backlogFull;
      }
      // One metric update per entry rather than per item (labelled incs cost a label hash each).
      if (created) m.firedSlots.inc({ outcome: 'created' }, created);
      if (missed) {
        m.firedSlots.inc({ outcome: 'missed' }, missed);
        if (missed > backlogFull) m.missedSlots.inc({ reason: 'late' }, missed - backlogFull);
        if (backlogFull > 0) m.missedSlots.inc({ reason: 'backlog_full' }, backlogFull);
      }
      if (skipped) m.firedSlots.inc({ outcome: 'skipped' }, skipped);
      if (created > 0) this.ctx.dispatch.wake();
    }
  }

  /** A job's next slot is now `nextFireMs` (0 = none): hold it if it falls in what we loaded. */
  private rearm(jobId: string, nextFireMs: number): void {
    const wheel = this.wheel;
    if (!wheel) return;
    if (nextFireMs > 0 && nextFireMs < this.loadedUpTo) wheel.schedule({ jobId, slotMs: nextFireMs, fireAtMs: this.fireAtOf(jobId, nextFireMs) });
    else wheel.cancel(jobId); // none, or a later due-window read brings it in
  }

  /**
   * When a job's slot is fired, from the dispatch hint of its last fire or change (a job without
   * one, as after a leader change, fires at the slot). A job whose fire depends on nothing but the
   * slot (overlap ALLOW) fires SchedulerConfig.dispatchLeadMs ahead of the instant its run is due:
   * the slot, or with a jitter whose offset the hint says is exact, the slot plus that offset. A
   * jittered herd (a million daily jobs with a minute's jitter) is then fired over the minute as
   * its runs come due, not all at the slot with most of the minute's runs late behind the fire.
   * A fire time past the horizon waits in the wheel until the horizon reaches it (timing-wheel.ts).
   */
  private fireAtOf(jobId: string, slotMs: number, hint = this.hints.get(jobId)): number {
    if (!hint || !hint.allowsOverlap) return slotMs;
    const due = hintedDueMs(jobId, slotMs, hint);
    if (due === undefined) return slotMs;
    return due - this.ctx.config.dispatchLeadMs;
  }

  /**
   * Queues due slots for firing. At most `maxFiresInFlight` fireRuns commands are in flight:
   * slots coming due meanwhile ride in the next command, so under load there are fewer, larger
   * log entries (each entry costs a replicated write and an apply on every node) instead of one
   * per tick — while one slow commit (an fsync stall) does not hold back every slot behind it.
   */
  private fire(due: readonly WheelEntry[], nowMs: number): void {
    for (const e of due) this.inFlight.add(e.jobId);
    // Paced: runs the claim behind the fire would take (a hint that knows when the run is due, a worker for the type).
    const served = this.holdMs() > 0 ? this.ctx.dispatch.dispatchRoom()?.taskTypes : undefined;
    for (const e of due) {
      const hint = served && this.hints.get(e.jobId);
      (hint && knowsDue(hint) && served.has(hint.taskType) ? this.paced : this.toFire).push(e);
    }
    this.pumpFires(nowMs);
  }

  /** Fires queued slots if there is room now (the dispatcher calls this as workers free capacity). */
  pump(): void {
    const now = this.ctx.now();
    if (this.paced.length > 0 && now !== undefined) this.pumpFires(now);
  }

  private pumpFires(nowMs: number): void {
    const c = this.ctx.config;
    while (this.toFire.length + this.paced.length > 0 && this.firesInFlight < c.maxFiresInFlight && !this.stopped && this.ctx.active()) {
      const chunk = this.toFire.splice(0, c.fireBatchSize);
      if (chunk.length < c.fireBatchSize && this.paced.length > 0) {
        const n = this.pacedToTake(nowMs, c.fireBatchSize - chunk.length);
        if (n > 0) chunk.push(...this.paced.splice(0, n));
      }
      if (chunk.length === 0) break; // held for worker room: the next pump or tick looks again
      const items: FireItem[] = chunk.map((e) => ({ jobId: e.jobId, slotMs: e.slotMs }));
      const now = Math.max(nowMs, this.ctx.now() ?? nowMs);
      this.firesInFlight++;
      // The outcome is read from the applied entry (drainEvents), for any leader's fires alike.
      this.proposeFire({ type: 'fireRuns', nowMs: now, misfireThresholdMs: c.misfireThresholdMs, items })
        .catch((e: unknown) => {
          if (this.stopped || !this.ctx.active()) return;
          this.ctx.log.warn({ err: e, items: items.length }, 'fireRuns failed; retrying the slots');
          const at = (this.ctx.now() ?? now) + RETRY_DELAY_MS;
          for (const it of items) {
            this.inFlight.delete(it.jobId);
            if (!this.wheel?.has(it.jobId)) this.wheel?.schedule({ jobId: it.jobId, slotMs: it.slotMs, fireAtMs: at });
          }
        })
        .finally(() => {
          this.firesInFlight--;
          this.pumpFires(this.ctx.now() ?? now);
        });
    }
  }

  /**
   * Proposes a fire and, when the dispatcher plans a claim of the runs it creates, that claim as
   * the very next log entry: both are appended in one step, so the claim applies right after the
   * fire (usually in the same transaction, its runs written once, already RUNNING). Resolves once
   * the fire applied; the claim's outcome goes to the dispatcher.
   */
  private proposeFire(fire: FireRunsCommand): Promise<void> {
    const claim = this.ctx.dispatch.claimBehindFire(fire.items, fire.nowMs, this.hintOf);
    if (claim === undefined) return proposeUnread(this.ctx.node, fire, 'fire', PROPOSE_TIMEOUT_MS);
    // Both stamped as they are appended (stamped-proposal.ts), the claim at or after the fire.
    const clock = 'clusterClock' in this.ctx.node ? (this.ctx.node.clusterClock as StampClock) : { nowMs: () => this.ctx.now() };
    const [fired, claimed] = this.ctx.node.proposeBackToBack([stampedAtAppend(fire, clock), stampedAtAppend(claim.command, clock)], { timeoutMs: PROPOSE_TIMEOUT_MS });
    this.ctx.dispatch.claimProposed(claim, claimed!);
    return fired!.then((out) => checkResultType(fire, 'fire', out.result));
  }

  /**
   * How many paced slots the next fireRuns takes (at most `max`). Fire pacing: a slot whose run
   * the claim behind its fire would take goes only while a connected worker serving its task type
   * has a credit for it, and not while runs already fired wait for one (the dispatcher's backlog
   * goes first). Such a run's fire and claim usually apply in one transaction that writes it once,
   * already RUNNING; a run fired ahead of room is written PENDING and claimed from the ready index
   * in a transaction of its own: about twice the apply work and replicated bytes per run
   * (bench/README.md, fire pacing). Waiting costs the run nothing: it could not have started
   * sooner. No slot is held longer than holdMs() past its instant: then it fires as due.
   */
  private pacedToTake(nowMs: number, max: number): number {
    const n = Math.min(max, this.paced.length);
    const holdMs = this.holdMs();
    if (holdMs <= 0 || nowMs - this.paced[0]!.slotMs >= holdMs) return n;
    const room = this.ctx.dispatch.dispatchRoom();
    if (room === undefined) return n;
    let credits = room.credits;
    let i = 0;
    for (; i < n; i++) {
      // The hint was there when the slot came due; a change to the job since may have dropped it.
      const hint = this.hints.get(this.paced[i]!.jobId);
      if (hint === undefined || !room.taskTypes.has(hint.taskType)) continue;
      if (credits === 0) break;
      credits--;
    }
    return i;
  }

  /**
   * How long past its instant a slot may wait for room (0: pacing off): maxFireHoldMs, and at most
   * half the misfire threshold and half the watchdog's grace, so pacing never turns a late run
   * into a misfire or a watchdog alarm.
   */
  private holdMs(): number {
    const c = this.ctx.config;
    return Math.min(c.maxFireHoldMs, c.misfireThresholdMs / 2, c.watchdogGraceMs / 2);
  }
}
