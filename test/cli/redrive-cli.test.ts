// `herald run retry` and `herald job next`, run as users run them (the built CLI, a real
// one-node cluster): one run by id, a bulk re-drive by job and state, the errors' exit codes,
// and the next fires in UTC and the job's zone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { SchedulerCluster } from '../dispatch/helpers/process-cluster.js';
import { runCli } from './helpers/run-cli.js';

describe('herald run retry / job next (CLI)', () => {
  let c: SchedulerCluster;
  const cli = (...args: string[]) => runCli([...args, '--endpoints', c.endpoints.join(',')], { timeoutMs: 30_000 });

  beforeAll(async () => {
    c = await SchedulerCluster.start({ size: 1 });
  }, 60_000);
  afterAll(async () => {
    await c?.cleanup();
  }, 30_000);

  it('re-drives a cancelled run by id, then the cancelled runs of a job in bulk; refuses what cannot be re-driven', async () => {
    // No worker serves "nobody": runs stay PENDING until cancelled.
    await c.client.createJob(JobSpec.fromPartial({ taskType: 'nobody', schedule: { kind: { $case: 'every', every: { intervalMs: 3_600_000 } } } }), { id: 'cli-job' });
    const runs = [];
    for (let i = 0; i < 3; i++) runs.push(await c.client.triggerJob('cli-job', { ignoreOverlap: true }));
    for (const r of runs) await c.client.cancelRun(r.id, 'test');

    const one = await cli('run', 'retry', runs[0]!.id);
    expect(one.stderr).toBe('');
    expect(one.code).toBe(0);
    expect(one.stdout).toContain(`run ${runs[0]!.id} pending (re-driven 1 time(s)`);
    expect((await c.client.getRun(runs[0]!.id)).state).toBe(RunState.RUN_STATE_PENDING);

    const again = await cli('run', 'retry', runs[0]!.id);
    expect(again.code).toBe(4);
    expect(again.stderr).toContain('RUN_STATE_PENDING');

    const bulk = await cli('run', 'retry', '--job', 'cli-job', '--state', 'cancelled', '--since', '1h ago', '--json');
    expect(bulk.code).toBe(0);
    const out = JSON.parse(bulk.stdout) as { runIds: string[]; failures: unknown[]; more: boolean };
    expect(out.runIds.sort()).toEqual([runs[1]!.id, runs[2]!.id].sort());
    expect(out).toMatchObject({ failures: [], more: false });
    // Independent calls in parallel: a CLI process start is most of each call's time.
    const [got, none, both, badState, unknown] = await Promise.all([
      cli('run', 'get', runs[1]!.id),
      cli('run', 'retry'),
      cli('run', 'retry', runs[0]!.id, '--job', 'cli-job'),
      cli('run', 'retry', '--job', 'cli-job', '--state', 'succeeded'),
      cli('run', 'retry', 'cli-job@1'),
    ]);
    expect(got.stdout).toMatch(/re-driven:\s+1 time\(s\)/);
    expect([none.code, both.code, badState.code, unknown.code]).toEqual([2, 2, 2, 3]);
    expect(badState.stderr).toContain('--state');
  }, 60_000);

  it('job next prints the next fires in UTC and in the job zone', async () => {
    await c.client.createJob(
      JobSpec.fromPartial({ taskType: 'nobody', schedule: { kind: { $case: 'cron', cron: { expression: '0 2 * * *', timeZone: 'Europe/Berlin' } } } }),
      { id: 'nightly' },
    );
    const [r, j, zero, missing] = await Promise.all([
      cli('job', 'next', 'nightly', '-n', '3'),
      cli('job', 'next', 'nightly', '-n', '2', '--json'),
      cli('job', 'next', 'nightly', '-n', '0'),
      cli('job', 'next', 'missing-job'),
    ]);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^#\s+UTC\s+LOCAL \(EUROPE\/BERLIN\)$/);
    expect(lines).toHaveLength(4);
    // 02:00 Berlin is 01:00Z in winter (CET, GMT+1) and 00:00Z in summer.
    for (const l of lines.slice(1)) expect(l).toMatch(/^\d\s+\d{4}-\d\d-\d\d 0[01]:00:00Z\s+\d{4}-\d\d-\d\d 02:00:00 GMT\+[12]$/);
    const json = JSON.parse(j.stdout) as { timeZone: string; fires: { local: string }[] };
    expect(json.timeZone).toBe('Europe/Berlin');
    expect(json.fires).toHaveLength(2);
    expect([zero.code, missing.code]).toEqual([2, 3]);
  }, 60_000);
});
