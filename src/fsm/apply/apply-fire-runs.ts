// Where scheduled slots become runs: fireRuns, proposed by the leader's timing wheel.
//
// A fire item (job, slot) means "the leader saw this slot due": every slot of the job from its
// fire cursor (next_fire) up to max(slot, now) is handled in order, so a leader that was down
// hands the whole gap to the misfire policy in one step. A slot below the cursor was handled
// already: the item is a no-op (I1 — and the run id derived from (job, slot) makes a second run
// impossible even if the cursor were wrong). The next fire time comes from the last slot handled,
// never from now.
import { JobState, MisfirePolicy, OverlapPolicy, type JobSpec } from '../../gen/herald/v1/job.js';
import { RunState } from '../../gen/herald/v1/run.js';
import { NOT_READ, type ApplyTxn } from '../store/apply-txn.js';
import type { FireItem, FireRunsCommand } from '../commands/commands.js';
import { isTerminal } from '../store/records.js';
import type { CancelSignal, FireItemResult, FireResult } from '../commands/results.js';
import { dispatchHintOf, overlapOf } from '../commands/dispatch-hint.js';
import { addActive, addHeld, cancelActiveRuns, newRun } from './run-transitions.js';
import { asItemError, itemError } from './item-errors.js';
import { parseRunId, scheduledRunId, type ParsedRunId } from '../commands/run-id.js';
import { jitteredSlot, nextSlotAfter, slotsInRange } from '../schedule/index.js';
import { DEFAULT_MAX_PENDING_RUNS, isValidId, validateId } from '../commands/validation.js';

/** Slots handled per fire item; a longer gap continues with the next fire of the job. */
export const MAX_SLOTS_PER_FIRE_ITEM = 1000;
export const DEFAULT_MISFIRE_MAX_RUNS = 100;
/** FireRunsCommand.misfireThresholdMs of 0 means this. */
export const DEFAULT_MISFIRE_THRESHOLD_MS = 60_000;

type SlotFate = { readonly kind: 'run' } | { readonly kind: 'missed'; readonly reason: string };
/** Most slots run: they share one fate (fates are replaced, never changed). */
const RUN: SlotFate = { kind: 'run' };
const ONE_ON_TIME: readonly SlotFate[] = Object.freeze([RUN]);

function misfirePolicyOf(spec: JobSpec): MisfirePolicy {
  return spec.misfirePolicy === MisfirePolicy.MISFIRE_POLICY_UNSPECIFIED ? MisfirePolicy.MISFIRE_POLICY_RUN_ONCE : spec.misfirePolicy;
}

/**
 * Decides per slot: run, or MISSED (starting deadline passed, or dropped by the misfire policy).
 * The starting deadline counts from the scheduled instant (slot + jitter), as the claim check and
 * the leader's deadline sweep do; downtime (the misfire threshold) counts from the slot.
 */
function slotFates(spec: JobSpec, slots: readonly number[], scheduled: readonly number[], nowMs: number, thresholdMs: number, truncated: boolean): readonly SlotFate[] {
  // The common case, one slot on time (every slot of a herd, most of steady load): shared.
  if (slots.length === 1 && !(spec.startingDeadlineMs > 0 && nowMs > scheduled[0]! + spec.startingDeadlineMs) && !(nowMs > slots[0]! + thresholdMs)) {
    return ONE_ON_TIME;
  }
  const fates: SlotFate[] = slots.map(() => RUN);
  const misfired: number[] = [];
  slots.forEach((s, i) => {
    if (spec.startingDeadlineMs > 0 && nowMs > scheduled[i]! + spec.startingDeadlineMs) {
      fates[i] = { kind: 'missed', reason: `not started within the starting deadline of ${spec.startingDeadlineMs} ms` };
    } else if (nowMs > s + thresholdMs) {
      misfired.push(i);
    }
  });
  if (misfired.length === 0) return fates;
  const policy = misfirePolicyOf(spec);
  // Runs go to the latest misfired slots; with a truncated gap the latest are still to come.
  let keep = 0;
  if (!truncated && policy === MisfirePolicy.MISFIRE_POLICY_RUN_ONCE) keep = 1;
  if (!truncated && policy === MisfirePolicy.MISFIRE_POLICY_RUN_ALL) keep = spec.misfireMaxRuns || DEFAULT_MISFIRE_MAX_RUNS;
  const name = MisfirePolicy[policy];
  misfired.slice(0, Math.max(0, misfired.length - keep)).forEach((i) => {
    fates[i] = { kind: 'missed', reason: `misfired during downtime (${name})` };
  });
  return fates;
}

/**
 * An empty id list, shared: fire results are encoded inside apply and never change after, and a
 * herd's items each allocated three arrays, two of them always empty.
 */
const NONE: readonly string[] = Object.freeze([]);

function noRuns(): { created: readonly string[]; missed: readonly string[]; skipped: readonly string[] } {
  return { created: NONE, missed: NONE, skipped: NONE };
}

/**
 * `list` with `id` at the end; a new one-element list when there is none. Most items fire one
 * slot: a push onto an empty array reserves room for 16.
 */
function appended(list: string[] | undefined, id: string): string[] {
  if (!list) return [id];
  list.push(id);
  return list;
}

async function fireItem(txn: ApplyTxn, cmd: FireRunsCommand, item: FireItem, signals: CancelSignal[], skipSlotCheck: boolean): Promise<FireItemResult> {
  try {
    validateId(item.jobId, 'job_id');
  } catch (e) {
    return { ...noRuns(), error: asItemError(e), nextFireMs: 0 };
  }
  const loaded = txn.loadedJob(item.jobId);
  const rec = loaded === NOT_READ ? await txn.getJob(item.jobId) : loaded;
  if (!rec) return { ...noRuns(), error: itemError('JOB_NOT_FOUND', `job "${item.jobId}" does not exist`), nextFireMs: 0 };
  const job = rec.job;
  const spec = job.spec;
  if (job.state !== JobState.JOB_STATE_ACTIVE || !spec) {
    return { ...noRuns(), error: itemError('INVALID_STATE', `job "${item.jobId}" is ${JobState[job.state]}`, 'NOT_ACTIVE'), nextFireMs: 0 };
  }
  if (skipSlotCheck && job.nextFireUnixMs > item.slotMs) {
    // Negative control: fire the slot again as if it were new.
    const id = scheduledRunId(job.id, item.slotMs);
    const prior = await txn.getRun(parseRunId(id)!);
    txn.putRun(newRun(rec, { id, slotMs: item.slotMs, scheduledMs: item.slotMs, nowMs: cmd.nowMs, state: RunState.RUN_STATE_PENDING }));
    if (!prior || isTerminal(prior.run.state)) addActive(rec);
    txn.putJob(rec);
    return { ...noRuns(), created: [id], nextFireMs: job.nextFireUnixMs };
  }
  if (job.nextFireUnixMs === 0 || item.slotMs < job.nextFireUnixMs) {
    return { ...noRuns(), nextFireMs: job.nextFireUnixMs }; // already handled (I1)
  }
  const upTo = Math.max(item.slotMs, cmd.nowMs);
  const found = slotsInRange(spec, job.nextFireUnixMs, upTo + 1, job.createdUnixMs, MAX_SLOTS_PER_FIRE_ITEM + 1, txn.schedule);
  const truncated = found.length > MAX_SLOTS_PER_FIRE_ITEM;
  const slots = truncated ? found.slice(0, MAX_SLOTS_PER_FIRE_ITEM) : found;
  // Without jitter every slot is scheduled at itself (jitteredSlot): no second list.
  const scheduled = spec.jitterMs > 0 ? slots.map((_, i) => jitteredSlot(job.id, spec, found, i, job.createdUnixMs, txn.schedule)) : slots;
  const fates = slotFates(spec, slots, scheduled, cmd.nowMs, cmd.misfireThresholdMs || DEFAULT_MISFIRE_THRESHOLD_MS, truncated);
  let created: string[] | undefined;
  let missed: string[] | undefined;
  let skipped: string[] | undefined;
  let backlogFull = 0;
  const policy = overlapOf(spec);
  for (let i = 0; i < slots.length; i++) {
    const slot = slots[i]!;
    const id = scheduledRunId(job.id, slot);
    const { key } = txn.knownRunIdKey(id, scheduledParse(job.id, slot));
    if (slot <= job.lastSlotUnixMs) {
      // I1: a slot has at most one run, ever. The cursor is past the last handled slot unless
      // something went wrong, so this lookup is the safety net, not the common path.
      const stored = txn.loadedRunAt(key);
      if (stored === NOT_READ ? await txn.getRunAt(key) : stored) continue;
    } else {
      // Scheduled runs exist only for slots up to the job's last handled one (every path that
      // makes one moves lastSlotUnixMs to at least its slot in the same transaction, and never
      // back; deleting a job deletes its runs): no read needed, and none of a herd's.
      txn.knownAbsentRun(key);
    }
    const fate = fates[i]!;
    if (fate.kind === 'missed') {
      txn.putRun(newRun(rec, { id, slotMs: slot, scheduledMs: scheduled[i]!, nowMs: cmd.nowMs, state: RunState.RUN_STATE_MISSED, reason: fate.reason }));
      missed = appended(missed, id);
      continue;
    }
    let held = false;
    if (job.activeRuns > 0) {
      if (policy === OverlapPolicy.OVERLAP_POLICY_FORBID || (policy === OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE && rec.heldRunId !== '')) {
        const reason = `overlap policy ${OverlapPolicy[policy]}: ${job.activeRuns} run(s) of the job still active`;
        txn.putRun(newRun(rec, { id, slotMs: slot, scheduledMs: scheduled[i]!, nowMs: cmd.nowMs, state: RunState.RUN_STATE_SKIPPED, reason }));
        skipped = appended(skipped, id);
        continue;
      }
      if (policy === OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE) held = true;
      if (policy === OverlapPolicy.OVERLAP_POLICY_REPLACE) {
        signals.push(...(await cancelActiveRuns(txn, rec, cmd.nowMs, `replaced by run ${id} (overlap policy REPLACE)`)).signals);
      }
    }
    if (job.activeRuns >= (spec.maxPendingRuns || DEFAULT_MAX_PENDING_RUNS)) {
      // A bounded backlog (I6): with no worker (or too few) a job would pile up runs forever.
      const reason = `backlog full (${job.activeRuns} pending)`;
      txn.putRun(newRun(rec, { id, slotMs: slot, scheduledMs: scheduled[i]!, nowMs: cmd.nowMs, state: RunState.RUN_STATE_MISSED, reason }));
      missed = appended(missed, id);
      backlogFull++;
      continue;
    }
    txn.putRun(newRun(rec, { id, slotMs: slot, scheduledMs: scheduled[i]!, nowMs: cmd.nowMs, state: RunState.RUN_STATE_PENDING, held }));
    addActive(rec);
    if (held) {
      // Count first: with no explicit count, heldRunsOf infers one from heldRunId, so setting the id
      // first counted this run twice on a record read from the store but once on one whose count
      // apply had set earlier in the batch — replicas applying different batches diverged.
      addHeld(rec);
      rec.heldRunId = id;
    }
    created = appended(created, id);
  }
  const last = slots.length > 0 ? slots[slots.length - 1]! : undefined;
  if (last !== undefined) job.lastSlotUnixMs = last;
  // No slot found at all means the cursor was not a slot (cannot happen unless the schedule math
  // changed under a stored job): resynchronise from the cursor instead of looping on it.
  const next = truncated
    ? found[MAX_SLOTS_PER_FIRE_ITEM]
    : nextSlotAfter(spec, last ?? job.nextFireUnixMs, job.createdUnixMs, txn.schedule);
  job.nextFireUnixMs = next ?? 0;
  if (next === undefined) job.state = JobState.JOB_STATE_COMPLETED;
  job.updatedUnixMs = cmd.nowMs;
  txn.putJob(rec);
  const nextFireMs = job.nextFireUnixMs;
  if (nextFireMs === 0) return { created: created ?? NONE, missed: missed ?? NONE, skipped: skipped ?? NONE, nextFireMs, backlogFull };
  return { created: created ?? NONE, missed: missed ?? NONE, skipped: skipped ?? NONE, nextFireMs, backlogFull, dispatch: dispatchHintOf(spec) };
}

/** What parseRunId(scheduledRunId(jobId, slotMs)) gives. */
function scheduledParse(jobId: string, slotMs: number): ParsedRunId {
  return { jobId, slotMs, suffix: '', kind: 'scheduled' };
}

/** The scheduled runs a fire item will look at, for one getMany over the whole batch. */
async function prefetchSlots(txn: ApplyTxn, cmd: FireRunsCommand): Promise<void> {
  await txn.prefetchJobs(cmd.items.map((i) => i.jobId).filter(isValidId));
  const wanted: string[] = [];
  for (const item of cmd.items) {
    // Jobs that did not load (bad id, corrupt record) fail in fireItem on their own.
    const rec = txn.loadedJob(item.jobId);
    const job = rec === NOT_READ ? undefined : rec?.job;
    if (!job?.spec || job.state !== JobState.JOB_STATE_ACTIVE || job.nextFireUnixMs === 0 || item.slotMs < job.nextFireUnixMs) continue;
    // Every slot fireItem looks at is at or after the cursor: with the cursor past the last handled
    // slot (always, unless something went wrong) none has a run to look up, so no slot list.
    if (job.nextFireUnixMs > job.lastSlotUnixMs) continue;
    const upTo = Math.max(item.slotMs, cmd.nowMs);
    const slots = slotsInRange(job.spec, job.nextFireUnixMs, upTo + 1, job.createdUnixMs, MAX_SLOTS_PER_FIRE_ITEM, txn.schedule);
    // A slot after the last handled one has no run (see fireItem): nothing to look up.
    for (const s of slots) if (s <= job.lastSlotUnixMs) wanted.push(txn.knownRunIdKey(scheduledRunId(job.id, s), scheduledParse(job.id, s)).key);
  }
  await txn.prefetchRunKeys(wanted);
}

export async function applyFireRuns(txn: ApplyTxn, cmd: FireRunsCommand, skipSlotCheck = false): Promise<FireResult> {
  // A hint only: items are still handled one by one against the live transaction.
  await prefetchSlots(txn, cmd);
  const signals: CancelSignal[] = [];
  const items: FireItemResult[] = [];
  for (const item of cmd.items) items.push(await fireItem(txn, cmd, item, signals, skipSlotCheck));
  return { type: 'fire', items, signals };
}
