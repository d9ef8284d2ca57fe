// What `herald apply` does with a set of job documents: a plan (create / update / unchanged /
// delete, with per-field changes) made from one read of the jobs, then its execution with
// optimistic concurrency: an update or delete names the version the plan read, a create fails if
// the id appeared meanwhile, so a concurrent change is refused and reported, never overwritten.
import { randomUUID } from 'node:crypto';
import type { HeraldClient } from '../../client/herald-client.js';
import { HeraldClientError } from '../../client/errors.js';
import type { Job, JobSpec } from '../../gen/herald/v1/job.js';
import { diffDocs, type FieldChange } from '../job-doc/doc-diff.js';
import type { JobDocCodec } from '../job-doc/job-doc-codec.js';
import { ApplyConflictError } from './apply-conflict-error.js';
import type { SourcedJob } from './read-job-files.js';

export type ApplyAction = 'create' | 'update' | 'unchanged' | 'delete';

export interface PlanItem {
  action: ApplyAction;
  id: string;
  /** The document it comes from (absent for deletes). */
  where?: string;
  /** The version the plan read (absent for creates). */
  version?: number;
  spec?: JobSpec;
  changes: FieldChange[];
}

export interface ItemOutcome {
  item: PlanItem;
  /** The job's version after the write. */
  newVersion?: number;
  error?: Error;
}

/** The calls apply makes; HeraldClient provides them. */
export type ApplyClient = Pick<HeraldClient, 'getJob' | 'iterateJobs' | 'createJob' | 'updateJob' | 'deleteJob'>;

function heraldCode(e: unknown): string | undefined {
  return e instanceof HeraldClientError ? (e.heraldCode as string | undefined) : undefined;
}

async function getIfExists(client: ApplyClient, id: string): Promise<Job | undefined> {
  try {
    return await client.getJob(id);
  } catch (e) {
    if (heraldCode(e) === 'JOB_NOT_FOUND') return undefined;
    throw e;
  }
}

/**
 * Reads the current jobs and compares. A document's `version` that is not the job's is a
 * conflict here, before anything is written. `prune` deletes the jobs with those labels that no
 * document names.
 */
export async function planApply(client: ApplyClient, codec: JobDocCodec, jobs: readonly SourcedJob[], prune?: Record<string, string>): Promise<PlanItem[]> {
  const plan: PlanItem[] = [];
  const conflicts: string[] = [];
  for (const doc of jobs) {
    const current = await getIfExists(client, doc.id);
    const desired = codec.specToDoc(doc.spec);
    if (current === undefined) {
      if (doc.version !== undefined) conflicts.push(`${doc.where}: job ${doc.id} does not exist, but the document says version ${doc.version} (remove the version to create it)`);
      plan.push({ action: 'create', id: doc.id, where: doc.where, spec: doc.spec, changes: diffDocs({}, desired) });
      continue;
    }
    if (doc.version !== undefined && doc.version !== current.version) {
      conflicts.push(`${doc.where}: job ${doc.id} is at version ${current.version}, not ${doc.version} as the document says (it changed since the file was written; get it again)`);
    }
    const changes = diffDocs(current.spec ? codec.specToDoc(current.spec) : {}, desired);
    plan.push({ action: changes.length === 0 ? 'unchanged' : 'update', id: doc.id, where: doc.where, version: current.version, spec: doc.spec, changes });
  }
  if (conflicts.length > 0) throw new ApplyConflictError(`${conflicts.length === 1 ? conflicts[0] : `${conflicts.length} jobs changed since the file was written`}; nothing was changed`, conflicts);
  if (prune !== undefined) {
    const named = new Set(jobs.map((j) => j.id));
    for await (const job of client.iterateJobs({ labels: prune })) {
      if (!named.has(job.id)) plan.push({ action: 'delete', id: job.id, version: job.version, changes: [] });
    }
  }
  return plan;
}

async function execute(client: ApplyClient, codec: JobDocCodec, item: PlanItem): Promise<number | undefined> {
  switch (item.action) {
    case 'unchanged':
      return item.version;
    case 'create':
      try {
        const { job } = await client.createJob(item.spec!, { id: item.id, idempotencyKey: randomUUID() });
        return job.version;
      } catch (e) {
        if (heraldCode(e) === 'ALREADY_EXISTS') throw new ApplyConflictError(`job ${item.id} was created by someone else while apply ran; it was left as it is (run apply again to see the difference)`);
        throw e;
      }
    case 'update':
      try {
        return (await client.updateJob(item.id, item.spec!, { expectedVersion: item.version! })).version;
      } catch (e) {
        if (heraldCode(e) === 'VERSION_MISMATCH') {
          // A retried call whose first attempt was applied (its answer lost) sees its own write.
          const now = await getIfExists(client, item.id);
          if (now?.spec !== undefined && now.version === item.version! + 1 && diffDocs(codec.specToDoc(now.spec), codec.specToDoc(item.spec!)).length === 0) return now.version;
          throw new ApplyConflictError(`job ${item.id} changed while apply ran (it is no longer at version ${item.version}); it was left as it is (run apply again to see the difference)`);
        }
        if (heraldCode(e) === 'JOB_NOT_FOUND') throw new ApplyConflictError(`job ${item.id} was deleted while apply ran; it was not recreated (run apply again)`);
        throw e;
      }
    case 'delete':
      try {
        await client.deleteJob(item.id, { expectedVersion: item.version! });
        return undefined;
      } catch (e) {
        if (heraldCode(e) === 'VERSION_MISMATCH') throw new ApplyConflictError(`job ${item.id} changed while apply ran (it is no longer at version ${item.version}); it was not deleted`);
        if (heraldCode(e) === 'JOB_NOT_FOUND') return undefined; // already gone: what prune wanted
        throw e;
      }
  }
}

/**
 * Writes the plan: creates and updates in file order, then deletes — but no delete once any
 * write failed, so a file applied only in part never prunes. Each failure is kept with its item.
 */
export async function executePlan(client: ApplyClient, codec: JobDocCodec, plan: readonly PlanItem[]): Promise<ItemOutcome[]> {
  const outcomes: ItemOutcome[] = [];
  let failed = false;
  for (const item of plan.filter((p) => p.action !== 'delete')) {
    try {
      const v = await execute(client, codec, item);
      outcomes.push(v === undefined ? { item } : { item, newVersion: v });
    } catch (e) {
      failed = true;
      outcomes.push({ item, error: e instanceof Error ? e : new Error(String(e)) });
    }
  }
  for (const item of plan.filter((p) => p.action === 'delete')) {
    if (failed) {
      outcomes.push({ item, error: new ApplyConflictError(`job ${item.id} was not deleted: an earlier write of this apply failed`) });
      continue;
    }
    try {
      await execute(client, codec, item);
      outcomes.push({ item });
    } catch (e) {
      failed = true;
      outcomes.push({ item, error: e instanceof Error ? e : new Error(String(e)) });
    }
  }
  return outcomes;
}
