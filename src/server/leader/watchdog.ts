// The leader's watchdog for silent stops (I2): a job whose due slot has no run record well after
// the slot means the scheduler stopped firing it — nothing may disappear silently, so it becomes
// a metric (herald_watchdog_silent_jobs) and a log line. Firing advances a job's cursor, so
// "due slot without a run record" is exactly "cursor older than now − grace": one bounded range
// read of the due index per check, independent of the number of jobs stored (I6).
import type { LeaderReads, LeaderTerm } from './leader-term.js';

const MAX_REPORTED = 1_000;

/** What the watchdog uses of its term. */
export interface WatchdogDeps extends Pick<LeaderTerm, 'config' | 'metrics' | 'log' | 'now' | 'active'> {
  readonly reads: Pick<LeaderReads, 'dueWindow'>;
}

export class Watchdog {
  private timer: NodeJS.Timeout | undefined;
  private checking = false;
  /** Jobs flagged at the last check (tests and operators). */
  lastSilent: { jobId: string; slotMs: number }[] = [];

  constructor(private readonly ctx: WatchdogDeps) {}

  start(): void {
    this.timer = setInterval(() => void this.check(), this.ctx.config.watchdogIntervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
    this.ctx.metrics.silentJobs.set(0);
  }

  async check(): Promise<void> {
    const ctx = this.ctx;
    const now = ctx.now();
    if (this.checking || now === undefined || !ctx.active()) return;
    this.checking = true;
    try {
      const silent = await ctx.reads.dueWindow(0, Math.max(0, now - ctx.config.watchdogGraceMs), MAX_REPORTED);
      if (!ctx.active()) return;
      this.lastSilent = silent;
      ctx.metrics.silentJobs.set(silent.length);
      if (silent.length > 0) {
        ctx.log.warn(
          { count: silent.length, graceMs: ctx.config.watchdogGraceMs, oldest: silent.slice(0, 10) },
          'watchdog: jobs have a due slot with no run record past the grace period (firing stalled?)',
        );
      }
    } catch (e) {
      ctx.log.warn({ err: e }, 'watchdog check failed');
    } finally {
      this.checking = false;
    }
  }
}
