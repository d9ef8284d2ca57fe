import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { Worker, type WorkerOptions } from '../../src/client/worker/worker.js';
import { HandlerError, NonRetryableError, RunAbortedError } from '../../src/client/worker/handler-errors.js';
import type { RunContext } from '../../src/client/worker/run-context.js';
import { FakeWorkerServer } from './fakes/fake-worker-server.js';
import { waitFor } from './fakes/grpc-test-server.js';

let servers: FakeWorkerServer[] = [];
let workers: Worker[] = [];

async function server(opts: ConstructorParameters<typeof FakeWorkerServer>[0] = {}): Promise<FakeWorkerServer> {
  const s = await FakeWorkerServer.start(opts);
  servers.push(s);
  return s;
}

function worker(opts: Partial<WorkerOptions> & Pick<WorkerOptions, 'endpoints' | 'handlers'>): Worker {
  const w = new Worker({
    workerId: 'w-test',
    heartbeatIntervalMs: 20,
    reconnect: { initialBackoffMs: 10, maxBackoffMs: 50 },
    shutdownGraceMs: 2_000,
    abortWaitMs: 500,
    ...opts,
  });
  workers.push(w);
  return w;
}

/** A promise with its resolve exposed, to hold a handler until the test lets it go. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

function aborted(signal: AbortSignal): Promise<RunAbortedError> {
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason as RunAbortedError), { once: true }));
}

afterEach(async () => {
  await Promise.all(workers.map((w) => w.shutdown({ graceMs: 0 })));
  await Promise.all(servers.map((s) => s.stop()));
  workers = [];
  servers = [];
});

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

describe('Worker: connection', () => {
  it('reconnects after a dropped stream and re-attaches held runs in hello', async () => {
    const s = await server();
    const g = gate();
    const w = worker({ endpoints: [s.address], concurrency: 2, handlers: { work: () => g.promise } });
    w.start();
    const first = await s.waitForConn(1);
    const a = first.assign({ runId: 'held' });
    await waitFor(() => w.activeRuns === 1, 'handler running');
    first.drop();
    const second = await s.waitForConn(2);
    expect(second.hello!.heldRuns).toEqual([{ runId: 'held', fencingToken: a.fencingToken }]);
    expect(second.hello!.capacity).toBe(1); // one slot is busy with the held run
    g.open();
    const [res] = await s.waitForResults(1);
    expect(res!.fencingToken).toBe(a.fencingToken);
    expect(second.received.some((m) => m.message?.$case === 'result')).toBe(true);
  });

  it('re-sends an unacknowledged result on the next stream until it is acked', async () => {
    const s = await server({ autoAck: false });
    const w = worker({ endpoints: [s.address], handlers: { work: () => 'ok' } });
    w.start();
    const first = await s.waitForConn(1);
    const a = first.assign({ runId: 'unacked' });
    await s.waitForResults(1);
    expect(w.heldRuns).toEqual([{ runId: 'unacked', fencingToken: a.fencingToken }]);
    await waitFor(() => first.heartbeats().some((h) => h.some((r) => r.runId === 'unacked')), 'lease kept while awaiting ack');
    first.drop();
    const second = await s.waitForConn(2);
    expect(second.hello!.heldRuns).toEqual([{ runId: 'unacked', fencingToken: a.fencingToken }]);
    await s.waitForResults(2);
    expect(s.results[1]).toEqual(s.results[0]);
    second.ack(s.results[1]!);
    await waitFor(() => w.heldRuns.length === 0, 'run released after ack');
  });

  it("emits 'settled' once per acknowledged result, accepted or not, and never for a stale ack", async () => {
    const s = await server({ autoAck: false });
    const w = worker({ endpoints: [s.address], concurrency: 2, handlers: { work: () => 'ok' } });
    const settled: { runId: string; fencingToken: number; accepted: boolean; reason: string }[] = [];
    w.on('settled', (x) => settled.push(x));
    w.start();
    const conn = await s.waitForConn(1);
    const a = conn.assign({ runId: 'kept' });
    const b = conn.assign({ runId: 'refused' });
    const results = await s.waitForResults(2);
    const byId = new Map(results.map((r) => [r.runId, r]));
    // An ack for a token the worker does not hold settles nothing.
    conn.ack({ ...byId.get('kept')!, fencingToken: a.fencingToken + 100 });
    await new Promise((r) => setTimeout(r, 30));
    expect(settled).toEqual([]);
    conn.ack(byId.get('kept')!);
    conn.ack(byId.get('refused')!, false, 'lease moved to another worker');
    await waitFor(() => settled.length === 2, 'both results settled');
    // A duplicate ack of a settled run is not a second settlement.
    conn.ack(byId.get('kept')!);
    await new Promise((r) => setTimeout(r, 30));
    expect(settled).toEqual([
      { runId: 'kept', fencingToken: a.fencingToken, accepted: true, reason: '' },
      { runId: 'refused', fencingToken: b.fencingToken, accepted: false, reason: 'lease moved to another worker' },
    ]);
    expect(w.heldRuns).toEqual([]);
  });

  it('aborts runs the new leader rejects in welcome, without reporting them', async () => {
    const s = await server({ reattach: (held) => ({ adopted: [], rejected: held }) });
    let reason: RunAbortedError | undefined;
    const w = worker({
      endpoints: [s.address],
      handlers: {
        work: async (ctx) => {
          reason = await aborted(ctx.signal);
        },
      },
    });
    w.start();
    const first = await s.waitForConn(1);
    first.assign({ runId: 'orphan' });
    await waitFor(() => w.activeRuns === 1, 'handler running');
    first.drop();
    await s.waitForConn(2);
    await waitFor(() => reason !== undefined && w.activeRuns === 0, 'rejected run aborted');
    expect(reason!.reason).toBe('lease-lost');
    expect(w.heldRuns).toEqual([]);
    expect(s.results).toEqual([]);
  });

  it('follows a redirect from a follower to the leader', async () => {
    const leader = await server({ nodeId: 'n2' });
    const follower = await server({ redirectTo: () => leader.address });
    const w = worker({ endpoints: [follower.address], handlers: { work: () => 'ok' } });
    const connected: string[] = [];
    w.on('connected', (address, nodeId) => connected.push(`${nodeId}@${address}`));
    w.start();
    await follower.waitForConn(1);
    const conn = await leader.waitForConn(1);
    conn.assign({ runId: 'via-redirect' });
    await leader.waitForResults(1);
    expect(connected).toEqual([`n2@${leader.address}`]);
    expect(w.connected).toBe(true);
  });

  it('moves to the new leader on a redirect mid-stream, re-attaching held runs', async () => {
    const oldLeader = await server({ nodeId: 'old' });
    const newLeader = await server({ nodeId: 'new' });
    const g = gate();
    const w = worker({ endpoints: [oldLeader.address], handlers: { work: () => g.promise } });
    w.start();
    const conn = await oldLeader.waitForConn(1);
    const a = conn.assign({ runId: 'moving' });
    await waitFor(() => w.activeRuns === 1, 'handler running');
    conn.redirect(newLeader.address);
    const moved = await newLeader.waitForConn(1);
    expect(moved.hello!.heldRuns).toEqual([{ runId: 'moving', fencingToken: a.fencingToken }]);
    g.open();
    await newLeader.waitForResults(1);
    expect(oldLeader.results).toEqual([]);
  });

  it('falls back to the other endpoints when one is down', async () => {
    const live = await server();
    const w = worker({ endpoints: ['127.0.0.1:1', live.address], handlers: { work: () => 'ok' } });
    w.start();
    await w.waitUntilConnected(5_000);
    expect(w.connected).toBe(true);
    const conn = await live.waitForConn(1);
    conn.assign({ runId: 'r' });
    await live.waitForResults(1);
  });

  it('presumes the lease lost after two lease durations without contact, and aborts the run', async () => {
    const s = await server();
    let reason: RunAbortedError | undefined;
    const w = worker({
      endpoints: [s.address],
      handlers: {
        work: async (ctx) => {
          reason = await aborted(ctx.signal);
        },
      },
    });
    w.start();
    const conn = await s.waitForConn(1);
    conn.assign({ runId: 'partitioned', leaseDurationMs: 100 });
    await waitFor(() => w.activeRuns === 1, 'handler running');
    // Heartbeats keep it alive while connected.
    await new Promise((r) => setTimeout(r, 300));
    expect(reason).toBeUndefined();
    await s.stop();
    await waitFor(() => reason !== undefined, 'abort after lease presumed lost');
    expect(reason!.reason).toBe('lease-lost');
    expect(reason!.message).toMatch(/presumed lost/);
    expect(w.heldRuns).toEqual([]);
  });

  it('comes back to a restarted node and re-attaches', async () => {
    const s1 = await server();
    const g = gate();
    const w = worker({ endpoints: [s1.address], handlers: { work: () => g.promise } });
    w.start();
    const conn = await s1.waitForConn(1);
    const a = conn.assign({ runId: 'survivor' });
    await waitFor(() => w.activeRuns === 1, 'handler running');
    await s1.stop();
    // The run finishes while no node is reachable: its result waits for the next stream.
    g.open();
    await waitFor(() => w.activeRuns === 0, 'handler finished while disconnected');
    const s2 = await server({ port: s1.server.port });
    const back = await s2.waitForConn(1, 10_000);
    expect(back.hello!.heldRuns).toEqual([{ runId: 'survivor', fencingToken: a.fencingToken }]);
    const [res] = await s2.waitForResults(1);
    expect(res).toEqual({ runId: 'survivor', fencingToken: a.fencingToken, outcome: { $case: 'success', success: { output: Buffer.alloc(0) } } });
    expect(s1.results).toEqual([]);
  });

  it('keeps asking at least once a second while live followers know no leader (an election), then finds it', { timeout: 15_000 }, async () => {
    const leader = await server({ nodeId: 'L' });
    let leaderKnown = false;
    const asked: number[] = [];
    // Followers that answer but know no leader yet: a redirect without an address.
    const answer = () => (asked.push(Date.now()), leaderKnown ? leader.address : '');
    const f1 = await server({ redirectTo: answer });
    const f2 = await server({ redirectTo: answer });
    // The library's default reconnect backoff (100 ms growing to 5 s), not the tests' short one.
    const w = worker({ endpoints: [f1.address, f2.address], reconnect: { initialBackoffMs: 100, maxBackoffMs: 5_000 }, handlers: { work: () => 'ok' } });
    w.start();
    await new Promise((r) => setTimeout(r, 3_000));
    const electionOver = Date.now();
    leaderKnown = true;
    await leader.waitForConn(1);
    const found = Date.now();
    // Backing off as from dead nodes would leave gaps of 1.6–3.2 s by now and find the leader
    // seconds late; asking live nodes again stays within half a second or so.
    const gaps = asked.slice(1).map((t, i) => t - asked[i]!);
    expect(asked.length).toBeGreaterThanOrEqual(5);
    expect(Math.max(...gaps)).toBeLessThan(1_300);
    expect(found - electionOver).toBeLessThan(1_300);
  });

  it('after a leader dies, followers that still point at it do not push the worker into a long backoff', { timeout: 15_000 }, async () => {
    const dead = await FakeWorkerServer.start({});
    const deadAddress = dead.address;
    await dead.stop();
    const leader = await server({ nodeId: 'L' });
    let leaderKnown = false;
    const f1 = await server({ redirectTo: () => (leaderKnown ? leader.address : deadAddress) });
    const w = worker({ endpoints: [f1.address], reconnect: { initialBackoffMs: 100, maxBackoffMs: 5_000 }, handlers: { work: () => 'ok' } });
    w.start();
    await new Promise((r) => setTimeout(r, 3_000));
    const electionOver = Date.now();
    leaderKnown = true;
    await leader.waitForConn(1);
    expect(Date.now() - electionOver).toBeLessThan(1_300);
    expect(f1.conns.length).toBeGreaterThanOrEqual(5);
  });

  it('reaches the leader once followers stop bouncing it between each other', async () => {
    const leader = await server({ nodeId: 'L' });
    let leaderKnown = false;
    const f2 = await server({ redirectTo: () => (leaderKnown ? leader.address : f1.address) });
    const f1: FakeWorkerServer = await server({ redirectTo: () => (leaderKnown ? leader.address : f2.address) });
    const w = worker({ endpoints: [f1.address, f2.address], handlers: { work: () => 'ok' } });
    w.start();
    await waitFor(() => f1.conns.length + f2.conns.length >= 4, 'redirect ping-pong');
    leaderKnown = true;
    const conn = await leader.waitForConn(1);
    conn.assign({ runId: 'x' });
    await leader.waitForResults(1);
  });
});

describe('Worker: lifecycle', () => {
  it('shutdown drains: in-flight runs finish and report before the stream closes, no new runs start', async () => {
    const s = await server();
    const g = gate();
    const started: string[] = [];
    const w = worker({
      endpoints: [s.address],
      concurrency: 2,
      handlers: {
        work: async (ctx) => {
          started.push(ctx.run.id);
          await g.promise;
          return ctx.signal.aborted ? 'aborted' : 'clean';
        },
      },
    });
    w.start();
    const conn = await s.waitForConn(1);
    conn.assign({ runId: 'inflight' });
    await waitFor(() => w.activeRuns === 1, 'handler running');
    let stopped = false;
    const done = w.shutdown({ graceMs: 5_000 }).then(() => (stopped = true));
    await waitFor(() => conn.drained, 'drain message');
    s.enqueue({ runId: 'too-late' }); // a server honouring drain assigns nothing more
    await new Promise((r) => setTimeout(r, 30));
    expect(stopped).toBe(false);
    g.open();
    await done;
    expect(started).toEqual(['inflight']);
    expect(s.results.map((r) => [r.runId, r.outcome?.$case === 'success' && r.outcome.success.output.toString()])).toEqual([['inflight', 'clean']]);
    expect(w.state).toBe('stopped');
    await waitFor(() => conn.ended, 'stream closed');
  });

  it('after the grace period, shutdown aborts remaining runs (reason "shutdown") and reports them retryable', async () => {
    const s = await server();
    let reason: RunAbortedError | undefined;
    const w = worker({
      endpoints: [s.address],
      handlers: {
        work: async (ctx) => {
          reason = await aborted(ctx.signal);
          throw reason;
        },
      },
    });
    w.start();
    const conn = await s.waitForConn(1);
    conn.assign({ runId: 'stuck' });
    await waitFor(() => w.activeRuns === 1, 'handler running');
    await w.shutdown({ graceMs: 50 });
    expect(reason!.reason).toBe('shutdown');
    expect(s.results).toHaveLength(1);
    expect(s.results[0]!.outcome).toMatchObject({ $case: 'failure', failure: { retryable: true, errorType: 'WorkerShutdown' } });
  });

  it('drain() alone stops credits but keeps the stream for heartbeats and results', async () => {
    const s = await server();
    const g = gate();
    const w = worker({ endpoints: [s.address], concurrency: 2, handlers: { work: () => g.promise } });
    w.start();
    const conn = await s.waitForConn(1);
    conn.assign({ runId: 'd1' });
    await waitFor(() => w.activeRuns === 1, 'handler running');
    let drained = false;
    const draining = w.drain().then(() => (drained = true));
    await waitFor(() => conn.drained, 'drain message');
    const creditsBefore = conn.received.filter((m) => m.message?.$case === 'credits').length;
    g.open();
    await draining;
    expect(drained).toBe(true);
    expect(s.results.map((r) => r.runId)).toEqual(['d1']);
    // The freed slot was not offered back, and the stream is still up.
    expect(conn.received.filter((m) => m.message?.$case === 'credits').length).toBe(creditsBefore);
    expect(w.connected).toBe(true);
    expect(w.state).toBe('draining');
  });

  it('a second shutdown() with a shorter grace cuts the first one short', async () => {
    const s = await server();
    let reason: RunAbortedError | undefined;
    const w = worker({
      endpoints: [s.address],
      handlers: {
        work: async (ctx) => {
          reason = await aborted(ctx.signal);
          throw reason;
        },
      },
    });
    w.start();
    const conn = await s.waitForConn(1);
    conn.assign({ runId: 'r' });
    await waitFor(() => w.activeRuns === 1, 'handler running');
    const first = w.shutdown({ graceMs: 60_000 });
    await waitFor(() => conn.drained, 'draining');
    expect(w.shutdown({ graceMs: 0 })).toBe(first);
    await first;
    expect(reason!.reason).toBe('shutdown');
    expect(w.state).toBe('stopped');
  });

  it('run(): the first signal drains, a second one forces', async () => {
    const s = await server();
    const signals = new EventEmitter();
    const proc = { on: signals.on.bind(signals), off: signals.off.bind(signals) } as unknown as Pick<NodeJS.Process, 'on' | 'off'>;
    let reason: RunAbortedError | undefined;
    const w = worker({
      endpoints: [s.address],
      shutdownGraceMs: 60_000,
      handlers: {
        work: async (ctx) => {
          reason = await aborted(ctx.signal);
          throw reason;
        },
      },
    });
    let finished = false;
    const running = w.run({ process: proc }).then(() => (finished = true));
    const conn = await s.waitForConn(1);
    conn.assign({ runId: 'r' });
    await waitFor(() => w.activeRuns === 1, 'handler running');
    signals.emit('SIGTERM', 'SIGTERM');
    await waitFor(() => conn.drained, 'drain after first signal');
    expect(w.state).toBe('draining');
    expect(finished).toBe(false);
    signals.emit('SIGINT', 'SIGINT');
    await running;
    expect(reason!.reason).toBe('shutdown');
    expect(signals.listenerCount('SIGTERM')).toBe(0);
    expect(signals.listenerCount('SIGINT')).toBe(0);
  });

  it('waitUntilConnected() rejects when no node answers in time', async () => {
    const w = worker({ endpoints: ['127.0.0.1:1'], handlers: { work: () => 'ok' } });
    w.start();
    await expect(w.waitUntilConnected(100)).rejects.toThrow(/not connected to a leader within 100ms/);
  });

  it('rejects bad options with clear messages', () => {
    expect(() => new Worker({ endpoints: [], handlers: { a: () => {} } })).toThrow(/endpoints/);
    expect(() => new Worker({ endpoints: ['x:1'], handlers: {} })).toThrow(/handlers/);
    expect(() => new Worker({ endpoints: ['x:1'], handlers: { a: () => {} }, concurrency: 0 })).toThrow(/concurrency/);
    expect(() => new Worker({ endpoints: ['x:1'], handlers: { a: () => {} }, workerId: 'bad id!' })).toThrow(/workerId/);
    expect(new Worker({ endpoints: ['x:1'], handlers: { a: () => {} } }).workerId).toMatch(/^[A-Za-z0-9._:-]+-\d+-[0-9a-f]{6}$/);
  });
});
