// The leader's cache of job specs for the deadline sweep (starting deadlines) and lease adoption
// at takeover (lease durations): a herd of runs of the same jobs would otherwise read each job
// record again on every sweep. Dispatch reads no job (claim results carry what an assignment
// needs; fire results carry each job's dispatch hint). Entries are dropped when an applied entry changes
// the job (put, update, pause, resume, delete); a read that raced with such a change is not
// cached. Bounded: cleared wholesale when full (it refills from LevelDB on demand).
import type { Job } from '../../gen/herald/v1/job.js';
import type { SchedulerStateMachine } from '../../fsm/index.js';

const MAX_CACHED_PAYLOAD = 16 * 1024;

export class JobCache {
  private readonly jobs = new Map<string, Job | undefined>();
  /**
   * Invalidations so far, and the count at each job's latest one: a read that began at count N
   * must not be kept for a job invalidated after N. Only consulted when the count moved while a
   * read was in flight (rare: job changes), so a read costs no per-job bookkeeping otherwise.
   * `epoch` covers wholesale clears.
   */
  private changes = 0;
  private readonly changedAt = new Map<string, number>();
  private epoch = 0;

  constructor(
    private readonly fsm: Pick<SchedulerStateMachine, 'getJob' | 'getJobs'>,
    private readonly maxEntries = 10_000,
  ) {}

  async get(jobId: string): Promise<Job | undefined> {
    const hit = this.jobs.get(jobId);
    if (hit !== undefined || this.jobs.has(jobId)) return hit;
    const epoch = this.epoch;
    const since = this.changes;
    const job = await this.fsm.getJob(jobId);
    if (this.unchanged(epoch, since, jobId)) this.remember(jobId, job);
    return job;
  }

  /** The cached job, without reading the store (undefined when not cached or absent). */
  peek(jobId: string): Job | undefined {
    return this.jobs.get(jobId);
  }

  /** Many jobs, in the order first asked for: the misses are read with one getJobs instead of one read each. */
  async getMany(jobIds: Iterable<string>): Promise<Map<string, Job | undefined>> {
    const out = new Map<string, Job | undefined>();
    const missing: string[] = [];
    for (const id of jobIds) {
      if (out.has(id)) continue;
      const hit = this.jobs.get(id);
      if (hit === undefined && !this.jobs.has(id)) missing.push(id);
      out.set(id, hit); // a miss holds its place until read
    }
    if (missing.length === 0) return out;
    const epoch = this.epoch;
    const since = this.changes;
    const read = await this.fsm.getJobs(missing);
    for (const id of missing) {
      const job = read.get(id);
      out.set(id, job);
      if (this.unchanged(epoch, since, id)) this.remember(id, job);
    }
    return out;
  }

  /** Neither the job nor the whole cache was invalidated since a read began (at `epoch`, `since`). */
  private unchanged(epoch: number, since: number, jobId: string): boolean {
    if (epoch !== this.epoch) return false;
    return since === this.changes || (this.changedAt.get(jobId) ?? 0) <= since;
  }

  private remember(jobId: string, job: Job | undefined): void {
    // Large payloads are read again when needed rather than pinned in memory. One-off jobs are
    // kept too: the starting-deadline sweep reads the jobs of the oldest ready runs, which the
    // next dispatch rounds read again.
    if ((job?.spec?.payload.length ?? 0) > MAX_CACHED_PAYLOAD) return;
    // Full: start over. Only the entries go; what was invalidated when still matters to reads in flight.
    if (this.jobs.size >= this.maxEntries) this.jobs.clear();
    this.jobs.set(jobId, job);
  }

  invalidate(jobId: string): void {
    this.jobs.delete(jobId);
    this.changedAt.set(jobId, ++this.changes);
    if (this.changedAt.size > this.maxEntries) this.clear();
  }

  clear(): void {
    this.jobs.clear();
    this.changedAt.clear();
    this.epoch++;
  }
}
