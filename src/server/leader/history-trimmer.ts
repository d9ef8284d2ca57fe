// The loop that proposes history trims. What is due comes from the state machine's trim index
// (jobs by when their history is next due: over max_runs by a slack, or holding a run older than
// max_age; apply keeps it as runs end), never from memory: a new leader continues where the old
// one stopped, and runs that end any way (MISSED, SKIPPED, CANCELLED, DEAD, results a lost leader
// accepted) count alike. Trimming a job reads its history on every node and apply is serial, so
// one command carries at most MAX_JOBS_PER_TRIM jobs: the cost is spread over many small applies.
// A round that finds a full command's worth due proposes the next one as soon as it commits (up to
// MAX_TRIM_ROUNDS_PER_TICK), so trimming keeps pace with however many runs end per second (a
// thousand jobs a second need fifty commands a second) instead of one command per trimIntervalMs.
import { jobIdOfTrimKey } from '../../fsm/index.js';
import type { LeaderReads, LeaderTerm } from './leader-term.js';
import { cancelTimer, timersOf, type LeaderTimers, type TimerHandle } from './leader-timers.js';

export const MAX_JOBS_PER_TRIM = 20;
/** Back-to-back trim commands one tick may propose while each finds a full command due. */
export const MAX_TRIM_ROUNDS_PER_TICK = 50;

/** What the history trimmer uses of its term. */
export interface HistoryTrimmerDeps extends Pick<LeaderTerm, 'config' | 'log' | 'now' | 'active' | 'propose'> {
  readonly timers?: LeaderTimers;
  readonly reads: Pick<LeaderReads, 'trimDueKeys'>;
}

/**
 * Proposes a trimHistory command every trimIntervalMs with the jobs the trim index says are due;
 * idempotency-key expiry rides along, bounded the same way.
 */
export class HistoryTrimmer {
  private timer: TimerHandle | undefined;
  private trimming = false;
  private rounds = 0;
  /**
   * The last index key taken: the next round reads after it, then wraps, so jobs due "now" (an
   * equal due time, ordered by id) take turns even while more are due than a round trims.
   */
  private cursor: string | undefined;

  constructor(private readonly ctx: HistoryTrimmerDeps) {}

  start(): void {
    this.timer = timersOf(this.ctx).every(this.ctx.config.trimIntervalMs, () => void this.trim());
  }

  stop(): void {
    cancelTimer(timersOf(this.ctx), this.timer);
  }

  /** The jobs due at `now`, at most MAX_JOBS_PER_TRIM, round robin from the cursor. */
  private async due(now: number): Promise<string[]> {
    const reads = this.ctx.reads;
    let keys = await reads.trimDueKeys(now, MAX_JOBS_PER_TRIM, this.cursor);
    if (keys.length < MAX_JOBS_PER_TRIM && this.cursor !== undefined) {
      const wrapped = await reads.trimDueKeys(now, MAX_JOBS_PER_TRIM - keys.length);
      keys = [...keys, ...wrapped.filter((k) => !keys.includes(k))];
    }
    this.cursor = keys.length > 0 ? keys[keys.length - 1] : undefined;
    return [...new Set(keys.map(jobIdOfTrimKey))];
  }

  async trim(): Promise<void> {
    const ctx = this.ctx;
    if (this.trimming) return;
    this.trimming = true;
    try {
      for (let round = 0; round < MAX_TRIM_ROUNDS_PER_TICK; round++) {
        const now = ctx.now();
        if (now === undefined || !ctx.active()) return;
        const jobIds = await this.due(now);
        if (jobIds.length === 0 && round > 0) return;
        // With no history due, idempotency-key expiry alone goes out about every 10 s: an idle
        // cluster should not write a log entry every round.
        if (jobIds.length === 0 && this.rounds++ % Math.max(1, Math.round(10_000 / ctx.config.trimIntervalMs)) !== 0) return;
        if (!ctx.active()) return;
        await ctx.propose({ type: 'trimHistory', nowMs: now, jobIds, maxIdempotencyKeys: 200 }, 'trim', 10_000);
        // Fewer than a full command were due: the next tick is soon enough.
        if (jobIds.length < MAX_JOBS_PER_TRIM) return;
      }
    } catch (e) {
      // Nothing to put back: the jobs stay due in the index until a trim applies.
      if (ctx.active()) ctx.log.debug({ err: e }, 'trimHistory failed');
    } finally {
      this.trimming = false;
    }
  }
}
