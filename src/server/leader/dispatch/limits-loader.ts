// Keeps the dispatch gate's limits as the state machine has them: read once at takeover, and
// again after every applied entry that may change one (task type configs, job creates, edits
// and deletes: JobSpec.max_concurrent). Reads are one short range read (y\0, only limits are
// there) and coalesce: a burst of job creates costs one read in flight and one after it.
import type { Logger } from 'pino';
import type { Limits } from './dispatch-gate.js';

export interface LimitsReads {
  limits(): Promise<Limits>;
}

export class LimitsLoader {
  private inFlight: Promise<void> | undefined;
  private again = false;
  private stopped = false;

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

  stop(): void {
    this.stopped = true;
  }

  private async read(): Promise<void> {
    try {
      const limits = await this.reads.limits();
      if (!this.stopped) this.apply(limits);
    } catch (e) {
      // Kept as they were; the next change or takeover reads again.
      if (!this.stopped) this.log.warn({ err: e }, 'reading dispatch limits failed');
    }
  }
}
