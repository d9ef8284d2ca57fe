// putJobs: a batch of creates in one log entry. Each item goes through applyPutJob against the
// same transaction, in item order, so it sees every earlier item exactly as a later putJob entry
// would see an earlier one: a repeated job id answers ALREADY_EXISTS, a repeated idempotency key
// answers the first item's job. Validation and errors are those of a single create.
import type { ApplyTxn } from '../store/apply-txn.js';
import { applyPutJob } from './apply-jobs.js';
import type { PutJobCommand, PutJobsCommand } from '../commands/commands.js';
import { createIdemKey } from '../store/key-layout.js';
import type { JobItemResult, JobsResult } from '../commands/results.js';
import type { SpecLimits } from '../commands/validation.js';
import { isValidId, validateIdempotencyKey } from '../commands/validation.js';

function validKey(key: string): boolean {
  if (key === '') return false;
  try {
    validateIdempotencyKey(key);
    return true;
  } catch {
    return false;
  }
}

/**
 * The idempotency records the single creates (putJob) of one apply batch will read: prefetched
 * with one getMany, instead of one get per create awaited in turn on the apply chain (concurrent
 * CreateJob calls arrive as many putJob entries in one batch).
 */
export function putJobIdemKeys(commands: readonly (object | undefined)[]): string[] {
  const keys: string[] = [];
  for (const cmd of commands) {
    if (cmd && 'type' in cmd && cmd.type === 'putJob' && validKey((cmd as PutJobCommand).idempotencyKey)) keys.push(createIdemKey((cmd as PutJobCommand).idempotencyKey));
  }
  return keys;
}

export async function applyPutJobs(txn: ApplyTxn, cmd: PutJobsCommand, limits: SpecLimits): Promise<JobsResult> {
  // Two getMany instead of two gets per item; reads are the same, only batched.
  await txn.prefetchJobs(cmd.items.map((i) => i.jobId).filter(isValidId));
  await txn.prefetchRaw(cmd.items.filter((i) => validKey(i.idempotencyKey)).map((i) => createIdemKey(i.idempotencyKey)));
  const items: JobItemResult[] = [];
  for (const item of cmd.items) {
    const r = await applyPutJob(txn, { type: 'putJob', nowMs: cmd.nowMs, jobId: item.jobId, spec: item.spec, idempotencyKey: item.idempotencyKey, principal: cmd.principal, requestId: cmd.requestId }, limits);
    // Only the fields that are set (as before), without the spreads' temporary objects.
    items.push(r.error ? (r.job ? { error: r.error, job: r.job, created: r.created } : { error: r.error, created: r.created }) : r.job ? { job: r.job, created: r.created } : { created: r.created });
  }
  return { type: 'jobs', items };
}
