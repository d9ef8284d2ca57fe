// The leader's watchdog for silent stops (I2): a job whose due slot has no run record well after
// the slot means the scheduler stopped firing it — nothing may disappear silently, so it becomes
// a metric (herald_watchdog_silent_jobs) and a log line. Firing advances a job's cursor, so
// "due slot without a run record" is exactly "cursor older than now − grace": one bounded range
// read of the due index per check, independent of the number of jobs stored (I6).
//
// It also flags task types with runs waiting and no connected worker serving them (metric
// herald_task_types_unserved, a warning when that set changes, and `cluster status`): their jobs
// pile up backlog (bounded by max_pending_runs) or MISSED runs, and nothing else says why.
//
// Stalled jobs are also proposed as a raiseAlerts command: a job whose AlertPolicy names
// on_watchdog gets an alert run per stalled slot (apply-alerts.ts, which also dedupes across
// leaders); each slot is proposed once per term.
import type { UnservedTaskType } from '../../gen/herald/v1/cluster_service.js';
import type { LeaderReads, LeaderTerm } from './leader-term.js';
import type { SessionRegistry } from './worker-session.js';
import { cancelTimer, timersOf, type LeaderTimers, type TimerHandle } from './leader-timers.js';

const MAX_REPORTED = 1_000;
/** Stalled slots remembered as proposed this term; past it the set starts afresh (the FSM dedupes). */
const MAX_PROPOSED = 10_000;

/** What the watchdog uses of its term. */
export interface WatchdogDeps extends Pick<LeaderTerm, 'config' | 'metrics' | 'log' | 'now' | 'active' | 'propose'> {
  readonly timers?: LeaderTimers;
  readonly reads: Pick<LeaderReads, 'dueWindow' | 'waitingByTaskType'>;
  readonly sessions: Pick<SessionRegistry, 'all'>;
}

export class Watchdog {
  private timer: TimerHandle | undefined;
  private checking = false;
  /** Jobs flagged at the last check (tests and operators). */
  lastSilent: { jobId: string; slotMs: number }[] = [];
  /** Task types with waiting runs and no worker at the last check, by name. */
  lastUnserved: UnservedTaskType[] = [];
  /** "<job>@<slot>" of stalled slots proposed as alerts this term. */
  private readonly proposed = new Set<string>();

  constructor(private readonly ctx: WatchdogDeps) {}

  start(): void {
    this.timer = timersOf(this.ctx).every(this.ctx.config.watchdogIntervalMs, () => void this.check());
  }

  stop(): void {
    cancelTimer(timersOf(this.ctx), this.timer);
    this.ctx.metrics.silentJobs.set(0);
    this.ctx.metrics.unservedTaskTypes.set(0);
    this.lastUnserved = [];
  }

  /** Task types with runs waiting for a worker and no connected worker subscribed to them. */
  private checkUnserved(): void {
    const ctx = this.ctx;
    const served = new Set<string>();
    for (const s of ctx.sessions.all()) for (const t of s.taskTypes) served.add(t);
    const unserved: UnservedTaskType[] = [];
    for (const [taskType, waitingRuns] of ctx.reads.waitingByTaskType()) {
      if (!served.has(taskType)) unserved.push({ taskType, waitingRuns });
    }
    unserved.sort((a, b) => (a.taskType < b.taskType ? -1 : a.taskType > b.taskType ? 1 : 0));
    const before = this.lastUnserved.map((u) => u.taskType).join('\0');
    this.lastUnserved = unserved;
    ctx.metrics.unservedTaskTypes.set(unserved.length);
    // Once per change of the set, not every check: an unserved type stays so for a while.
    if (unserved.length > 0 && unserved.map((u) => u.taskType).join('\0') !== before) {
      ctx.log.warn(
        { count: unserved.length, taskTypes: unserved.slice(0, 20) },
        'watchdog: task types have runs waiting and no connected worker serving them',
      );
    }
  }

  /** Proposes the stalled slots not proposed yet this term as alerts (the FSM alerts only jobs that ask). */
  private async raiseAlerts(silent: readonly { jobId: string; slotMs: number }[], now: number): Promise<void> {
    const fresh = silent.filter((s) => !this.proposed.has(`${s.jobId}@${s.slotMs}`));
    if (fresh.length === 0 || !this.ctx.active()) return;
    if (this.proposed.size + fresh.length > MAX_PROPOSED) this.proposed.clear();
    const graceMs = this.ctx.config.watchdogGraceMs;
    const items = fresh.map((s) => ({ jobId: s.jobId, slotMs: s.slotMs, reason: `due slot ${new Date(s.slotMs).toISOString()} has no run ${graceMs} ms past it (firing stalled)` }));
    await this.ctx.propose({ type: 'raiseAlerts', nowMs: now, items }, 'alerts');
    for (const s of fresh) this.proposed.add(`${s.jobId}@${s.slotMs}`);
  }

  async check(): Promise<void> {
    const ctx = this.ctx;
    const now = ctx.now();
    if (this.checking || now === undefined || !ctx.active()) return;
    this.checking = true;
    try {
      this.checkUnserved();
      const silent = await ctx.reads.dueWindow(0, Math.max(0, now - ctx.config.watchdogGraceMs), MAX_REPORTED);
      if (!ctx.active()) return;
      this.lastSilent = silent;
      ctx.metrics.silentJobs.set(silent.length);
      if (silent.length > 0) {
        ctx.log.warn(
          { count: silent.length, graceMs: ctx.config.watchdogGraceMs, oldest: silent.slice(0, 10) },
          'watchdog: jobs have a due slot with no run record past the grace period (firing stalled?)',
        );
        await this.raiseAlerts(silent, now);
      }
    } catch (e) {
      ctx.log.warn({ err: e }, 'watchdog check failed');
    } finally {
      this.checking = false;
    }
  }
}
