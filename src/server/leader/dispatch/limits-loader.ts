// Keeps the dispatch gate's limits as the state machine has them: read once at takeover, and
// again whenever an applied entry wrote or deleted one (task type configs, jobs'
// max_concurrent: the state machine's limitsVersion moves). Reads are one short range read (y\0,
// only limits are there) and coalesce: a burst of changes costs one read in flight and one after
// it. Creates of unlimited jobs (nearly all) read nothing: at one create at a time, a read after
// each was a few pool round trips per create on the leader.
import type { Logger } from 'pino';
import type { Limits } from './dispatch-gate.js';

export interface LimitsReads {
  limits(): Promise<Limits>;
  /** Moves whenever the stored limits may have changed. */
  readonly limitsVersion: number;
}

export class LimitsLoader {
  private inFlight: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  /** The limitsVersion the gate's limits were last read at (-1: never read). */
  private seen = -1;

  constructor(
    private readonly reads: LimitsReads,
    private readonly apply: (limits: Limits) => void,
    private readonly log: Logger,
  ) {}

  /** The read in flight, if any: a dispatch round waits for it so a new limit applies at once. */
  get pending(): Promise<void> | undefined {
    return this.inFlight;
  }

  /** Reads the limits again (after the read in flight, when there is one). */
  reload(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.inFlight) {
      this.again = true;
      return this.inFlight;
    }
    const p = this.read().finally(() => {
      this.inFlight = undefined;
      if (this.again && !this.stopped) {
        this.again = false;
        void this.reload();
      }
    });
    this.inFlight = p;
    return p;
  }

  /** Reads the limits again if the state machine changed them since the last read; true if it does. */
  reloadIfChanged(): boolean {
    if (this.reads.limitsVersion === this.seen) return false;
    void this.reload();
    return true;
  }

  stop(): void {
    this.stopped = true;
  }

  private async read(): Promise<void> {
    try {
      // Taken before the read: a change applied while it runs moves the version past it.
      const version = this.reads.limitsVersion;
      const limits = await this.reads.limits();
      if (!this.stopped) {
        this.apply(limits);
        this.seen = version;
      }
    } catch (e) {
      // Kept as they were; the next change or takeover reads again.
      if (!this.stopped) this.log.warn({ err: e }, 'reading dispatch limits failed');
    }
  }
}
