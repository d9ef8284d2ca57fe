// `herald job get` / `herald run get` (and their JSON) show who made a job or acted on a run and
// the request id of that call (issue 29 audit, feature level 3); nothing when none was recorded.
import { describe, expect, it } from 'vitest';
import { Job, JobSpec } from '../../src/gen/herald/v1/job.js';
import { Run, RunState } from '../../src/gen/herald/v1/run.js';
import { jobFields, jobJson } from '../../src/cli/output/job-view.js';
import { runFields, runJson } from '../../src/cli/output/run-view.js';

const field = (fields: Array<[string, string]>, name: string) => fields.find(([k]) => k === name)?.[1];

describe('who and which request, in job get and run get', () => {
  it('job: "by <name> (request <id>)" on created and updated, each part only when recorded', () => {
    const job = Job.fromPartial({ id: 'j', spec: JobSpec.fromPartial({ taskType: 't' }), createdUnixMs: 1, updatedUnixMs: 2, createdBy: 'alice', createdRequestId: 'req-1', updatedBy: 'bob', updatedRequestId: 'req-2' });
    expect(field(jobFields(job), 'created')).toMatch(/ by alice \(request req-1\)$/);
    expect(field(jobFields(job), 'updated')).toMatch(/ by bob \(request req-2\)$/);
    expect(jobJson(job)).toMatchObject({ createdBy: 'alice', createdRequestId: 'req-1', updatedBy: 'bob', updatedRequestId: 'req-2' });
    const anon = Job.fromPartial({ ...job, createdBy: '', updatedBy: '', updatedRequestId: '' });
    expect(field(jobFields(anon), 'created')).toMatch(/ \(request req-1\)$/);
    expect(field(jobFields(anon), 'created')).not.toMatch(/ by /);
    expect(field(jobFields(anon), 'updated')).not.toMatch(/by|request/);
  });

  it('run: "requested by" only for a run a person acted on', () => {
    const run = Run.fromPartial({ id: 'j@1', jobId: 'j', state: RunState.RUN_STATE_CANCELLED, manual: true, requestedBy: 'carol', requestId: 'req-3' });
    expect(field(runFields(run), 'requested by')).toBe('carol (request req-3)');
    expect(runJson(run)).toMatchObject({ requestedBy: 'carol', requestId: 'req-3' });
    expect(field(runFields(Run.fromPartial({ ...run, requestedBy: '' })), 'requested by')).toBe('- (request req-3)');
    expect(field(runFields(Run.fromPartial({ ...run, requestedBy: '', requestId: '' })), 'requested by')).toBeUndefined();
  });
});
