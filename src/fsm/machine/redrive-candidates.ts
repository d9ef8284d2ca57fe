// The runs a bulk re-drive (RetryRuns) picks: a range read of one state's s\0 index (of one job
// when given), oldest slot first per job, filtered by task type and end time. Bounded twice: at
// most `limit` runs, and at most REDRIVE_SCAN_BUDGET index keys examined per call, so a filter
// that matches little in a large history still answers promptly, with a token to continue.
import { RunState, type Run } from '../../gen/herald/v1/run.js';
import type { Db } from '../store/apply-txn.js';
import { jobStatePrefix, prefixEnd, runIdOfTail, runKeyOfStateKey, statePrefix } from '../store/key-layout.js';
import { decodeRunRecord } from '../store/records.js';
import { runEndedAtMs } from '../store/ended-runs-tally.js';
import { decodeToken, encodeToken } from './page-token.js';
import { scanKeys } from '../store/key-scan.js';

/** Index keys one call examines at most. */
export const REDRIVE_SCAN_BUDGET = 10_000;
const READ_CHUNK = 256;

export interface RedriveQuery {
  readonly state: RunState;
  readonly jobId?: string;
  readonly taskType?: string;
  /** Ended at or after this instant (0: any). */
  readonly fromMs: number;
  /** Ended before this instant (0: any). */
  readonly toMs: number;
  readonly limit: number;
  readonly pageToken?: string;
}

export interface RedriveCandidates {
  readonly runIds: string[];
  /** Whether the range may hold more matches past nextPageToken. */
  readonly more: boolean;
  readonly nextPageToken: string;
}


function matches(run: Run, q: RedriveQuery): boolean {
  if (run.state !== q.state) return false;
  if (q.taskType && run.taskType !== q.taskType) return false;
  const ended = runEndedAtMs(run);
  return (q.fromMs <= 0 || ended >= q.fromMs) && (q.toMs <= 0 || ended < q.toMs);
}

export async function redriveCandidates(db: Db, q: RedriveQuery): Promise<RedriveCandidates> {
  const prefix = q.jobId ? jobStatePrefix(q.state, q.jobId) : statePrefix(q.state);
  const after = q.pageToken ? decodeToken(q.pageToken, prefix) : undefined;
  const keys = await scanKeys(db, { ...(after !== undefined ? { gt: after } : { gte: prefix }), lt: prefixEnd(prefix), limit: REDRIVE_SCAN_BUDGET + 1 }).all();
  const budgetHit = keys.length > REDRIVE_SCAN_BUDGET;
  const scan = budgetHit ? keys.slice(0, REDRIVE_SCAN_BUDGET) : keys;
  const filtered = Boolean(q.taskType) || q.fromMs > 0 || q.toMs > 0;
  const runIds: string[] = [];
  for (let i = 0; i < scan.length; i += READ_CHUNK) {
    const chunk = scan.slice(i, i + READ_CHUNK);
    const values = filtered ? await db.getMany(chunk.map(runKeyOfStateKey)) : undefined;
    for (let j = 0; j < chunk.length; j++) {
      if (values) {
        const v = values[j];
        if (v === undefined || !matches(decodeRunRecord(v).run, q)) continue;
      }
      runIds.push(runIdOfTail(chunk[j]!.slice(5)));
      if (runIds.length === q.limit) {
        const last = i + j === scan.length - 1;
        const more = !last || budgetHit;
        return { runIds, more, nextPageToken: more ? encodeToken(chunk[j]!) : '' };
      }
    }
  }
  return budgetHit ? { runIds, more: true, nextPageToken: encodeToken(scan[scan.length - 1]!) } : { runIds, more: false, nextPageToken: '' };
}
