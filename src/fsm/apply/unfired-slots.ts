// Slots that came due while a job was active but were never fired — the cluster had no quorum
// or no leader at the time — when a pause or a schedule change stops the job's cursor. Without a
// record they would vanish: resume and the new schedule continue from "now". Each gets a MISSED
// run naming why, so every slot of an active job has a run or an explicit record (I2).
import { RunState } from '../../gen/herald/v1/run.js';
import type { ApplyTxn } from '../store/apply-txn.js';
import { MAX_SLOTS_PER_FIRE_ITEM } from './apply-fire-runs.js';
import type { JobRecord } from '../store/records.js';
import { newRun } from './run-transitions.js';
import { parseRunId, scheduledRunId } from '../commands/run-id.js';
import { jitteredSlot, nextSlotAfter, slotsInRange } from '../schedule/index.js';

/**
 * Records MISSED runs for the job's slots from its fire cursor whose (jittered) time is at or
 * before `nowMs`, at most MAX_SLOTS_PER_FIRE_ITEM of them, and moves the cursor past them.
 * Returns the run ids recorded. The caller writes the job record.
 */
export async function recordUnfiredSlots(txn: ApplyTxn, rec: JobRecord, nowMs: number, reason: string): Promise<string[]> {
  const job = rec.job;
  const spec = job.spec;
  if (!spec || job.nextFireUnixMs === 0 || job.nextFireUnixMs > nowMs) return [];
  const found = slotsInRange(spec, job.nextFireUnixMs, nowMs + 1, job.createdUnixMs, MAX_SLOTS_PER_FIRE_ITEM + 1, txn.schedule);
  const recorded: string[] = [];
  let last: number | undefined;
  for (let i = 0; i < Math.min(found.length, MAX_SLOTS_PER_FIRE_ITEM); i++) {
    const slot = found[i]!;
    const scheduled = jitteredSlot(job.id, spec, found, i, job.createdUnixMs, txn.schedule);
    // A jittered instant still ahead was not late: the pause or the new schedule is its record.
    if (scheduled > nowMs) break;
    last = slot;
    const id = scheduledRunId(job.id, slot);
    if (await txn.getRun(parseRunId(id)!)) continue; // I1
    txn.putRun(newRun(rec, { id, slotMs: slot, scheduledMs: scheduled, nowMs, state: RunState.RUN_STATE_MISSED, reason }));
    recorded.push(id);
  }
  if (last !== undefined) {
    job.lastSlotUnixMs = Math.max(job.lastSlotUnixMs, last);
    job.nextFireUnixMs = nextSlotAfter(spec, last, job.createdUnixMs, txn.schedule) ?? 0;
  }
  return recorded;
}
