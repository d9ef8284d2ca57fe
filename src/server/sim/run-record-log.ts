// The runs, and the scheduled slots, that ever had a record written in some replica's store,
// taken from the stores' writes (MemoryDb.onWrite): a run key put, or deleted — a run that a
// retention trim removed in the very transaction that made it is only ever a delete. Retention
// trims delete run records: I2 counts a slot whose record was written and later trimmed as
// accounted for (a slot never written is lost), and I3 does not look for the record of a trimmed
// run an effect names.
import { RUN_PREFIX, runIdOfTail, SEP } from '../../fsm/store/key-layout.js';

export class RunRecordLog {
  private readonly slots = new Set<string>();
  private readonly runs = new Set<string>();

  /** Whether a scheduled run of `jobId` for `slotMs` was ever written. */
  has(jobId: string, slotMs: number): boolean {
    return this.slots.has(`${jobId}@${slotMs}`);
  }

  /** Whether a record of run `runId` was ever written. */
  hasRun(runId: string): boolean {
    return this.runs.has(runId);
  }

  /** One write of a store (every key put or deleted). */
  observe(keys: readonly string[]): void {
    for (const key of keys) {
      if (!key.startsWith(RUN_PREFIX)) continue;
      const tail = key.slice(RUN_PREFIX.length);
      const id = runIdOfTail(tail);
      this.runs.add(id);
      // "<jobId>\0<slot:15>\0<suffix>": a scheduled run has no suffix.
      const [jobId, slot, suffix] = tail.split(SEP);
      if (!suffix) this.slots.add(`${jobId}@${Number(slot)}`);
    }
  }
}
