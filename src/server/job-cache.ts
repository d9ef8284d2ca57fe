// The leader's cache of job specs for dispatch (payload, lease duration, execution timeout,
// starting deadline): a herd of runs of the same jobs would otherwise read each job record again
// on every dispatch round and deadline sweep. Entries are dropped when an applied entry changes
// the job (put, update, pause, resume, delete); a read that raced with such a change is not
// cached. Bounded: cleared wholesale when full (it refills from LevelDB on demand).
import type { Job } from '../gen/herald/v1/job.js';
import type { SchedulerStateMachine } from '../fsm/index.js';

const MAX_CACHED_PAYLOAD = 16 * 1024;

export class JobCache {
  private readonly jobs = new Map<string, Job | undefined>();
  /** Invalidation counters of jobs read while invalidated; `epoch` covers wholesale clears. */
  private readonly generation = new Map<string, number>();
  private epoch = 0;

  constructor(
    private readonly fsm: Pick<SchedulerStateMachine, 'getJob' | 'getJobs'>,
    private readonly maxEntries = 10_000,
  ) {}

  async get(jobId: string): Promise<Job | undefined> {
    if (this.jobs.has(jobId)) return this.jobs.get(jobId);
    const epoch = this.epoch;
    const gen = this.generation.get(jobId) ?? 0;
    const job = await this.fsm.getJob(jobId);
    this.remember(jobId, job, epoch, gen);
    return job;
  }

  /** The cached job, without reading the store (undefined when not cached or absent). */
  peek(jobId: string): Job | undefined {
    return this.jobs.get(jobId);
  }

  /** Many jobs: the misses are read with one getMany instead of one read each. */
  async getMany(jobIds: Iterable<string>): Promise<Map<string, Job | undefined>> {
    const out = new Map<string, Job | undefined>();
    const missing = new Set<string>();
    for (const id of jobIds) {
      if (this.jobs.has(id)) out.set(id, this.jobs.get(id));
      else missing.add(id);
    }
    if (missing.size === 0) return out;
    const epoch = this.epoch;
    const ids = [...missing];
    const gens = ids.map((id) => this.generation.get(id) ?? 0);
    const read = await this.fsm.getJobs(ids);
    ids.forEach((id, i) => {
      const job = read.get(id);
      this.remember(id, job, epoch, gens[i]!);
      out.set(id, job);
    });
    return out;
  }

  /** Caches a read unless the job changed (or the cache was cleared) while it was being read. */
  private remember(jobId: string, job: Job | undefined, epoch: number, gen: number): void {
    if (epoch !== this.epoch || gen !== (this.generation.get(jobId) ?? 0)) return;
    // Large payloads are read again when needed rather than pinned in memory.
    if ((job?.spec?.payload.length ?? 0) > MAX_CACHED_PAYLOAD) return;
    if (this.jobs.size >= this.maxEntries) this.clear();
    this.jobs.set(jobId, job);
  }

  invalidate(jobId: string): void {
    this.jobs.delete(jobId);
    this.generation.set(jobId, (this.generation.get(jobId) ?? 0) + 1);
    if (this.generation.size > this.maxEntries) this.clear();
  }

  clear(): void {
    this.jobs.clear();
    this.generation.clear();
    this.epoch++;
  }
}
