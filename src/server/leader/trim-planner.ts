// Which jobs' run histories the leader trims next, and the loop that proposes the trims.
//
// Trimming a job reads its whole history, up to its retention, on every node, and apply is serial:
// trimming every job that finished anything in one large command stalls apply for everyone, in
// waves, growing with history. So a job becomes due once it finished TRIM_AFTER_FINISHES runs
// since its last trim (its history then overshoots its retention by at most that many runs) or,
// for rare jobs, once it finished any run and waited STALE_AFTER_MS (age-based retention still
// applies); and one command carries at most MAX_JOBS_PER_TRIM jobs, so the cost is spread over
// many small applies (one every trimIntervalMs).
import type { MonotonicClock } from '../../raft/driver/monotonic-clock.js';
import type { LeaderTerm } from './leader-term.js';

export const TRIM_AFTER_FINISHES = 10;
export const STALE_AFTER_MS = 60_000;
export const MAX_JOBS_PER_TRIM = 20;

interface Pending {
  finishes: number;
  sinceMs: number;
}

export class TrimPlanner {
  /** Jobs with untrimmed finishes, in order of their oldest untrimmed finish (insertion order). */
  private readonly pending = new Map<string, Pending>();
  /** Pending jobs that reached TRIM_AFTER_FINISHES, in the order they got there. */
  private readonly ready = new Set<string>();

  constructor(private readonly clock: MonotonicClock) {}

  get size(): number {
    return this.pending.size;
  }

  /** A run of the job finished (its result committed). */
  noteFinished(jobId: string): void {
    const p = this.pending.get(jobId);
    if (p) {
      if (++p.finishes >= TRIM_AFTER_FINISHES) this.ready.add(jobId);
    } else {
      this.pending.set(jobId, { finishes: 1, sinceMs: this.clock.nowMs() });
      if (TRIM_AFTER_FINISHES <= 1) this.ready.add(jobId);
    }
  }

  /**
   * The jobs to trim now (at most `limit`); they leave the plan until they finish runs again.
   * Costs O(limit), not O(jobs pending): a herd leaves 100k jobs pending with one finish each.
   */
  take(limit = MAX_JOBS_PER_TRIM): string[] {
    const out: string[] = [];
    for (const jobId of this.ready) {
      if (out.length >= limit) break;
      out.push(jobId);
    }
    for (const id of out) {
      this.ready.delete(id);
      this.pending.delete(id);
    }
    if (out.length < limit) {
      // The oldest untrimmed finishes come first: stop at the first one not yet stale.
      const now = this.clock.nowMs();
      const stale: string[] = [];
      for (const [jobId, p] of this.pending) {
        if (out.length + stale.length >= limit || now - p.sinceMs < STALE_AFTER_MS) break;
        stale.push(jobId);
      }
      for (const id of stale) this.pending.delete(id);
      out.push(...stale);
    }
    return out;
  }

  /** A trim that failed: its jobs are due again at the next round. */
  putBack(jobIds: readonly string[]): void {
    for (const id of jobIds) {
      const p = this.pending.get(id);
      if (p) p.finishes += TRIM_AFTER_FINISHES;
      else this.pending.set(id, { finishes: TRIM_AFTER_FINISHES, sinceMs: this.clock.nowMs() });
      this.ready.add(id);
    }
  }
}

/** What the history trimmer uses of its term. */
export type HistoryTrimmerDeps = Pick<LeaderTerm, 'config' | 'log' | 'now' | 'active' | 'propose'>;

/**
 * Proposes a trimHistory command every trimIntervalMs with the jobs the planner says are due;
 * idempotency-key expiry rides along, bounded the same way.
 */
export class HistoryTrimmer {
  private timer: NodeJS.Timeout | undefined;
  private trimming = false;
  private rounds = 0;

  constructor(
    private readonly ctx: HistoryTrimmerDeps,
    private readonly planner: TrimPlanner,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.trim(), this.ctx.config.trimIntervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async trim(): Promise<void> {
    const ctx = this.ctx;
    const now = ctx.now();
    if (now === undefined || !ctx.active() || this.trimming) return;
    const jobIds = this.planner.take();
    // With no history due, idempotency-key expiry alone goes out about every 10 s: an idle
    // cluster should not write a log entry every round.
    if (jobIds.length === 0 && this.rounds++ % Math.max(1, Math.round(10_000 / ctx.config.trimIntervalMs)) !== 0) return;
    this.trimming = true;
    try {
      await ctx.propose({ type: 'trimHistory', nowMs: now, jobIds, maxIdempotencyKeys: 200 }, 'trim', 10_000);
    } catch (e) {
      this.planner.putBack(jobIds);
      if (ctx.active()) ctx.log.debug({ err: e }, 'trimHistory failed');
    } finally {
      this.trimming = false;
    }
  }
}
