/**
 * The leader's timing wheel: fire times due within a horizon, bucketed by a fixed resolution.
 *
 * Only fire times inside [cursor, cursor + horizon) are held, so memory is bounded by the slots in
 * the horizon, not by the jobs stored (DESIGN I6); the scheduler refills it by range reads of the
 * due index as the horizon moves. Entries are keyed by job id: a job has at most one pending fire
 * time in the wheel (its next slot), and re-scheduling a job replaces its entry.
 *
 * A slot inside the horizon may fire after its end (slot plus jitter): such an entry waits in
 * `later`, by bucket, and moves into the wheel as the horizon reaches it.
 */
export interface WheelEntry {
  jobId: string;
  /** The slot (before jitter). */
  slotMs: number;
  /** When to fire: slot plus jitter. */
  fireAtMs: number;
}

export interface TimingWheelOptions {
  /** Bucket width in ms (the wheel's resolution). */
  resolutionMs: number;
  /** How far ahead the wheel holds entries. */
  horizonMs: number;
}

export class TimingWheel {
  private readonly buckets: Map<string, WheelEntry>[];
  private readonly byJob = new Map<string, WheelEntry>();
  /** Entries whose slot is inside the horizon but whose fire time is not yet, by bucket start. */
  private readonly later = new Map<number, Map<string, WheelEntry>>();
  /** Buckets before this have been moved from `later` into the wheel. */
  private promotedUpTo: number;
  /** Start of the bucket the wheel reads next (a multiple of resolutionMs). */
  private cursorMs: number;

  constructor(
    private readonly options: TimingWheelOptions,
    startMs: number,
  ) {
    if (options.resolutionMs <= 0 || options.horizonMs < options.resolutionMs) {
      throw new RangeError('timing wheel needs resolutionMs > 0 and horizonMs >= resolutionMs');
    }
    const count = Math.ceil(options.horizonMs / options.resolutionMs) + 1;
    this.buckets = Array.from({ length: count }, () => new Map());
    this.cursorMs = this.floor(startMs);
    this.promotedUpTo = this.floor(this.horizonEndMs);
  }

  get size(): number {
    return this.byJob.size;
  }

  /** The end of the span the wheel can hold; entries at or after it must wait for a refill. */
  get horizonEndMs(): number {
    return this.cursorMs + this.options.horizonMs;
  }

  /**
   * Adds or replaces a job's entry. Entries already due (before the cursor) go into the current
   * bucket so the next advance returns them. Returns false (and holds nothing) past the horizon.
   */
  schedule(entry: WheelEntry): boolean {
    this.cancel(entry.jobId);
    const end = this.horizonEndMs;
    if (entry.fireAtMs >= end) {
      if (entry.slotMs >= end) return false;
      const key = this.floor(entry.fireAtMs);
      // A bucket already promoted is within the wheel's span (one bucket past the horizon at most).
      if (key < this.promotedUpTo) this.bucketFor(entry.fireAtMs).set(entry.jobId, entry);
      else {
        let b = this.later.get(key);
        if (!b) this.later.set(key, (b = new Map()));
        b.set(entry.jobId, entry);
      }
      this.byJob.set(entry.jobId, entry);
      return true;
    }
    const at = Math.max(entry.fireAtMs, this.cursorMs);
    this.bucketFor(at).set(entry.jobId, entry);
    this.byJob.set(entry.jobId, entry);
    return true;
  }

  cancel(jobId: string): void {
    const old = this.byJob.get(jobId);
    if (!old) return;
    this.byJob.delete(jobId);
    const key = this.floor(old.fireAtMs);
    const b = key >= this.promotedUpTo ? this.later.get(key) : undefined;
    if (b) {
      b.delete(jobId);
      if (b.size === 0) this.later.delete(key);
      return;
    }
    this.bucketFor(Math.max(old.fireAtMs, this.cursorMs)).delete(jobId);
  }

  has(jobId: string): boolean {
    return this.byJob.has(jobId);
  }

  /**
   * Returns every entry with fireAtMs <= nowMs, ordered by fire time, and moves the cursor.
   * Work grows with the buckets passed and the entries returned, never with the entries held.
   */
  advance(nowMs: number): WheelEntry[] {
    const due: WheelEntry[] = [];
    const lastBucketStart = this.floor(nowMs);
    while (this.cursorMs <= lastBucketStart) {
      const bucket = this.bucketFor(this.cursorMs);
      if (bucket.size > 0) {
        const isLast = this.cursorMs === lastBucketStart;
        for (const [jobId, entry] of bucket) {
          if (isLast && entry.fireAtMs > nowMs) continue;
          due.push(entry);
          bucket.delete(jobId);
          this.byJob.delete(jobId);
        }
      }
      if (this.cursorMs === lastBucketStart) break;
      // Entries left in a passed bucket cannot exist: everything in it was due.
      this.cursorMs += this.options.resolutionMs;
    }
    this.promote();
    due.sort((a, b) => a.fireAtMs - b.fireAtMs || (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0));
    return due;
  }

  clear(): void {
    for (const b of this.buckets) b.clear();
    this.later.clear();
    this.byJob.clear();
  }

  /** Moves the `later` buckets the horizon now reaches into the wheel. */
  private promote(): void {
    const upTo = this.floor(this.horizonEndMs);
    for (let k = this.promotedUpTo; k <= upTo && this.later.size > 0; k += this.options.resolutionMs) {
      const b = this.later.get(k);
      if (!b) continue;
      this.later.delete(k);
      for (const [jobId, entry] of b) this.bucketFor(entry.fireAtMs).set(jobId, entry);
    }
    this.promotedUpTo = Math.max(this.promotedUpTo, upTo + this.options.resolutionMs);
  }

  private floor(ms: number): number {
    return Math.floor(ms / this.options.resolutionMs) * this.options.resolutionMs;
  }

  private bucketFor(ms: number): Map<string, WheelEntry> {
    const n = this.buckets.length;
    const idx = Math.floor(ms / this.options.resolutionMs) % n;
    return this.buckets[(idx + n) % n]!;
  }
}
