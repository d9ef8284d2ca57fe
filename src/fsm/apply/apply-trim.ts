// History retention and idempotency-key expiry: keeps state bounded for jobs that run every
// second forever. The leader proposes trims for the jobs it fired; each trim reads the keys of
// that job's history (bounded by its retention) and the values of only the runs it removes (plus
// one), never a scan of all jobs: on a cluster firing 1,000 jobs a second, decoding every job's
// whole history on every trim cost more than the runs themselves (bench/README.md).
import type { ApplyTxn } from '../store/apply-txn.js';
import type { TrimHistoryCommand } from '../commands/commands.js';
import { decodeIdem } from './idempotency.js';
import { EXPIRY_PREFIX, idemKeyOfExpiry, padTime, SEP } from '../store/key-layout.js';
import { isTerminal } from '../store/records.js';
import type { TrimResult } from '../commands/results.js';
import { parseRunId } from '../commands/run-id.js';
import { isValidId } from '../commands/validation.js';

export const DEFAULT_RETENTION_RUNS = 100;
export const DEFAULT_RETENTION_AGE_MS = 7 * 24 * 60 * 60 * 1000;

export async function applyTrimHistory(txn: ApplyTxn, cmd: TrimHistoryCommand): Promise<TrimResult> {
  let runsTrimmed = 0;
  for (const jobId of new Set(cmd.jobIds)) {
    if (!isValidId(jobId)) continue;
    const rec = await txn.getJob(jobId);
    if (!rec) continue;
    const maxRuns = rec.job.spec?.retention?.maxRuns || DEFAULT_RETENTION_RUNS;
    const maxAge = rec.job.spec?.retention?.maxAgeMs || DEFAULT_RETENTION_AGE_MS;
    // Oldest slot first: the oldest finished runs beyond the newest `maxRuns` go, and so does each
    // finished run older than maxAge up to the first one kept (the walk stops there; a run kept
    // for age is reached once the runs before it have gone). Active runs are neither counted nor
    // touched. Values are read in chunks from the oldest, so a trim reads what it removes.
    const keys = await txn.runKeysOfJob(jobId);
    const excess = keys.length <= maxRuns ? 0 : keys.length - (await txn.activeRunIdsOf(jobId)).length - maxRuns;
    let finishedSeen = 0;
    let chunk = Math.max(0, excess) + 4;
    walk: for (let i = 0; i < keys.length; i += chunk, chunk = 64) {
      for (const r of await txn.runsAt(keys.slice(i, i + chunk))) {
        if (!isTerminal(r.run.state)) continue;
        const tooMany = finishedSeen++ < excess;
        const tooOld = r.run.finishedUnixMs < cmd.nowMs - maxAge;
        if (!tooMany && !tooOld) break walk;
        txn.deleteRun(parseRunId(r.run.id)!);
        runsTrimmed++;
      }
    }
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
