// A token bucket for a task type's start rate: `rate` tokens per second up to `burst`, read on
// an injected clock (the leader's monotonic clock; tests pass a fake one). Refilled lazily when
// read, so an idle bucket costs nothing.

export class TokenBucket {
  private tokens: number;
  private lastMs: number;

  constructor(
    private rate: number,
    private burst: number,
    nowMs: number,
  ) {
    this.tokens = burst;
    this.lastMs = nowMs;
  }

  /** Whole starts allowed now. */
  available(nowMs: number): number {
    this.refill(nowMs);
    return Math.floor(this.tokens);
  }

  /** `n` runs started (never more than available() said). */
  take(n: number, nowMs: number): void {
    this.refill(nowMs);
    this.tokens = Math.max(0, this.tokens - n);
  }

  /** Milliseconds until the next whole token (0 when one is there). */
  msUntilNext(nowMs: number): number {
    this.refill(nowMs);
    return this.tokens >= 1 ? 0 : Math.ceil(((1 - this.tokens) / this.rate) * 1000);
  }

  /** A changed config: tokens kept, capped to the new burst. */
  reconfigure(rate: number, burst: number, nowMs: number): void {
    this.refill(nowMs);
    this.rate = rate;
    this.burst = burst;
    this.tokens = Math.min(this.tokens, burst);
  }

  same(rate: number, burst: number): boolean {
    return this.rate === rate && this.burst === burst;
  }

  private refill(nowMs: number): void {
    const dt = nowMs - this.lastMs;
    if (dt <= 0) return;
    this.tokens = Math.min(this.burst, this.tokens + (dt / 1000) * this.rate);
    this.lastMs = nowMs;
  }
}
