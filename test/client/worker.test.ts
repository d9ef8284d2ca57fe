// The Worker library against a fake server: the protocol, executing runs, runs held for their start delay.
import { afterEach, describe, expect, it } from 'vitest';
import { HandlerError, NonRetryableError, RunAbortedError } from '../../src/client/worker/handler-errors.js';
import type { RunContext } from '../../src/client/worker/run-context.js';
import { Worker } from '../../src/client/worker/worker.js';
import { waitFor } from './fakes/grpc-test-server.js';
import { aborted, gate, server, stopAll, worker } from './fakes/worker-test-kit.js';

afterEach(stopAll);

describe('Worker: batched protocol', () => {
  it('takes batched assignments and acks, and sends the results and credits of one turn as one WorkerBatch', async () => {
    const s = await server({ autoAck: false });
    const w = worker({ endpoints: [s.address], concurrency: 10, handlers: { work: async () => 'done' } });
    w.start();
    const conn = await s.waitForConn(1);
    expect(conn.hello!.batches).toBe(true);
    conn.assignMany(Array.from({ length: 10 }, (_, i) => ({ runId: `r${i}` })));
    const results = await s.waitForResults(10);
    expect(new Set(results.map((r) => r.runId)).size).toBe(10);
    // Ten handlers that finish in the same turn: far fewer messages than results.
    expect(conn.batches.length).toBeGreaterThan(0);
    expect(conn.batches.length).toBeLessThanOrEqual(3);
    expect(conn.received.filter((m) => m.message?.$case === 'credits').reduce((n, m) => n + (m.message?.$case === 'credits' ? m.message.credits.credits : 0), 0)).toBe(10);
    // Results stay held (re-sent on reconnect) until acked; one ResultAcks settles them all.
    await new Promise((r) => setTimeout(r, 50));
    expect(w.heldRuns).toHaveLength(10);
    conn.ackMany(results);
    await waitFor(() => w.heldRuns.length === 0, 'acks settle the held runs');
  });

  it('sends one message per result and credit to a server that does not take batches', async () => {
    const s = await server({ batches: false });
    const w = worker({ endpoints: [s.address], concurrency: 5, handlers: { work: async () => 'done' } });
    w.start();
    const conn = await s.waitForConn(1);
    for (let i = 0; i < 5; i++) conn.assign({ runId: `r${i}` });
    await s.waitForResults(5);
    expect(conn.batches).toHaveLength(0);
    expect(conn.received.filter((m) => m.message?.$case === 'result')).toHaveLength(5);
  });
});

describe('Worker: executing runs', () => {
  it('says hello, runs an assignment and reports success with its fencing token and output', async () => {
    const s = await server();
    let seen: RunContext | undefined;
    const w = worker({
      endpoints: [s.address],
      concurrency: 2,
      version: '1.2.3',
      handlers: {
        work: (ctx) => {
          seen = ctx;
          return { echoed: ctx.json<{ n: number }>().n };
        },
      },
    });
    w.start();
    const conn = await s.waitForConn(1);
    expect(conn.hello).toEqual({ workerId: 'w-test', taskTypes: ['work'], capacity: 2, heldRuns: [], version: '1.2.3', batches: true });
    const a = conn.assign({ runId: 'job-1@1000', attempt: 2, payload: Buffer.from('{"n":7}'), manual: true });
    const [result] = await s.waitForResults(1);
    expect(result).toEqual({
      runId: 'job-1@1000',
      fencingToken: a.fencingToken,
      outcome: { $case: 'success', success: { output: Buffer.from('{"echoed":7}') } },
    });
    expect(seen!.run).toMatchObject({ id: 'job-1@1000', jobId: 'job-1', taskType: 'work', slotMs: a.slotUnixMs, scheduledMs: a.scheduledUnixMs, manual: true, backfilled: false });
    expect(seen!.attempt).toBe(2);
    expect(seen!.fencingToken).toBe(a.fencingToken);
    expect(seen!.signal.aborted).toBe(false);
    // The acked run is no longer held.
    await waitFor(() => w.heldRuns.length === 0, 'run released after ack');
  });

  it('reports a thrown error as a retryable failure, and NonRetryableError / HandlerError as typed', async () => {
    const s = await server();
    const w = worker({
      endpoints: [s.address],
      concurrency: 3,
      handlers: {
        plain: () => {
          throw new TypeError('boom');
        },
        fatal: async () => {
          throw new NonRetryableError('bad payload', { type: 'BadPayload' });
        },
        typed: async () => {
          throw new HandlerError('upstream slow', { type: 'HttpTimeout' });
        },
      },
    });
    w.start();
    const conn = await s.waitForConn(1);
    const p = conn.assign({ runId: 'p', taskType: 'plain' });
    const f = conn.assign({ runId: 'f', taskType: 'fatal' });
    const t = conn.assign({ runId: 't', taskType: 'typed' });
    await s.waitForResults(3);
    const byId = new Map(s.results.map((r) => [r.runId, r]));
    expect(byId.get('p')).toEqual({ runId: 'p', fencingToken: p.fencingToken, outcome: { $case: 'failure', failure: { retryable: true, errorType: 'TypeError', message: 'boom' } } });
    expect(byId.get('f')).toEqual({ runId: 'f', fencingToken: f.fencingToken, outcome: { $case: 'failure', failure: { retryable: false, errorType: 'BadPayload', message: 'bad payload' } } });
    expect(byId.get('t')!.outcome).toEqual({ $case: 'failure', failure: { retryable: true, errorType: 'HttpTimeout', message: 'upstream slow' } });
    expect(t.fencingToken).toBe(byId.get('t')!.fencingToken);
  });

  it('answers runs it cannot execute with typed failures: no handler, oversize output', async () => {
    const s = await server();
    const w = worker({ endpoints: [s.address], concurrency: 2, handlers: { big: () => Buffer.alloc(64 * 1024 + 1) } });
    w.start();
    const conn = await s.waitForConn(1);
    conn.assign({ runId: 'nh', taskType: 'nobody-handles-this' });
    conn.assign({ runId: 'big', taskType: 'big' });
    await s.waitForResults(2);
    const byId = new Map(s.results.map((r) => [r.runId, r.outcome]));
    expect(byId.get('nh')).toMatchObject({ $case: 'failure', failure: { retryable: true, errorType: 'NoHandler' } });
    expect(byId.get('big')).toMatchObject({ $case: 'failure', failure: { retryable: false, errorType: 'OutputTooLarge' } });
  });

  it('runs a duplicated assignment (same token) once', async () => {
    const s = await server();
    let calls = 0;
    const g = gate();
    const w = worker({ endpoints: [s.address], concurrency: 2, handlers: { work: async () => { calls += 1; await g.promise; } } });
    w.start();
    const conn = await s.waitForConn(1);
    const a = conn.assign({ runId: 'dup' });
    conn.assign({ runId: 'dup', fencingToken: a.fencingToken });
    await waitFor(() => calls === 1, 'handler started');
    await new Promise((r) => setTimeout(r, 30));
    g.open();
    await s.waitForResults(1);
    await waitFor(() => w.heldRuns.length === 0, 'run released after ack');
    expect(calls).toBe(1);
    expect(s.results).toHaveLength(1);
  });

  it('heartbeats held runs at the interval the welcome sets', async () => {
    const s = await server({ heartbeatIntervalMs: 15 });
    const g = gate();
    const w = worker({ endpoints: [s.address], heartbeatIntervalMs: 60_000, handlers: { work: () => g.promise } });
    w.start();
    const conn = await s.waitForConn(1);
    const a = conn.assign({ runId: 'hb' });
    await waitFor(() => conn.heartbeats().filter((h) => h.length > 0).length >= 3, 'heartbeats listing the run');
    expect(conn.heartbeats().filter((h) => h.length > 0).at(-1)).toEqual([{ runId: 'hb', fencingToken: a.fencingToken }]);
    g.open();
    await s.waitForResults(1);
  });

  it('ctx.heartbeat() sends a heartbeat for the run at once', async () => {
    const s = await server();
    const g = gate();
    const w = worker({
      endpoints: [s.address],
      heartbeatIntervalMs: 60_000,
      handlers: {
        work: async (ctx) => {
          ctx.heartbeat();
          await g.promise;
        },
      },
    });
    w.start();
    const conn = await s.waitForConn(1);
    const a = conn.assign({ runId: 'manual-hb' });
    await waitFor(() => conn.heartbeats().length === 1, 'the handler’s heartbeat');
    expect(conn.heartbeats()[0]).toEqual([{ runId: 'manual-hb', fencingToken: a.fencingToken }]);
    g.open();
    await s.waitForResults(1);
  });

  it('lease_lost aborts the handler’s signal and suppresses its result', async () => {
    const s = await server();
    let reason: RunAbortedError | undefined;
    const started = gate();
    const w = worker({
      endpoints: [s.address],
      handlers: {
        work: async (ctx) => {
          if (ctx.run.id === 'next') return 'quick';
          started.open();
          reason = await aborted(ctx.signal);
          return 'done anyway';
        },
      },
    });
    w.start();
    const conn = await s.waitForConn(1);
    const a = conn.assign({ runId: 'lost' });
    await started.promise;
    conn.leaseLost('lost', a.fencingToken, 'expired');
    await waitFor(() => reason !== undefined && w.activeRuns === 0, 'handler aborted and settled');
    expect(reason).toBeInstanceOf(RunAbortedError);
    expect(reason!.reason).toBe('lease-lost');
    expect(w.heldRuns).toEqual([]);
    // A later run still reports, so the silence above is suppression, not a dead stream.
    conn.assign({ runId: 'next' });
    await s.waitForResults(1);
    expect(s.results.map((r) => r.runId)).toEqual(['next']);
  });

  it('ignores a lease_lost for an older fencing token', async () => {
    const s = await server();
    const g = gate();
    let signal: AbortSignal | undefined;
    const w = worker({ endpoints: [s.address], handlers: { work: (ctx) => ((signal = ctx.signal), g.promise) } });
    w.start();
    const conn = await s.waitForConn(1);
    const a = conn.assign({ runId: 'r' });
    await waitFor(() => signal !== undefined, 'handler started');
    conn.leaseLost('r', a.fencingToken - 1);
    await new Promise((r) => setTimeout(r, 30));
    expect(signal!.aborted).toBe(false);
    g.open();
    const [res] = await s.waitForResults(1);
    expect(res!.fencingToken).toBe(a.fencingToken);
  });

  it('cancel aborts the signal with reason "cancelled" and reports nothing', async () => {
    const s = await server();
    let reason: RunAbortedError | undefined;
    const w = worker({
      endpoints: [s.address],
      handlers: {
        work: async (ctx) => {
          if (ctx.run.id === 'after') return 'quick';
          reason = await aborted(ctx.signal);
          throw reason;
        },
      },
    });
    w.start();
    const conn = await s.waitForConn(1);
    const a = conn.assign({ runId: 'c' });
    await waitFor(() => w.activeRuns === 1, 'handler running');
    conn.cancel('c', a.fencingToken, 'user asked');
    await waitFor(() => w.activeRuns === 0, 'handler settled');
    expect(reason!.reason).toBe('cancelled');
    expect(reason!.message).toBe('user asked');
    conn.assign({ runId: 'after' });
    await s.waitForResults(1);
    expect(s.results.map((r) => r.runId)).toEqual(['after']);
  });

  it('aborts on the execution timeout and reports a retryable ExecutionTimeout failure', async () => {
    const s = await server();
    let reason: RunAbortedError | undefined;
    const w = worker({
      endpoints: [s.address],
      handlers: {
        work: async (ctx) => {
          reason = await aborted(ctx.signal);
          return 'finished late';
        },
      },
    });
    w.start();
    const conn = await s.waitForConn(1);
    conn.assign({ runId: 'slow', executionTimeoutMs: 40 });
    const [res] = await s.waitForResults(1);
    expect(reason!.reason).toBe('timeout');
    expect(res!.outcome).toMatchObject({ $case: 'failure', failure: { retryable: true, errorType: 'ExecutionTimeout' } });
  });

  it('never has more runs in flight than concurrency, and never grants more credits', async () => {
    const s = await server();
    let inFlight = 0;
    let peak = 0;
    const w = worker({
      endpoints: [s.address],
      concurrency: 3,
      handlers: {
        work: async () => {
          inFlight += 1;
          peak = Math.max(peak, inFlight);
          await new Promise((r) => setTimeout(r, 2 + Math.floor(Math.random() * 10)));
          inFlight -= 1;
        },
      },
    });
    w.start();
    const conn = await s.waitForConn(1);
    s.enqueue(...Array.from({ length: 25 }, (_, i) => ({ runId: `r${i}` })));
    await s.waitForResults(25, 10_000);
    expect(peak).toBeLessThanOrEqual(3);
    expect(conn.peakCommitment).toBeLessThanOrEqual(3);
    expect(new Set(s.results.map((r) => r.runId)).size).toBe(25);
    const credits = conn.received.flatMap((m) => (m.message?.$case === 'credits' ? [m.message.credits.credits] : []));
    expect(conn.hello!.capacity + credits.reduce((a, b) => a + b, 0)).toBe(25 + conn.outstanding);
    expect(conn.outstanding).toBe(3);
  });

  it('queues assignments beyond its credits instead of exceeding concurrency', async () => {
    const s = await server();
    let inFlight = 0;
    let peak = 0;
    const w = worker({
      endpoints: [s.address],
      concurrency: 2,
      handlers: {
        work: async () => {
          inFlight += 1;
          peak = Math.max(peak, inFlight);
          await new Promise((r) => setTimeout(r, 10));
          inFlight -= 1;
        },
      },
    });
    w.start();
    const conn = await s.waitForConn(1);
    for (let i = 0; i < 5; i++) conn.assign({ runId: `over${i}` }); // ignores credits on purpose
    await s.waitForResults(5);
    expect(peak).toBe(2);
  });
});

describe('Worker: runs handed out ahead of their instant (start_delay_ms)', () => {
  it('holds a run until its start delay has passed, heartbeating it meanwhile, with its credit taken', async () => {
    const s = await server();
    const startedAt: number[] = [];
    const w = worker({ endpoints: [s.address], concurrency: 1, handlers: { work: () => void startedAt.push(performance.now()) } });
    w.start();
    const conn = await s.waitForConn(1);
    const sent = performance.now();
    conn.assign({ runId: 'early', startDelayMs: 150 });
    await waitFor(() => w.heldRuns.length === 1, 'run held');
    // Held, not started, and its slot is taken: no credit is granted for it.
    await new Promise((r) => setTimeout(r, 60));
    expect(startedAt).toEqual([]);
    expect(conn.outstanding).toBe(0);
    const heartbeats = conn.received.filter((m) => m.message?.$case === 'heartbeat' && m.message.heartbeat.runs.some((r) => r.runId === 'early'));
    expect(heartbeats.length).toBeGreaterThan(0);
    await s.waitForResults(1);
    expect(startedAt[0]! - sent).toBeGreaterThanOrEqual(145);
    await waitFor(() => conn.outstanding === 1, 'credit back after the run');
  });

  it('a run cancelled while held never starts, reports nothing, and gives its credit back', async () => {
    const s = await server();
    const started: string[] = [];
    const w = worker({ endpoints: [s.address], concurrency: 1, handlers: { work: (ctx) => void started.push(ctx.run.id) } });
    w.start();
    const conn = await s.waitForConn(1);
    const a = conn.assign({ runId: 'held', startDelayMs: 200 });
    await waitFor(() => w.heldRuns.length === 1, 'run held');
    conn.cancel('held', a.fencingToken, 'job deleted');
    await waitFor(() => w.heldRuns.length === 0, 'run dropped');
    await waitFor(() => conn.outstanding === 1, 'credit given back');
    conn.assign({ runId: 'next' });
    await s.waitForResults(1);
    await new Promise((r) => setTimeout(r, 250)); // past the cancelled run's start time
    expect(started).toEqual(['next']);
    expect(s.results.map((r) => r.runId)).toEqual(['next']);
  });

  it('shutdown leaves held runs that have not started to lease expiry, without running them', async () => {
    const s = await server();
    const started: string[] = [];
    const w = worker({ endpoints: [s.address], handlers: { work: (ctx) => void started.push(ctx.run.id) } });
    w.start();
    const conn = await s.waitForConn(1);
    conn.assign({ runId: 'later', startDelayMs: 5_000 });
    await waitFor(() => w.heldRuns.length === 1, 'run held');
    await w.shutdown({ graceMs: 0 });
    expect(w.state).toBe('stopped');
    expect(started).toEqual([]);
    expect(s.results).toEqual([]);
  });
});
