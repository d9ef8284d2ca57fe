// The Worker library against fake servers: connections, reconnects, redirects, and its lifecycle.
import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { RunAbortedError } from '../../src/client/worker/handler-errors.js';
import { Worker } from '../../src/client/worker/worker.js';
import { waitFor } from './fakes/grpc-test-server.js';
import { FakeWorkerServer } from './fakes/fake-worker-server.js';
import { aborted, gate, server, stopAll, worker } from './fakes/worker-test-kit.js';

afterEach(stopAll);

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

  it('finds the cluster at members it learned from the welcome, never configured, once its endpoint is gone', async () => {
    const moved = await server({ nodeId: 'n4' });
    const old = await server({ nodeId: 'n1', memberAddresses: () => [old.address, moved.address] });
    const w = worker({ endpoints: [old.address], handlers: { work: () => 'ok' }, reconnect: { initialBackoffMs: 20, maxBackoffMs: 200 } });
    w.start();
    await old.waitForConn(1);
    await old.stop(); // the machine left the cluster
    const conn = await moved.waitForConn(1, 10_000);
    conn.assign({ runId: 'after-move' });
    await moved.waitForResults(1);
  });

  it('learns members added after its welcome from a ping, and finds the leader there', async () => {
    const added = await server({ nodeId: 'n5' });
    const old = await server({ nodeId: 'n1', memberAddresses: () => [old.address] });
    const w = worker({ endpoints: [old.address], handlers: { work: () => 'ok' }, reconnect: { initialBackoffMs: 20, maxBackoffMs: 200 } });
    w.start();
    const first = await old.waitForConn(1);
    await waitFor(() => w.connected, 'welcomed');
    first.send({ $case: 'ping', ping: { heartbeatSeq: 0, memberAddresses: [old.address, added.address] } });
    await new Promise((r) => setTimeout(r, 100));
    await old.stop();
    await added.waitForConn(1, 10_000);
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
