// Returns the JS heap's freed pages to the system now and then.
//
// Why: on Node 24 (V8 13.6) the pages a garbage collection frees go to a pool that only a
// memory-reducing collection empties, and V8 starts one of those only while the process allocates
// little — which a busy leader never does. Without help a server's resident memory keeps the
// heap's high-water mark for ever and ratchets up at every burst of work (bench/README.md, "An
// hour, and where the leader's memory goes").
//
// How: at most every `intervalMs`, and only after a stretch in which the main thread was not
// busy (event-loop utilization below `busyUtilization`), V8's optimize-for-size mode is switched on until the next major
// collection ends. That collection then runs as a memory-reducing one — still incremental, so the
// pause stays that of a normal mark-compact plus its compaction — and releases the pool. The mode
// is switched off again at once: left on it would shrink the young generation and run many more
// collections. A process that allocates nothing reaches no collection; the request then lapses
// after `maxWaitMs` (it has nothing new to return either).
//
// Why not while busy: a memory-reducing collection leaves V8 a small heap limit, and a process in
// the middle of a burst (a herd's drain) then collects far more often until the limit grows back,
// which costs the burst CPU (bench/README.md, "The heap reducer"). What a burst grew is returned
// after it, when the thread has time again.
import { constants, performance, PerformanceObserver, type EventLoopUtilization } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';

/** `herald server --heap-reduce-interval-ms`'s default: rare enough that its collections cost nothing measurable. */
export const DEFAULT_HEAP_REDUCE_INTERVAL_MS = 60_000;

export interface HeapReducerOptions {
  /** How often to ask for one memory-reducing collection (> 0). */
  intervalMs: number;
  /** How long a request waits for V8's next major collection before it lapses (default: intervalMs / 2). */
  maxWaitMs?: number;
  /** Main-thread utilization (0–1) over the last check at or above which a request waits (default 0.5). */
  busyUtilization?: number;
  /** Told of each memory-reducing collection and its duration (the server logs it). */
  onReduced?: (durationMs: number) => void;
}

export class HeapReducer {
  private interval: NodeJS.Timeout | undefined;
  private lapse: NodeJS.Timeout | undefined;
  private observer: PerformanceObserver | undefined;
  private requested = false;
  private lastRequestAt = 0;
  private elu: EventLoopUtilization | undefined;
  /** Memory-reducing collections this reducer caused. */
  reductions = 0;
  /** Requests that lapsed without a major collection. */
  lapsed = 0;
  /** Checks at which a request was due but the main thread was busy. */
  deferredBusy = 0;

  constructor(private readonly options: HeapReducerOptions) {
    if (!(options.intervalMs > 0)) throw new RangeError(`HeapReducer: intervalMs must be > 0 (got ${options.intervalMs})`);
  }

  start(): void {
    if (this.interval) return;
    this.observer = new PerformanceObserver((list) => {
      if (!this.requested) return;
      for (const entry of list.getEntries()) {
        const kind = (entry as { detail?: { kind?: number } }).detail?.kind;
        if (kind !== constants.NODE_PERFORMANCE_GC_MAJOR) continue;
        this.release();
        this.reductions++;
        this.options.onReduced?.(entry.duration);
        return;
      }
    });
    this.observer.observe({ entryTypes: ['gc'] });
    this.lastRequestAt = performance.now();
    this.elu = performance.eventLoopUtilization();
    // Checked several times per interval, so a request waits for a quiet stretch, not a whole interval.
    this.interval = setInterval(() => this.check(), Math.max(1, Math.min(10_000, Math.floor(this.options.intervalMs / 4))));
    this.interval.unref();
  }

  /** Stops asking; the mode is off when this returns. */
  stop(): void {
    clearInterval(this.interval);
    this.interval = undefined;
    this.release();
    this.observer?.disconnect();
    this.observer = undefined;
  }

  private check(): void {
    const now = performance.eventLoopUtilization();
    const utilization = performance.eventLoopUtilization(now, this.elu).utilization;
    this.elu = now;
    if (this.requested || performance.now() - this.lastRequestAt < this.options.intervalMs) return;
    if (utilization >= (this.options.busyUtilization ?? 0.5)) {
      this.deferredBusy++;
      return;
    }
    this.request();
  }

  private request(): void {
    this.requested = true;
    this.lastRequestAt = performance.now();
    setFlagsFromString('--optimize-for-size');
    this.lapse = setTimeout(() => {
      this.release();
      this.lapsed++;
    }, this.options.maxWaitMs ?? Math.max(1, Math.floor(this.options.intervalMs / 2)));
    this.lapse.unref();
  }

  private release(): void {
    clearTimeout(this.lapse);
    this.lapse = undefined;
    if (!this.requested) return;
    this.requested = false;
    setFlagsFromString('--no-optimize-for-size');
  }
}
