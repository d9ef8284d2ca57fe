// History retention and idempotency-key expiry: keeps state bounded for jobs that run every
// second forever. The leader proposes trims for the jobs it fired; each trim costs what that
// job's history holds (bounded by its retention), never a scan of all jobs.
import type { ApplyTxn } from './apply-txn.js';
import type { TrimHistoryCommand } from './commands.js';
import { decodeIdem } from './idempotency.js';
import { EXPIRY_PREFIX, idemKeyOfExpiry, padTime, SEP } from './key-layout.js';
import { isTerminal } from './records.js';
import type { TrimResult } from './results.js';
import { parseRunId } from './run-id.js';
import { isValidId } from './validation.js';

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
    // Oldest slot first; the newest `maxRuns` finished runs survive unless older than maxAge.
    const finished = (await txn.runsOfJob(jobId)).filter((r) => isTerminal(r.run.state));
    finished.forEach((r, i) => {
      const tooMany = i < finished.length - maxRuns;
      const tooOld = r.run.finishedUnixMs < cmd.nowMs - maxAge;
      if (tooMany || tooOld) {
        txn.deleteRun(parseRunId(r.run.id)!);
        runsTrimmed++;
      }
    });
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
