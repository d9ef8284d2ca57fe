// A node's disk I/O on simulated time: each write lands on its SimDisk at a time the seed
// chooses, in order within its stream (one LevelDB database: the log, or the state machine)
// but in any order across streams; a synced write makes its disk durable when it lands. Any
// read or write may fail with an I/O error instead (nothing of a failed write lands). A crash
// (the owner dies) loses every write that has not landed.

import type { Owner, SimScheduler } from './sim-scheduler.js';
import type { Prng } from './prng.js';

/** What an injected I/O failure throws (the driver must stop the node, never carry on). */
export class SimIoError extends Error {
  constructor(what: string) {
    super(`simulated I/O error: ${what}`);
    this.name = 'SimIoError';
  }
}

export interface SimIoOptions {
  /** Writes land 0..maxDelay units after they are issued. */
  maxDelay: number;
  /** Probability that one read or write fails (changed at run time: 0 once the run calms down). */
  errorRate: number;
}

export class SimIo {
  private readonly tail = new Map<string, number>();

  constructor(
    private readonly sched: SimScheduler,
    private readonly owner: Owner,
    private readonly rng: Prng,
    readonly opts: SimIoOptions,
    /** Failures injected, over every incarnation of the node. */
    private readonly counts: { ioErrors: number },
  ) {}

  /** `land` runs when the write reaches the disk (or the returned promise rejects with an I/O error). */
  write<T>(stream: string, what: string, land: () => T): Promise<T> {
    const sched = this.sched;
    const at = Math.max(sched.now + this.rng.int(0, this.opts.maxDelay + 1), this.tail.get(stream) ?? 0);
    this.tail.set(stream, at);
    const fails = this.opts.errorRate > 0 && this.rng.chance(this.opts.errorRate);
    return new Promise<T>((resolve, reject) => {
      sched.at(at, this.owner, () => {
        if (fails) {
          this.counts.ioErrors++;
          reject(new SimIoError(what));
        } else resolve(land());
      });
    });
  }

  /** A read that may fail (reads are served from the page cache: at once). */
  read(what: string): void {
    if (this.opts.errorRate > 0 && this.rng.chance(this.opts.errorRate)) {
      this.counts.ioErrors++;
      throw new SimIoError(what);
    }
  }
}
