// Execution timeouts enforced by the leader (issue 30, item 3), against real `herald server`
// processes: a handler that ignores its AbortSignal (the Worker library, in this process) and a
// worker that ignores the timeout altogether and reports late (a raw protocol worker process)
// are both ended by the leader through the log — attempt TIMED_OUT, the retry policy decides,
// the worker gets a RunCancel "execution timeout" — and the late result is refused as stale.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from '../../src/client/worker/worker.js';
import type { ClientLogger } from '../../src/client/logger.js';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { AttemptOutcome, RunState } from '../../src/gen/herald/v1/run.js';
import { waitFor } from '../raft-runtime/helpers/cluster.js';
import { SchedulerCluster } from './helpers/process-cluster.js';
import { EXECUTION_TIMEOUT_GRACE_MS } from '../../src/server/leader/leases/lease-table.js';

const TIMEOUT_MS = 800;

function spec(taskType: string, maxAttempts: number, payload = ''): JobSpec {
  return JobSpec.fromPartial({
    taskType,
    schedule: { kind: { $case: 'at', at: { atUnixMs: Date.now() + 200 } } },
    executionTimeoutMs: TIMEOUT_MS,
    leaseDurationMs: 2_000,
    retry: { maxAttempts, initialBackoffMs: 100, maxBackoffMs: 100 },
    payload: Buffer.from(payload),
  });
}

describe('execution timeouts enforced by the leader (multi-process)', () => {
  let c: SchedulerCluster;
  let worker: Worker | undefined;
  beforeAll(async () => {
    c = await SchedulerCluster.start({ size: 3, leaseMs: 2_000, heartbeatMs: 200 });
  }, 90_000);
  afterAll(async () => {
    await worker?.shutdown({ graceMs: 200 }).catch(() => undefined);
    await c?.cleanup();
  }, 30_000);

  it('a Worker-library handler that ignores its AbortSignal is timed out: TIMED_OUT attempt, RunCancel, a retry', async () => {
    const cancels: { runId: string; reason: string }[] = [];
    const starts: { runId: string; attempt: number; at: number }[] = [];
    const logger: ClientLogger = {
      debug: () => undefined,
      warn: () => undefined,
      error: () => undefined,
      info: (obj, msg) => {
        if (msg === 'run cancelled') cancels.push(obj as { runId: string; reason: string });
      },
    };
    worker = new Worker({
      endpoints: c.endpoints,
      workerId: 'stubborn-lib',
      concurrency: 2,
      logger,
      handlers: {
        // Heartbeats go on (the library sends them) while the handler never looks at its signal.
        stubborn: (ctx) => {
          starts.push({ runId: ctx.run.id, attempt: ctx.attempt, at: Date.now() });
          return new Promise<void>((r) => setTimeout(r, 8_000).unref());
        },
      },
    });
    worker.start();
    await waitFor('worker connected', () => worker!.connected, 20_000);
    await c.client.createJob(spec('stubborn', 2), { id: 'stubborn' });

    const first = await waitFor('first attempt started', () => starts.find((s) => s.attempt === 1), 20_000);
    const second = await waitFor('retried after the leader timed the first attempt out', () => starts.find((s) => s.attempt === 2), 20_000);
    expect(second.runId).toBe(first.runId);
    // Not before the timeout and its grace (the clocks differ by little), and well before the handler would have returned.
    expect(second.at - first.at).toBeGreaterThanOrEqual(TIMEOUT_MS + EXECUTION_TIMEOUT_GRACE_MS - 200);
    expect(second.at - first.at).toBeLessThan(8_000);
    expect(cancels).toContainEqual(expect.objectContaining({ runId: first.runId, reason: 'execution timeout' }));

    const run = await c.client.getRun(first.runId);
    expect(run.attempts[0]).toMatchObject({ number: 1, outcome: AttemptOutcome.ATTEMPT_OUTCOME_TIMED_OUT });
    expect(run.attempts[0]!.error).toMatchObject({ type: 'ExecutionTimeout', retryable: true });
    // The second attempt ignores its signal too: the retry policy (2 attempts) ends the run DEAD.
    const dead = await waitFor('run dead after two timed-out attempts', async () => {
      const r = await c.client.getRun(first.runId);
      return r.state === RunState.RUN_STATE_DEAD ? r : undefined;
    }, 20_000);
    expect(dead.attempts.map((a) => a.outcome)).toEqual([AttemptOutcome.ATTEMPT_OUTCOME_TIMED_OUT, AttemptOutcome.ATTEMPT_OUTCOME_TIMED_OUT]);
    expect(dead.reason).toBe('attempt 2 of 2 failed');
  }, 60_000);

  it('a protocol worker that ignores the timeout and reports late gets a RunCancel, and its late result is refused as stale', async () => {
    const w = c.startWorker('late-raw', { types: ['late'], reportAfterLoss: true, capacity: 1 });
    await c.waitWorkersConnected([w]);
    await c.client.createJob(spec('late', 1, JSON.stringify({ sleepMs: 5_000 })), { id: 'late' });
    const assigned = await waitFor('assigned', () => w.of('assigned').find((e) => e.jobId === 'late'), 20_000);
    const cancel = await waitFor('cancelled by the leader', () => w.of('cancel').find((e) => e.runId === assigned.runId), 20_000);
    expect(cancel.reason).toBe('execution timeout');
    expect(cancel.token).toBe(assigned.token);
    expect(cancel.at - assigned.at).toBeGreaterThanOrEqual(TIMEOUT_MS);
    const ack = await waitFor('late result acknowledged', () => w.of('ack').find((e) => e.runId === assigned.runId), 20_000);
    expect(ack.accepted).toBe(false);
    expect(ack.reason).toMatch(/no longer running under token/);
    const run = await c.client.getRun(assigned.runId);
    expect(run.state).toBe(RunState.RUN_STATE_DEAD);
    expect(run.attempts.map((a) => a.outcome)).toEqual([AttemptOutcome.ATTEMPT_OUTCOME_TIMED_OUT]);
  }, 60_000);
});
