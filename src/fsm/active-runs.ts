// Active runs per job (Job.active_runs): how many of a job's runs are not terminal, kept in
// memory on every replica instead of in the job record (schema 4).
//
// Why: ending a run only decremented this count, so every finish decoded, re-encoded and wrote
// its job record back on every replica — for a herd of one-off jobs, one of the eight LevelDB
// writes of a run and ~6% of apply's main-thread CPU. The count is derived state, like the
// per-state counters and the ready index: a pure function of the stored run records (the job's
// s\0 keys in the non-terminal states), updated from the run state changes of each batch once it
// is in the store, and rebuilt from those s\0 ranges when the store is opened or restored. Unlike
// the ready index it does feed apply (overlap decisions, BUFFER_ONE release): it is exact on every
// replica because it follows from the store alone, and apply reads it only when it tracks a job
// (ApplyTxn.trackJob), where the stored field used to be read. Job records store 0 in its place.
import type { Db } from './apply-txn.js';
import { ACTIVE_STATES } from './records.js';
import { statePrefix, SEP, SEP_END } from './key-layout.js';

export class ActiveRuns {
  private readonly counts = new Map<string, number>();

  /** Non-terminal runs of the job as stored. */
  get(jobId: string): number {
    return this.counts.get(jobId) ?? 0;
  }

  /** Jobs with at least one active run (tests). */
  get size(): number {
    return this.counts.size;
  }

  /** After a batch is in the store: its changes in active runs per job. */
  add(deltas: ReadonlyMap<string, number>): void {
    for (const [jobId, d] of deltas) {
      const n = (this.counts.get(jobId) ?? 0) + d;
      if (n === 0) this.counts.delete(jobId);
      else this.counts.set(jobId, n);
    }
  }

  clear(): void {
    this.counts.clear();
  }

  /** Recounts from the store: one key scan of the non-terminal s\0 ranges (open and restore only). */
  async rebuild(db: Db): Promise<void> {
    this.counts.clear();
    for (const state of ACTIVE_STATES) {
      const prefix = statePrefix(state);
      const it = db.keys({ gte: prefix, lt: prefix.slice(0, -1) + SEP_END });
      try {
        for (;;) {
          const keys = await it.nextv(1000);
          if (keys.length === 0) break;
          for (const k of keys) {
            // "s\0<state:2>\0<jobId>\0<slot>\0<suffix>": the job id starts at 5.
            const jobId = k.slice(prefix.length, k.indexOf(SEP, prefix.length));
            this.counts.set(jobId, (this.counts.get(jobId) ?? 0) + 1);
          }
        }
      } finally {
        await it.close();
      }
    }
  }
}
