// History retention and idempotency-key expiry: keeps state bounded for jobs that run every
// second forever, whatever their runs' outcomes. The leader proposes trims for the jobs the trim
// index says are due (by count or by age; the transaction keeps that index as runs end, so any
// leader continues where the last one stopped); each trim reads the keys of that job's history
// (bounded by its retention) and the values of only the runs it removes (plus one), never a scan
// of all jobs: on a cluster firing 1,000 jobs a second, decoding every job's
// whole history on every trim cost more than the runs themselves (bench/README.md).
import type { ApplyTxn } from '../store/apply-txn.js';
import type { TrimHistoryCommand } from '../commands/commands.js';
import { decodeIdem } from './idempotency.js';
import { EXPIRY_PREFIX, idemKeyOfExpiry, padTime, SEP } from '../store/key-layout.js';
import { isTerminal, type JobRecord } from '../store/records.js';
import { maxAgeOf, maxRunsOf, TRIM_DUE_NOW } from '../store/retention.js';
import type { TrimResult } from '../commands/results.js';
import { parseRunId, type ParsedRunId } from '../commands/run-id.js';
import { isValidId } from '../commands/validation.js';
import { FEATURE_LEVEL } from '../commands/feature-levels.js';

export { DEFAULT_RETENTION_AGE_MS, DEFAULT_RETENTION_RUNS } from '../store/retention.js';

/**
 * Most runs one trim command deletes: a job far over its retention (a store from before the trim
 * index, a retention lowered by an update) is trimmed over several commands, each a bounded apply.
 */
export const MAX_RUNS_TRIMMED_PER_COMMAND = 2_000;

export async function applyTrimHistory(txn: ApplyTxn, cmd: TrimHistoryCommand): Promise<TrimResult> {
  let runsTrimmed = 0;
  for (const jobId of new Set(cmd.jobIds)) {
    if (!isValidId(jobId)) continue;
    const rec = await txn.getJob(jobId);
    if (!rec) continue;
    runsTrimmed += await trimJob(txn, rec, cmd.nowMs, MAX_RUNS_TRIMMED_PER_COMMAND - runsTrimmed);
  }
  let keysTrimmed = 0;
  if (cmd.maxIdempotencyKeys > 0) {
    const expired = await txn.rawKeys(EXPIRY_PREFIX, `${EXPIRY_PREFIX}${padTime(cmd.nowMs + 1)}${SEP}`, cmd.maxIdempotencyKeys);
    for (const k of expired) {
      txn.delRaw(k);
      const recordKey = idemKeyOfExpiry(k);
      const v = await txn.getRaw(recordKey);
      // The key may have been taken again after it expired: only its own expiry removes it.
      if (v !== undefined && decodeIdem(v).expiresMs <= cmd.nowMs) {
        txn.delRaw(recordKey);
        keysTrimmed++;
      }
    }
  }
  return { type: 'trim', runsTrimmed, idempotencyKeysTrimmed: keysTrimmed };
}

/**
 * Trims one job's history and sets when it is next due (its trim index entry): oldest slot first,
 * the oldest terminal runs beyond the newest `maxRuns` go, and so does each terminal run older
 * than maxAge up to the first one kept (the walk stops there; a run kept for age is reached once
 * the runs before it have gone, and that run's age is when the job is due next). Active runs are
 * neither counted nor touched. Values are read in chunks from the oldest, so a trim reads what it
 * removes. Deletes at most `budget` runs; a job it could not finish stays due at once. Every
 * deletion of runs by retention (the trim command, the hard run bound) is this function, so the
 * job's trim horizon follows each one (raiseTrimHorizon).
 */
export async function trimJob(txn: ApplyTxn, rec: JobRecord, nowMs: number, budget: number): Promise<number> {
  const jobId = rec.job.id;
  const maxRuns = maxRunsOf(rec.job.spec);
  const maxAge = maxAgeOf(rec.job.spec);
  const keys = await txn.runKeysOfJob(jobId);
  const terminal = keys.length - (await txn.activeRunIdsOf(jobId)).length;
  txn.recountTerminal(jobId, terminal);
  const excess = Math.max(0, terminal - maxRuns);
  let trimmed = 0;
  let finishedSeen = 0;
  let nextDue = 0;
  let horizon = 0;
  // The first chunk is what the trim can delete (a job far past its retention is trimmed a
  // budget at a time: reading all its excess would make each of those applies read its history).
  let chunk = Math.min(excess, budget) + 4;
  walk: for (let i = 0; i < keys.length; i += chunk, chunk = 64) {
    for (const r of await txn.runsAt(keys.slice(i, i + chunk))) {
      if (!isTerminal(r.run.state)) continue;
      const tooMany = finishedSeen++ < excess;
      const tooOld = r.run.finishedUnixMs < nowMs - maxAge;
      if (!tooMany && !tooOld) {
        nextDue = Math.max(TRIM_DUE_NOW, r.run.finishedUnixMs + maxAge + 1);
        break walk;
      }
      // Checked after the keep test: a trim whose budget ends exactly at the first run kept is
      // done, not due again at once.
      if (trimmed >= budget) {
        nextDue = TRIM_DUE_NOW;
        break walk;
      }
      const p = parseRunId(r.run.id)!;
      txn.deleteRun(p);
      horizon = Math.max(horizon, horizonSlotOf(p));
      trimmed++;
    }
  }
  await raiseTrimHorizon(txn, rec, horizon);
  rec.trimDueMs = nextDue;
  txn.putJob(rec);
  return trimmed;
}

/**
 * The slot a deleted run takes the horizon to: its slot for a scheduled or backfill run, whose id
 * a later fire or backfill of the slot would compute again; 0 for a manual run, whose id is unique
 * by its sequence and never made again, so losing its record loses nothing a backfill decides on
 * (and the horizon stays a slot of the schedule, which the backfill refusal names).
 */
function horizonSlotOf(p: ParsedRunId): number {
  return p.kind === 'manual' ? 0 : p.slotMs;
}

/**
 * After retention deleted runs of `rec` up to slot `slotMs` (0: none that count): from feature
 * level 4 the job keeps the highest such slot (JobRecord.trimmedThroughSlotMs), so a backfill can
 * refuse the slots whose records are gone instead of running them again. Below level 4 nothing
 * changes: replicas of an older build, which do not know the rule, may apply the same entries.
 * The caller writes the record.
 */
export async function raiseTrimHorizon(txn: ApplyTxn, rec: JobRecord, slotMs: number): Promise<void> {
  if (slotMs <= (rec.trimmedThroughSlotMs ?? 0)) return;
  if ((await txn.featureLevel()) < FEATURE_LEVEL.TRIM_HORIZON) return;
  rec.trimmedThroughSlotMs = slotMs;
}
