// The per-principal request rate limit (issue 29, abuse limits): a token bucket per principal
// name, refilled on the monotonic clock. A call over the limit is refused with LIMIT_EXCEEDED
// (RESOURCE_EXHAUSTED) saying when a retry will pass; nothing else is spent on it. Buckets of
// principals idle for a minute are dropped, so the map stays as small as the active callers.
import { HeraldError } from '../../herald-error.js';
import type { MonotonicClock } from '../../raft/monotonic-clock.js';

interface Bucket {
  tokens: number;
  atMs: number;
}

const IDLE_DROP_MS = 60_000;

export class PrincipalRateLimit {
  private readonly buckets = new Map<string, Bucket>();
  private lastSweepMs = 0;

  constructor(
    /** Calls per second each principal may make, on average. */
    private readonly perSecond: number,
    /** Calls a principal may make at once after being idle. */
    private readonly burst: number,
    private readonly clock: MonotonicClock,
  ) {}

  /** Spends one call of `name`'s budget, or throws LIMIT_EXCEEDED with the wait. */
  take(name: string): void {
    const now = this.clock.nowMs();
    this.sweep(now);
    let b = this.buckets.get(name);
    if (!b) this.buckets.set(name, (b = { tokens: this.burst, atMs: now }));
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.atMs) * this.perSecond) / 1000);
    b.atMs = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return;
    }
    const waitMs = Math.ceil(((1 - b.tokens) * 1000) / this.perSecond);
    throw new HeraldError('LIMIT_EXCEEDED', `principal "${name}" is over its rate limit of ${this.perSecond} calls/s; retry in ${waitMs} ms`, { retryAfterMs: waitMs });
  }

  private sweep(now: number): void {
    if (now - this.lastSweepMs < IDLE_DROP_MS) return;
    this.lastSweepMs = now;
    for (const [k, b] of this.buckets) if (now - b.atMs > IDLE_DROP_MS) this.buckets.delete(k);
  }
}
