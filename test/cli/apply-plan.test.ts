// apply's plan and its optimistic writes, in process against a fake JobService: a change between
// the plan's read and the write is refused and named, a lost answer to an applied update is not
// mistaken for a conflict, and nothing is pruned after a failed write.
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { clientError } from '../../src/client/errors.js';
import type { Job, JobSpec } from '../../src/gen/herald/v1/job.js';
import { loadJobSpecDescriptor } from '../../src/cli/job-doc/job-spec-descriptor.js';
import { JobDocCodec } from '../../src/cli/job-doc/job-doc-codec.js';
import { executePlan, planApply, type ApplyClient } from '../../src/cli/apply/apply-plan.js';
import { ApplyConflictError } from '../../src/cli/apply/apply-conflict-error.js';
import type { SourcedJob } from '../../src/cli/apply/read-job-files.js';

const codec = new JobDocCodec(loadJobSpecDescriptor());

function spec(interval: string, labels: Record<string, string> = { team: 'f' }): JobSpec {
  return codec.docToSpec({ taskType: 't', schedule: { every: { interval } }, labels });
}

/** An in-memory JobService with the server's version checks; `beforeWrite` runs before each write. */
class FakeJobs {
  jobs = new Map<string, Job>();
  beforeWrite: () => void = () => undefined;
  loseNextUpdateAnswer = false;

  put(id: string, s: JobSpec, version = 1): void {
    this.jobs.set(id, { id, spec: s, version } as Job);
  }

  client(): ApplyClient {
    const err = (code: string, grpcCode: status) => clientError({ grpcCode, message: code, heraldCode: code });
    const self = this;
    return {
      getJob: async (id: string) => {
        const j = this.jobs.get(id);
        if (!j) throw err('JOB_NOT_FOUND', status.NOT_FOUND);
        return j;
      },
      iterateJobs: async function* (filter: { labels?: Record<string, string> } = {}) {
        for (const j of self.jobs.values()) if (Object.entries(filter.labels ?? {}).every(([k, v]) => j.spec!.labels[k] === v)) yield j;
      },
      createJob: async (s: JobSpec, opts: { id?: string } = {}) => {
        this.beforeWrite();
        if (this.jobs.has(opts.id!)) throw err('ALREADY_EXISTS', status.ALREADY_EXISTS);
        this.put(opts.id!, s);
        return { job: this.jobs.get(opts.id!)!, created: true };
      },
      updateJob: async (id: string, s: JobSpec, opts: { expectedVersion?: number } = {}) => {
        this.beforeWrite();
        const j = this.jobs.get(id);
        if (!j) throw err('JOB_NOT_FOUND', status.NOT_FOUND);
        if (j.version !== opts.expectedVersion) throw err('VERSION_MISMATCH', status.FAILED_PRECONDITION);
        this.put(id, s, j.version + 1);
        if (this.loseNextUpdateAnswer) {
          this.loseNextUpdateAnswer = false;
          // What the SDK's retry of an applied update meets.
          throw err('VERSION_MISMATCH', status.FAILED_PRECONDITION);
        }
        return this.jobs.get(id)!;
      },
      deleteJob: async (id: string, opts: { expectedVersion?: number } = {}) => {
        this.beforeWrite();
        const j = this.jobs.get(id);
        if (!j) throw err('JOB_NOT_FOUND', status.NOT_FOUND);
        if (j.version !== opts.expectedVersion) throw err('VERSION_MISMATCH', status.FAILED_PRECONDITION);
        this.jobs.delete(id);
        return { cancelledRuns: 0 };
      },
    } as unknown as ApplyClient;
  }
}

const doc = (id: string, s: JobSpec, version?: number): SourcedJob => ({ id, spec: s, version, where: `f.yaml doc (id ${id})` });

describe('apply plan and writes', () => {
  it('a job changed between the plan and the write is left alone and named; nothing is pruned after it', async () => {
    const fake = new FakeJobs();
    fake.put('a', spec('5m'));
    fake.put('old', spec('5m'));
    const plan = await planApply(fake.client(), codec, [doc('a', spec('10m')), doc('b', spec('1m'))], { team: 'f' });
    expect(plan.map((p) => [p.id, p.action])).toEqual([['a', 'update'], ['b', 'create'], ['old', 'delete']]);
    fake.beforeWrite = () => {
      fake.beforeWrite = () => undefined;
      fake.put('a', spec('7m'), 2); // someone else's update lands first
    };
    const outcomes = await executePlan(fake.client(), codec, plan);
    expect(outcomes[0]!.error).toBeInstanceOf(ApplyConflictError);
    expect(outcomes[0]!.error!.message).toMatch(/^job a changed while apply ran \(it is no longer at version 1\)/);
    expect(outcomes[1]).toMatchObject({ newVersion: 1 });
    expect(outcomes[2]!.error!.message).toMatch(/job old was not deleted: an earlier write of this apply failed/);
    expect(codec.specToDoc(fake.jobs.get('a')!.spec!)).toMatchObject({ schedule: { every: { interval: '7m' } } });
    expect(fake.jobs.has('old')).toBe(true);
  });

  it('a create whose id appeared meanwhile is a conflict, not an overwrite', async () => {
    const fake = new FakeJobs();
    const plan = await planApply(fake.client(), codec, [doc('n', spec('5m'))]);
    fake.put('n', spec('1h'));
    const [o] = await executePlan(fake.client(), codec, plan);
    expect(o!.error!.message).toMatch(/^job n was created by someone else while apply ran/);
    expect(codec.specToDoc(fake.jobs.get('n')!.spec!)).toMatchObject({ schedule: { every: { interval: '1h' } } });
  });

  it("an applied update whose answer was lost counts as applied (the job holds the file's spec at the next version)", async () => {
    const fake = new FakeJobs();
    fake.put('a', spec('5m'));
    const plan = await planApply(fake.client(), codec, [doc('a', spec('10m'))]);
    fake.loseNextUpdateAnswer = true;
    const [o] = await executePlan(fake.client(), codec, plan);
    expect(o).toEqual({ item: plan[0], newVersion: 2 });
  });

  it("a document's version that is not the job's stops the plan before any write", async () => {
    const fake = new FakeJobs();
    fake.put('a', spec('5m'), 3);
    await expect(planApply(fake.client(), codec, [doc('a', spec('10m'), 2), doc('z', spec('1m'), 1)])).rejects.toMatchObject({
      problems: [
        'f.yaml doc (id a): job a is at version 3, not 2 as the document says (it changed since the file was written; get it again)',
        'f.yaml doc (id z): job z does not exist, but the document says version 1 (remove the version to create it)',
      ],
    });
  });
});
