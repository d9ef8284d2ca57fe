// Re-drive and upcoming fires against real `herald server` processes and a real worker (the
// Worker library over gRPC): a DEAD run re-driven with RetryRun runs again under a higher fencing
// token and succeeds, its first attempt kept; RetryRuns re-drives by task type in bounded calls;
// GetJob's upcoming fires are the ones the leader then fires; ValidateJob answers CreateJob's
// errors and creates nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from '../../src/client/worker/worker.js';
import { NonRetryableError } from '../../src/client/worker/handler-errors.js';
import { HeraldClientError } from '../../src/client/errors.js';
import { cron } from '../../src/client/job-spec-builders.js';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { AttemptOutcome, RunState } from '../../src/gen/herald/v1/run.js';
import { waitFor } from '../raft-runtime/helpers/cluster.js';
import { SchedulerCluster } from './helpers/process-cluster.js';

function oneOff(taskType: string, inMs: number, extra: Record<string, unknown> = {}): JobSpec {
  return JobSpec.fromPartial({ taskType, schedule: { kind: { $case: 'at', at: { atUnixMs: Date.now() + inMs } } }, retry: { maxAttempts: 1 }, ...extra });
}

describe('re-drive and upcoming fires (multi-process)', () => {
  let c: SchedulerCluster;
  let worker: Worker | undefined;
  /** Attempts the worker saw, per run: [attempt, fencing token]. */
  const seen = new Map<string, [number, number][]>();
  /** Runs whose handler fails (non-retryable) until taken off this set. */
  const failing = new Set<string>();

  beforeAll(async () => {
    c = await SchedulerCluster.start({ size: 3, leaseMs: 2_000, heartbeatMs: 200 });
    worker = new Worker({
      endpoints: c.endpoints,
      workerId: 'redrive-w',
      concurrency: 4,
      handlers: {
        flaky: (ctx) => {
          seen.set(ctx.run.id, [...(seen.get(ctx.run.id) ?? []), [ctx.attempt, ctx.fencingToken]]);
          if (failing.has(ctx.run.jobId)) throw new NonRetryableError('broken until fixed', { type: 'Broken' });
        },
      },
    });
    worker.start();
    await waitFor('worker connected', () => worker!.connected, 30_000);
  }, 90_000);
  afterAll(async () => {
    await worker?.shutdown({ graceMs: 200 }).catch(() => undefined);
    await c?.cleanup();
  }, 30_000);

  const stateOf = async (runId: string) => (await c.client.getRun(runId)).state;

  it('a DEAD run re-driven with RetryRun runs again under a higher fencing token and succeeds', async () => {
    failing.add('dies-once');
    await c.client.createJob(oneOff('flaky', 300), { id: 'dies-once' });
    const dead = await waitFor('the run is DEAD', async () => (await c.client.listRuns({ jobId: 'dies-once', state: 'dead' })).items[0], 20_000, 50);
    expect(dead.attempts).toHaveLength(1);
    failing.delete('dies-once');

    const pending = await c.client.retryRun(dead.id);
    expect(pending).toMatchObject({ id: dead.id, redriveCount: 1 });
    await waitFor('the re-driven run succeeded', async () => (await stateOf(dead.id)) === RunState.RUN_STATE_SUCCEEDED, 20_000, 50);
    const run = await c.client.getRun(dead.id);
    expect(run.attempts.map((a) => a.outcome)).toEqual([AttemptOutcome.ATTEMPT_OUTCOME_FAILED, AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED]);
    expect(run.attempts[1]!.fencingToken).toBeGreaterThan(run.attempts[0]!.fencingToken);
    expect(run.redriveCount).toBe(1);
    // The worker was handed both attempts, the second with the higher token.
    const attempts = seen.get(dead.id)!;
    expect(attempts.map(([n]) => n)).toEqual([1, 2]);
    expect(attempts[1]![1]).toBeGreaterThan(attempts[0]![1]);
    expect(attempts[1]![1]).toBe(run.attempts[1]!.fencingToken);

    // A run that is not DEAD, CANCELLED or FAILED: FAILED_PRECONDITION naming its state.
    const err = await c.client.retryRun(dead.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HeraldClientError);
    expect(err).toMatchObject({ code: 'FAILED_PRECONDITION', heraldCode: 'INVALID_STATE', message: expect.stringContaining('RUN_STATE_SUCCEEDED') });
  }, 60_000);

  it('RetryRuns re-drives the DEAD runs of a task type, bounded per call, with a continuation', async () => {
    const ids = ['bulk-1', 'bulk-2', 'bulk-3'];
    for (const id of ids) failing.add(id);
    for (const id of ids) await c.client.createJob(oneOff('flaky', 300), { id });
    await waitFor('three DEAD runs', async () => {
      const runs = await Promise.all(ids.map((id) => c.client.listRuns({ jobId: id, state: 'dead' })));
      return runs.every((p) => p.items.length === 1);
    }, 20_000, 50);
    for (const id of ids) failing.delete(id);

    const first = await c.client.retryRuns({ taskType: 'flaky', state: 'dead', maxRuns: 2 });
    expect(first.runIds).toHaveLength(2);
    expect(first.failures).toEqual([]);
    expect(first.more).toBe(true);
    const rest = await c.client.retryRuns({ taskType: 'flaky', state: 'dead', maxRuns: 2, pageToken: first.nextPageToken });
    expect(rest.runIds).toHaveLength(1);
    expect(rest.more).toBe(false);
    const all = [...first.runIds, ...rest.runIds].sort();
    expect(all.map((r) => r.split('@')[0])).toEqual(ids);
    await waitFor('all succeeded', async () => (await Promise.all(all.map(stateOf))).every((s) => s === RunState.RUN_STATE_SUCCEEDED), 20_000, 50);
    const none = await c.client.retryRuns({ taskType: 'flaky', state: 'dead' });
    expect(none).toEqual({ runIds: [], failures: [], more: false, nextPageToken: '' });
  }, 60_000);

  it("GetJob's upcoming fires are the ones the leader fires; ValidateJob answers CreateJob's errors and creates nothing", async () => {
    const spec = JobSpec.fromPartial({ taskType: 'flaky', schedule: { kind: { $case: 'every', every: { intervalMs: 1000 } } }, jitterMs: 800 });
    await c.client.createJob(spec, { id: 'ticker' });
    const { upcomingFires } = await c.client.getJobWithFires('ticker', 3);
    expect(upcomingFires).toHaveLength(3);
    // Runs of slots at or after the first one listed (the job's first slot may have fired already).
    const listed = async () =>
      (await c.client.listRuns({ jobId: 'ticker' })).items.filter((r) => r.slotUnixMs >= upcomingFires[0]!.slotUnixMs).sort((a, b) => a.slotUnixMs - b.slotUnixMs);
    await waitFor('three runs fired', async () => (await listed()).length >= 3, 20_000, 50);
    await c.client.pauseJob('ticker');
    const runs = (await listed()).slice(0, 3);
    expect(runs.map((r) => ({ slotUnixMs: r.slotUnixMs, scheduledUnixMs: r.scheduledUnixMs }))).toEqual(upcomingFires);
    expect((await c.client.getJobWithFires('ticker', 3)).upcomingFires).toEqual([]); // paused

    const before = (await c.client.listJobs()).items.length;
    const valid = await c.client.validateJob({ taskType: 't', schedule: cron('0 2 * * *', { tz: 'Europe/Berlin' }) }, { upcomingFires: 5 });
    expect(valid.upcomingFires).toHaveLength(5);
    expect(valid.spec?.dst?.foldAuto).toBe(true); // normalized as CreateJob stores it
    const bad = [
      JobSpec.fromPartial({ taskType: 't', schedule: { kind: { $case: 'cron', cron: { expression: '61 * * * *', timeZone: '' } } } }),
      JobSpec.fromPartial({ taskType: 't', schedule: { kind: { $case: 'cron', cron: { expression: '* * * * *', timeZone: 'Mars/Olympus' } } } }),
      JobSpec.fromPartial({ schedule: { kind: { $case: 'every', every: { intervalMs: 1000 } } } }),
    ];
    for (const s of bad) {
      const viaValidate = (await c.client.validateJob(s).then(() => undefined, (e: unknown) => e)) as HeraldClientError;
      const viaCreate = (await c.client.createJob(s).then(() => undefined, (e: unknown) => e)) as HeraldClientError;
      expect(viaValidate).toBeInstanceOf(HeraldClientError);
      expect(viaCreate).toBeInstanceOf(HeraldClientError);
      expect({ code: viaValidate.code, heraldCode: viaValidate.heraldCode, message: viaValidate.message }).toEqual({
        code: viaCreate.code,
        heraldCode: viaCreate.heraldCode,
        message: viaCreate.message,
      });
    }
    const taken = await c.client.validateJob(spec, { id: 'ticker' }).catch((e: unknown) => e);
    expect(taken).toMatchObject({ code: 'ALREADY_EXISTS' });
    expect((await c.client.listJobs()).items.length).toBe(before);
  }, 60_000);

  it('refuses bad re-drive and upcoming-fire requests with INVALID_ARGUMENT naming the field', async () => {
    const bad = async (call: () => Promise<unknown>) => (await call().then(() => undefined, (e: unknown) => e)) as HeraldClientError;
    const cases: [() => Promise<unknown>, string][] = [
      [() => c.client.retryRuns({ state: 'dead' }), 'job_id or task_type'],
      [() => c.client.retryRuns({ jobId: 'ticker', state: 'succeeded' }), 'state: RUN_STATE_SUCCEEDED'],
      [() => c.client.retryRuns({ jobId: 'ticker', maxRuns: 501 }), 'max_runs'],
      [() => c.client.retryRuns({ jobId: 'ticker', finishedFrom: 2_000, finishedTo: 1_000 }), 'finished_to_unix_ms'],
      [() => c.client.retryRuns({ jobId: 'ticker', pageToken: 'bm9wZQ' }), 'page_token'],
      [() => c.client.retryRun('not a run id'), 'run'],
      [() => c.client.getJobWithFires('ticker', 101), 'upcoming_fires'],
      [() => c.client.validateJob(JobSpec.fromPartial({ taskType: 't', schedule: { kind: { $case: 'every', every: { intervalMs: 1000 } } } }), { upcomingFires: -1 }), 'upcoming_fires'],
    ];
    for (const [call, field] of cases) {
      const e = await bad(call);
      expect(e, field).toBeInstanceOf(HeraldClientError);
      expect({ code: e.code, message: e.message }, field).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining(field) });
    }
  }, 30_000);
});
