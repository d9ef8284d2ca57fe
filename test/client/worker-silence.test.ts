// A leader the network swallowed sends no RST or FIN: the worker must notice the silence itself
// (WorkerWelcome.silence_timeout_ms), leave, and try another node first, re-attaching its runs.
import { afterEach, describe, expect, it } from 'vitest';
import { Worker } from '../../src/client/worker/worker.js';
import { FakeWorkerServer } from './fakes/fake-worker-server.js';
import { waitFor } from './fakes/grpc-test-server.js';

let servers: FakeWorkerServer[] = [];
let workers: Worker[] = [];

afterEach(async () => {
  await Promise.all(workers.map((w) => w.shutdown({ graceMs: 0 })));
  await Promise.all(servers.map((s) => s.stop()));
  workers = [];
  servers = [];
});

describe('Worker: a silent server', () => {
  it('abandons a stream that stays silent past the welcome bound and re-attaches its runs on another node first', async () => {
    // The fake sends nothing unprompted (no pings): to the worker it is a leader gone silent.
    const silent = await FakeWorkerServer.start({ silenceTimeoutMs: 300, heartbeatIntervalMs: 50 });
    const other = await FakeWorkerServer.start({ silenceTimeoutMs: 300, heartbeatIntervalMs: 50 });
    servers.push(silent, other);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const w = new Worker({
      workerId: 'w-silent',
      endpoints: [silent.address, other.address],
      reconnect: { initialBackoffMs: 10, maxBackoffMs: 50 },
      handlers: { work: () => held },
    });
    workers.push(w);
    const disconnects: string[] = [];
    w.on('disconnected', (address: string) => disconnects.push(address));
    w.start();
    const first = await silent.waitForConn(1);
    first.assign({ runId: 'r1', leaseDurationMs: 30_000 });
    await waitFor(() => w.activeRuns === 1, 'handler running');
    const leftAt = Date.now();
    const second = await other.waitForConn(1, 3_000);
    const movedMs = Date.now() - leftAt;
    // Left after the bound, not after transport keepalive (10 s + 5 s).
    expect(movedMs).toBeLessThan(1_500);
    expect(disconnects).toEqual([silent.address]);
    // The other node first: the silent one was not dialled again.
    expect(silent.conns.length).toBe(1);
    expect(second.hello?.heldRuns.map((h) => h.runId)).toEqual(['r1']);
    // Still executing (adopted by the fake), and it reports there.
    expect(w.activeRuns).toBe(1);
    release();
    const [result] = await other.waitForResults(1);
    expect(result!.runId).toBe('r1');
  });

  it('stays on a quiet stream as long as the server pings', async () => {
    const s = await FakeWorkerServer.start({ silenceTimeoutMs: 200, heartbeatIntervalMs: 50 });
    servers.push(s);
    const w = new Worker({ workerId: 'w-pinged', endpoints: [s.address], handlers: { work: () => 'ok' } });
    workers.push(w);
    w.start();
    const conn = await s.waitForConn(1);
    const pinger = setInterval(() => conn.send({ $case: 'ping', ping: { heartbeatSeq: 0, memberAddresses: [] } }), 50);
    try {
      await new Promise((r) => setTimeout(r, 800));
      expect(s.conns.length).toBe(1);
      expect(w.connected).toBe(true);
    } finally {
      clearInterval(pinger);
    }
    // Once the pings stop the worker leaves (and, with one endpoint, comes back).
    await s.waitForConn(2, 3_000);
  });

  it('against a server that acknowledges heartbeats, presumes a lease lost a margin before it can expire there (not two leases later)', async () => {
    const s = await FakeWorkerServer.start({ silenceTimeoutMs: 10_000, heartbeatIntervalMs: 50 });
    servers.push(s);
    let abortedAt = 0;
    let reason = '';
    const w = new Worker({
      workerId: 'w-acked',
      endpoints: [s.address],
      reconnect: { initialBackoffMs: 10, maxBackoffMs: 50 },
      handlers: {
        work: (ctx) =>
          new Promise<void>((resolve) =>
            ctx.signal.addEventListener('abort', () => {
              abortedAt = Date.now();
              reason = (ctx.signal.reason as { reason: string }).reason;
              resolve();
            }),
          ),
      },
    });
    workers.push(w);
    w.start();
    const conn = await s.waitForConn(1);
    // The server acknowledges every heartbeat it gets, as the real one does in its pings.
    const acker = setInterval(() => {
      const seqs = conn.received.flatMap((m) => (m.message?.$case === 'heartbeat' ? [m.message.heartbeat.seq] : []));
      conn.send({ $case: 'ping', ping: { heartbeatSeq: Math.max(0, ...seqs), memberAddresses: [] } });
    }, 20);
    conn.assign({ runId: 'r-acked', leaseDurationMs: 600 });
    await waitFor(() => w.activeRuns === 1, 'handler running');
    await new Promise((r) => setTimeout(r, 700)); // longer than the lease: acked heartbeats renew it
    expect(abortedAt).toBe(0);
    clearInterval(acker);
    const cutAt = Date.now();
    await s.stop();
    await waitFor(() => abortedAt > 0, 'run aborted', 3_000);
    expect(reason).toBe('lease-lost');
    // The lease (600 ms) less its margin after the last acknowledged heartbeat: well before the
    // 1.2 s an older server gets, and never after the lease could have expired there.
    expect(abortedAt - cutAt).toBeLessThan(600);
  });
});
