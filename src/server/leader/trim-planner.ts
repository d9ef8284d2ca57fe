// Which jobs' run histories the leader trims next (trimHistory commands).
//
// Trimming a job reads its whole history, up to its retention, on every node. Trimming every job
// that finished anything in one command every 10 s stalled apply for a second and more at
// 1,000 jobs/s (steady bench: lateness p99 1.4 s, in waves 10 s apart, growing with history). So
// a job becomes due once it finished TRIM_AFTER_FINISHES runs since its last trim — its history
// then overshoots its retention by at most that many runs — or, for rare jobs, once it finished
// any run and waited STALE_AFTER_MS (age-based retention still applies); and one command carries
// at most MAX_JOBS_PER_TRIM jobs, so the cost is spread over many small applies (the leader
// proposes one every 100 ms by default: 200 jobs a second).
import type { MonotonicClock } from '../../raft/driver/monotonic-clock.js';

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
