import type { CreateJobRequest } from '../../gen/herald/v1/job_service.js';

/**
 * A cheap upper estimate of a create item's encoded size (the exact size would mean encoding
 * twice): what a putJobs chunk and a create stream's bytes in the works are bounded by.
 */
export function createItemBytes(item: CreateJobRequest): number {
  const spec = item.spec!;
  let n = 256 + item.jobId.length + item.idempotencyKey.length + spec.taskType.length + spec.payload.length;
  const kind = spec.schedule?.kind;
  if (kind?.$case === 'cron') n += kind.cron.expression.length + kind.cron.timeZone.length;
  for (const [k, v] of Object.entries(spec.labels)) n += k.length + 4 * v.length + 8;
  for (const t of spec.retry?.nonRetryableErrorTypes ?? []) n += 4 * t.length + 4;
  return n;
}
