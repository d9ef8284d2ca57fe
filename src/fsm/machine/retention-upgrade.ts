// Deriving the retention state of a store written before schema 4 (key-layout.ts): each job
// record gets its count of terminal runs, and each job holding any gets a trim index entry due at
// once, so the trimmer works through old histories (oldest job id first, bounded per command)
// and each trim sets the job's real due time. A pure function of the store's contents: every
// replica derives the same bytes, at open and at restore of an older snapshot.
import type { Db } from '../store/apply-txn.js';
import { JOB_PREFIX, prefixEnd, statePrefix, TRIM_PREFIX } from '../store/key-layout.js';
import { decodeJobRecord, encodeJobRecord, jobIndexKeys, TERMINAL_STATES } from '../store/records.js';
import { TRIM_DUE_NOW } from '../store/retention.js';
import { scanKeys } from '../store/key-scan.js';

const EMPTY = new Uint8Array();

/** Rewrites every job record with its retention state and writes the trim index; not synced (the caller's final write is). */
export async function deriveRetentionIndex(db: Db): Promise<void> {
  const terminal = new Map<string, number>();
  for (const state of TERMINAL_STATES) {
    const prefix = statePrefix(state);
    for await (const key of scanKeys(db, { gte: prefix, lt: prefixEnd(prefix) })) {
      // "s\0<state:2>\0<jobId>\0...": the job id follows the 5-character state prefix.
      const jobId = key.slice(5, key.indexOf('\0', 5));
      terminal.set(jobId, (terminal.get(jobId) ?? 0) + 1);
    }
  }
  await db.clear({ gte: TRIM_PREFIX, lt: prefixEnd(TRIM_PREFIX) });
  let batch = db.batch();
  for await (const [key, value] of db.iterator({ gte: JOB_PREFIX, lt: prefixEnd(JOB_PREFIX) })) {
    const rec = decodeJobRecord(value);
    rec.terminalRuns = terminal.get(rec.job.id) ?? 0;
    rec.trimDueMs = rec.terminalRuns > 0 ? TRIM_DUE_NOW : 0;
    batch.put(key, encodeJobRecord(rec));
    // The due index key is unchanged; the trim key is new.
    for (const k of jobIndexKeys(rec)) if (k.startsWith(TRIM_PREFIX)) batch.put(k, EMPTY);
    if (batch.length >= 10_000) {
      await batch.write();
      batch = db.batch();
    }
  }
  await batch.write();
}
