// A task type's default alert policy and pause_after_dead (TaskTypeConfig fields 6, 7): a job
// that names none of its own goes by them, read from the replicated config in the same apply as
// the event; a job's own policy replaces the default whole; a bad default is refused by apply.
import { describe, expect, it } from 'vitest';
import { JobState } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { TaskTypeConfig } from '../../src/gen/herald/v1/task_type_service.js';
import { finishFailure, type FsmCommand } from '../../src/fsm/index.js';
import { alertJobId } from '../../src/fsm/apply/apply-alerts.js';
import { everySpec, freshFsmsPerTest, T0, type SpecInput, type TestFsm } from './fsm-test-kit.js';

const { fresh } = freshFsmsPerTest();

const defaults = (p: Partial<TaskTypeConfig>): FsmCommand => ({ type: 'putTaskType', nowMs: T0, config: TaskTypeConfig.fromPartial({ taskType: 'demo', ...p }) });
const putJob = (jobId: string, p: SpecInput): FsmCommand => ({ type: 'putJob', nowMs: T0, jobId, spec: everySpec(3_600_000, { retry: { maxAttempts: 1 }, ...p }, T0 + 3_600_000), idempotencyKey: '' });

/** Triggers a manual run of `jobId` (at log index `triggerIndex`) and lets its only attempt fail: the run goes DEAD. */
function deadRun(triggerIndex: number, jobId: string, nowMs: number): FsmCommand[] {
  const runId = `${jobId}@${nowMs}~m${seq.get(jobId) ?? 0}`;
  seq.set(jobId, (seq.get(jobId) ?? 0) + 1);
  const token = triggerIndex + 1; // the claim's entry index is its fencing token
  return [
    { type: 'triggerJob', nowMs, jobId, idempotencyKey: '', ignoreOverlap: true },
    { type: 'claimRuns', nowMs: nowMs + 1, items: [{ runId, workerId: 'w1', leaseDeadlineMs: nowMs + 30_000 }] },
    { type: 'finishRuns', nowMs: nowMs + 2, items: [finishFailure(runId, token, { type: 'Boom', retryable: false })] },
  ];
}
const seq = new Map<string, number>();

async function alertsOf(t: TestFsm, taskType: string): Promise<string[]> {
  return (await t.fsm.listRuns({ jobId: alertJobId(taskType), pageSize: 100 })).items.map((r) => JSON.parse(Buffer.from(r.payload).toString('utf8')).job_id as string).sort();
}

async function dead(t: TestFsm, jobId: string, nowMs: number): Promise<void> {
  for (const c of deadRun(t.nextIndex(), jobId, nowMs)) await t.apply(c);
  expect((await t.fsm.listRuns({ jobId, state: RunState.RUN_STATE_DEAD, pageSize: 100 })).items.some((r) => r.slotUnixMs === nowMs)).toBe(true);
}

describe('task type default alert policy', () => {
  it('jobs without their own alerts and pause_after_dead use their task type’s; a job’s own replace them', async () => {
    seq.clear();
    const t = await fresh();
    await t.one(defaults({ alerts: { onFailure: '', onDead: 'ops', onMissed: '', onWatchdog: '' }, pauseAfterDead: 2 }), 'taskType');
    await t.one(putJob('plain', {}), 'job');
    await t.one(putJob('own', { alerts: { onDead: 'mine' }, pauseAfterDead: 3 }), 'job');
    await t.one(putJob('other', { taskType: 'elsewhere' }), 'job');

    await dead(t, 'plain', T0 + 1_000);
    await dead(t, 'own', T0 + 1_000);
    await dead(t, 'other', T0 + 1_000);
    expect(await alertsOf(t, 'ops')).toEqual(['plain']);
    expect(await alertsOf(t, 'mine')).toEqual(['own']);

    // The second DEAD run pauses the job going by the default; the job with its own 3 stays active.
    await dead(t, 'plain', T0 + 2_000);
    await dead(t, 'own', T0 + 2_000);
    const plain = (await t.fsm.getJob('plain'))!;
    expect(plain.state).toBe(JobState.JOB_STATE_PAUSED);
    expect(plain.pauseNote).toMatch(/^paused after 2 consecutive DEAD runs \(pause_after_dead: 2, task type demo's default; last: plain@/);
    expect((await t.fsm.getJob('own'))!.state).toBe(JobState.JOB_STATE_ACTIVE);
    expect(await alertsOf(t, 'ops')).toEqual(['plain', 'plain']);

    // Removing the config removes the defaults for the events after it.
    await t.one({ type: 'deleteTaskType', nowMs: T0 + 3_000, taskType: 'demo' }, 'taskType');
    await t.one({ type: 'resumeJob', nowMs: T0 + 3_000, jobId: 'plain' }, 'job');
    await dead(t, 'plain', T0 + 4_000);
    expect(await alertsOf(t, 'ops')).toEqual(['plain', 'plain']);
    expect((await t.fsm.getJob('plain'))!.state).toBe(JobState.JOB_STATE_ACTIVE);
  });

  it('is applied the same whichever way entries are grouped (a config set in the same call counts)', async () => {
    seq.clear();
    const one = await fresh();
    const cmds: FsmCommand[] = [defaults({ alerts: { onFailure: '', onDead: 'ops', onMissed: '', onWatchdog: '' }, pauseAfterDead: 1 }), putJob('plain', {}), ...deadRun(3, 'plain', T0 + 1_000)];
    for (const c of cmds) await one.apply(c);
    const all = await fresh();
    await all.apply(...cmds);
    expect((await all.fsm.getJob('plain'))!.state).toBe(JobState.JOB_STATE_PAUSED);
    expect(await alertsOf(all, 'ops')).toEqual(['plain']);
    expect(await one.fsm.stateHash()).toBe(await all.fsm.stateHash());
  });

  it('refuses a bad default naming the field', async () => {
    const t = await fresh();
    const badType = await t.one(defaults({ alerts: { onFailure: '', onDead: 'no spaces allowed', onMissed: '', onWatchdog: '' } }), 'taskType');
    expect(badType.error).toMatchObject({ reason: 'config.alerts.on_dead' });
    const badPause = await t.one(defaults({ pauseAfterDead: 1001 }), 'taskType');
    expect(badPause.error).toMatchObject({ code: 'INVALID_ARGUMENT', reason: 'config.pause_after_dead' });
    expect(badPause.error!.message).toMatch(/between 0 \(never\) and 1000 \(got 1001\)/);
    expect(await t.fsm.getTaskType('demo')).toBeUndefined();
  });
});
