/**
 * The leader's timing wheel: fire times due within a horizon, bucketed by a fixed resolution.
 *
 * Only fire times inside [cursor, cursor + horizon) are held, so memory is bounded by the slots in
 * the horizon, not by the jobs stored (DESIGN I6); the scheduler refills it by range reads of the
 * due index as the horizon moves. Entries are keyed by job id: a job has at most one pending fire
 * time in the wheel (its next slot), and re-scheduling a job replaces its entry.
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
    if (entry.fireAtMs >= this.horizonEndMs) return false;
    const at = Math.max(entry.fireAtMs, this.cursorMs);
    this.bucketFor(at).set(entry.jobId, entry);
    this.byJob.set(entry.jobId, entry);
    return true;
  }

  cancel(jobId: string): void {
    const old = this.byJob.get(jobId);
    if (!old) return;
    this.byJob.delete(jobId);
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
    due.sort((a, b) => a.fireAtMs - b.fireAtMs || (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0));
    return due;
  }

  clear(): void {
    for (const b of this.buckets) b.clear();
    this.byJob.clear();
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
