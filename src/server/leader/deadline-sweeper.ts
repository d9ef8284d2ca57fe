// Starting deadlines for runs no worker takes: a scheduled run still waiting after its job's
// starting deadline is recorded MISSED through the log (markRuns) rather than left pending
// forever. (A claim after the deadline is refused by the FSM itself; this covers runs that are
// never claimed, e.g. no worker serves the task type.) The oldest ready runs come first in the
// ready index, so one bounded read per sweep finds the overdue ones.
import type { MarkItem } from '../../fsm/index.js';
import type { JobCache } from './job-cache.js';
import type { LeaderReads, LeaderTerm } from './leader-term.js';
import { cancelTimer, timersOf, type LeaderTimers, type TimerHandle } from './leader-timers.js';

const SWEEP_LIMIT = 2_000;

/** What the starting-deadline sweep uses of its term. */
export interface DeadlineSweeperDeps extends Pick<LeaderTerm, 'config' | 'metrics' | 'log' | 'now' | 'active' | 'propose'> {
  readonly timers?: LeaderTimers;
  readonly reads: Pick<LeaderReads, 'readyEntries' | 'getRuns'>;
  readonly jobs: Pick<JobCache, 'getMany'>;
}

export class DeadlineSweeper {
  private timer: TimerHandle | undefined;
  private sweeping = false;

  constructor(private readonly ctx: DeadlineSweeperDeps) {}

  start(): void {
    this.timer = timersOf(this.ctx).every(this.ctx.config.watchdogIntervalMs, () => void this.sweep());
  }

  stop(): void {
    cancelTimer(timersOf(this.ctx), this.timer);
  }

  async sweep(): Promise<void> {
    const ctx = this.ctx;
    const now = ctx.now();
    if (this.sweeping || now === undefined || !ctx.active()) return;
    this.sweeping = true;
    try {
      // The ready index first, the run records only of jobs that have a starting deadline: most
      // have none, and the sweep runs every second over the runs a herd left waiting.
      const entries = ctx.reads.readyEntries({ limit: SWEEP_LIMIT, nowMs: now });
      const jobs = await ctx.jobs.getMany(entries.map((e) => e.jobId));
      const timed = entries.filter((e) => (jobs.get(e.jobId)?.spec?.startingDeadlineMs ?? 0) > 0);
      if (timed.length === 0) return;
      const ready = (await ctx.reads.getRuns(timed.map((e) => e.runId))).filter((r) => r.attempt === 0 && !r.manual && !r.backfilled && r.redriveCount === 0);
      const items: MarkItem[] = [];
      for (const run of ready) {
        const deadline = jobs.get(run.jobId)?.spec?.startingDeadlineMs ?? 0;
        if (deadline > 0 && now > run.scheduledUnixMs + deadline) {
          items.push({ runId: run.id, outcome: 'missed', reason: `not started within the starting deadline of ${deadline} ms` });
        }
      }
      if (items.length === 0 || !ctx.active()) return;
      const res = await ctx.propose({ type: 'markRuns', nowMs: now, items }, 'runItems', 10_000);
      const missed = res.items.filter((r) => !r.error).length;
      if (missed > 0) {
        ctx.metrics.missedSlots.inc({ reason: 'starting_deadline' }, missed);
        ctx.log.info({ missed }, 'runs past their starting deadline recorded MISSED');
      }
    } catch (e) {
      if (ctx.active()) ctx.log.warn({ err: e }, 'starting-deadline sweep failed');
    } finally {
      this.sweeping = false;
    }
  }
}
