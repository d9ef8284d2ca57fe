// Runs counted against the dispatcher's limits, per task type and per job: the runs the lease
// table holds (leased, or with a claim in flight). A run is counted once however often it is
// added (a re-attach grants its lease again); removing it tells the listener, so a dispatcher
// held back by a limit runs a round as soon as room appears instead of at its next poll.

/** What a run is counted under. */
export interface RunKey {
  readonly taskType: string;
  readonly jobId: string;
}

export class RunningCounts {
  private readonly runs = new Map<string, RunKey>();
  private readonly byType = new Map<string, number>();
  private readonly byJob = new Map<string, number>();
  /** Told when a run stops counting (the dispatcher wakes when it enforces limits). */
  onRemoved: ((key: RunKey) => void) | undefined;

  add(runId: string, key: RunKey): void {
    if (this.runs.has(runId)) return;
    this.runs.set(runId, key);
    this.byType.set(key.taskType, (this.byType.get(key.taskType) ?? 0) + 1);
    this.byJob.set(key.jobId, (this.byJob.get(key.jobId) ?? 0) + 1);
  }

  remove(runId: string): void {
    const key = this.runs.get(runId);
    if (!key) return;
    this.runs.delete(runId);
    dec(this.byType, key.taskType);
    dec(this.byJob, key.jobId);
    this.onRemoved?.(key);
  }

  ofTaskType(taskType: string): number {
    return this.byType.get(taskType) ?? 0;
  }

  ofJob(jobId: string): number {
    return this.byJob.get(jobId) ?? 0;
  }

  /** Counts per task type (metrics). */
  taskTypes(): ReadonlyMap<string, number> {
    return this.byType;
  }

  get size(): number {
    return this.runs.size;
  }

  clear(): void {
    this.runs.clear();
    this.byType.clear();
    this.byJob.clear();
  }
}

function dec(m: Map<string, number>, k: string): void {
  const n = (m.get(k) ?? 0) - 1;
  if (n <= 0) m.delete(k);
  else m.set(k, n);
}
