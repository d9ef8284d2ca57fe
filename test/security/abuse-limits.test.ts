// Issue 29, abuse limits on the client port: streams per connection and per principal (watch and
// worker streams alike), unary calls in flight, the TLS handshake timeout and the idle timeout.
// A cap is refused with RESOURCE_EXHAUSTED / LIMIT_EXCEEDED naming the flag that sets it. Live
// part: one in-process node with TLS and auth on loopback, small limits.
import { connect } from 'node:net';
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, connectivityState, credentials, Metadata, status, type ClientReadableStream } from '@grpc/grpc-js';
import { NodeTls } from '../../src/server/grpc/tls/node-tls.js';
import { CallCaps, clientLimitsOf, DEFAULT_CLIENT_LIMITS } from '../../src/server/auth/client-limits.js';
import { ERROR_CODE_KEY } from '../../src/server/grpc/grpc-status-map.js';
import { newTokenSecret } from '../../src/server/auth/token-secret.js';
import { Role } from '../../src/gen/herald/v1/auth_service.js';
import { isHeraldError } from '../../src/herald-error.js';
import type { Principal } from '../../src/server/auth/principal.js';
import { UNAUTHENTICATED_ADMIN } from '../../src/server/auth/principal.js';
import { startInProcessCluster, type InProcessCluster } from '../dispatch/helpers/in-process-cluster.js';
import { makeTestCerts, type TestCerts } from './helpers/test-certs.js';

const who = (name: string, via: Principal['via'] = 'token'): Principal => ({ name, role: Role.ROLE_VIEWER, taskTypes: new Set(), via });

describe('call caps', () => {
  const limits = clientLimitsOf({ maxStreamsPerConnection: 2, maxStreamsPerPrincipal: 3, maxCallsPerConnection: 1, maxCallsPerPrincipal: 2 });

  it('caps streams per connection and per principal, naming the flag; a release frees the slot once', () => {
    const caps = new CallCaps(limits);
    const r1 = caps.acquire('stream', 'c1', who('a'));
    caps.acquire('stream', 'c1', who('a'));
    const conn = (() => {
      try {
        caps.acquire('stream', 'c1', who('b'));
      } catch (e) {
        return e;
      }
    })();
    expect(isHeraldError(conn, 'LIMIT_EXCEEDED') && conn.details.limit).toBe('max-streams-per-connection');
    expect((conn as Error).message).toMatch(/--max-streams-per-connection/);
    caps.acquire('stream', 'c2', who('a'));
    expect(() => caps.acquire('stream', 'c3', who('a'))).toThrow(/principal "a" has 3 streams open on this node.*--max-streams-per-principal/);
    caps.acquire('stream', 'c3', who('b')); // principals are separate
    r1();
    r1(); // idempotent: frees one slot, not two
    expect(caps.held('stream', 'connection', 'c1')).toBe(1);
    expect(caps.held('stream', 'principal', 'a')).toBe(2);
    caps.acquire('stream', 'c3', who('a'));
    expect(() => caps.acquire('stream', 'c4', who('a'))).toThrow(/--max-streams-per-principal/);
  });

  it('caps unary calls in flight separately from streams', () => {
    const caps = new CallCaps(limits);
    caps.acquire('stream', 'c1', who('a'));
    caps.acquire('stream', 'c1', who('a'));
    const release = caps.acquire('call', 'c1', who('a'));
    expect(() => caps.acquire('call', 'c1', who('a'))).toThrow(/1 unary calls in flight.*--max-calls-per-connection/);
    caps.acquire('call', 'c2', who('a'));
    expect(() => caps.acquire('call', 'c3', who('a'))).toThrow(/--max-calls-per-principal/);
    release();
    caps.acquire('call', 'c1', who('b'));
  });

  it('does not count forwarded calls again, nor the anonymous admin per principal; 0 is no cap', () => {
    const caps = new CallCaps(limits);
    for (let i = 0; i < 10; i++) caps.acquire('stream', 'follower', who('a', 'forwarded'));
    for (let i = 0; i < 10; i++) caps.acquire('stream', `c${i}`, UNAUTHENTICATED_ADMIN);
    caps.acquire('stream', 'c1', UNAUTHENTICATED_ADMIN);
    expect(() => caps.acquire('stream', 'c1', UNAUTHENTICATED_ADMIN)).toThrow(/--max-streams-per-connection/);
    // A marked forwarded call from an authenticated principal: no connection cap, the principal's holds.
    caps.acquire('call', undefined, who('c'));
    caps.acquire('call', undefined, who('c'));
    expect(() => caps.acquire('call', undefined, who('c'))).toThrow(/--max-calls-per-principal/);
    const open = new CallCaps(clientLimitsOf({ maxStreamsPerConnection: 0, maxStreamsPerPrincipal: 0 }));
    for (let i = 0; i < 5_000; i++) open.acquire('stream', 'c1', who('a'));
  });

  it('refuses a bad value naming its flag; defaults are finite', () => {
    expect(() => clientLimitsOf({ handshakeTimeoutMs: 0 })).toThrow(/--tls-handshake-timeout-ms/);
    expect(() => clientLimitsOf({ maxStreamsPerConnection: -1 })).toThrow(/--max-streams-per-connection/);
    expect(DEFAULT_CLIENT_LIMITS.handshakeTimeoutMs).toBeLessThan(120_000); // Node's own default
    expect(DEFAULT_CLIENT_LIMITS.maxStreamsPerConnection).toBeGreaterThan(0);
  });
});

describe('abuse limits on a live TLS node', () => {
  let certs: TestCerts;
  let cluster: InProcessCluster;
  let addr: string;
  let port: number;
  let watcher: string;
  let worker: string;
  const clients: Client[] = [];
  const identity = (b: Buffer): Buffer => b;

  beforeAll(async () => {
    certs = await makeTestCerts(['n1']);
    const tls = (id: string) =>
      new NodeTls({ certFile: certs.member[id]!.cert, keyFile: certs.member[id]!.key, peerCertFile: certs.member[id]!.cert, peerKeyFile: certs.member[id]!.key, peerCaFile: certs.ca });
    const bootstrap = newTokenSecret().token;
    cluster = await startInProcessCluster(
      1,
      {},
      { auth: { bootstrapToken: bootstrap }, tls, clientLimits: { maxStreamsPerConnection: 2, maxStreamsPerPrincipal: 3, handshakeTimeoutMs: 500, idleTimeoutMs: 1_000 } },
      bootstrap,
      { ca: readFileSync(certs.ca) },
    );
    port = cluster.nodes[0]!.node.clientPort;
    addr = `127.0.0.1:${port}`;
    watcher = (await cluster.client.createToken('watcher', 'viewer')).secret;
    worker = (await cluster.client.createToken('workers', 'worker', ['report'])).secret;
  }, 60_000);

  afterAll(async () => {
    for (const c of clients) c.close();
    await cluster?.stop();
    if (certs) await rm(certs.dir, { recursive: true, force: true });
  });

  /** A client on its own connection (no subchannel shared with another client). */
  function connection(): Client {
    const c = new Client(addr, credentials.createSsl(readFileSync(certs.ca)), { 'grpc.use_local_subchannel_pool': 1 });
    clients.push(c);
    return c;
  }

  function md(token: string): Metadata {
    const m = new Metadata();
    m.set('authorization', `Bearer ${token}`);
    return m;
  }

  interface Opened {
    outcome: { code: status; details: string; heraldCode?: string };
    cancel(): void;
  }

  /** Opens a stream; 'open' (OK) when it is still open after 400 ms, else the status it ended with. */
  function open(c: Client, token: string, kind: 'watch' | 'worker'): Promise<Opened> {
    const call =
      kind === 'watch'
        ? c.makeServerStreamRequest('/herald.v1.WatchService/WatchRuns', identity, identity, Buffer.alloc(0), md(token), {})
        : c.makeBidiStreamRequest('/herald.v1.WorkerService/Connect', identity, identity, md(token), {});
    return new Promise((resolve) => {
      let done = false;
      const finish = (outcome: Opened['outcome']) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve({ outcome, cancel: () => call.cancel() });
      };
      const timer = setTimeout(() => finish({ code: status.OK, details: 'open' }), 400);
      (call as ClientReadableStream<Buffer>).on('data', () => undefined);
      call.on('error', (e: { code: status; details: string; metadata?: Metadata }) => finish({ code: e.code, details: e.details, heraldCode: String(e.metadata?.get(ERROR_CODE_KEY)[0] ?? '') }));
    });
  }

  it('refuses a stream past the per-connection cap, then past the per-principal cap, naming the flag; a cancelled stream frees its slot', async () => {
    const c1 = connection();
    const s1 = await open(c1, watcher, 'watch');
    const s2 = await open(c1, watcher, 'watch');
    expect([s1.outcome.code, s2.outcome.code]).toEqual([status.OK, status.OK]);
    const s3 = await open(c1, watcher, 'watch');
    expect(s3.outcome).toMatchObject({ code: status.RESOURCE_EXHAUSTED, heraldCode: 'LIMIT_EXCEEDED', details: expect.stringMatching(/--max-streams-per-connection/) });

    const s4 = await open(connection(), watcher, 'watch');
    expect(s4.outcome.code).toBe(status.OK);
    const c3 = connection();
    const s5 = await open(c3, watcher, 'watch');
    expect(s5.outcome).toMatchObject({ code: status.RESOURCE_EXHAUSTED, heraldCode: 'LIMIT_EXCEEDED', details: expect.stringMatching(/principal "watcher".*--max-streams-per-principal/) });

    // Another principal is not held to the watcher's count.
    const w1 = await open(c3, worker, 'worker');
    expect(w1.outcome.code).toBe(status.OK);

    // The watcher cancels one: its next stream is accepted.
    s1.cancel();
    await new Promise((r) => setTimeout(r, 200));
    const s6 = await open(c3, watcher, 'watch');
    expect(s6.outcome.code).toBe(status.OK);
    // c3 now holds two streams (worker + watcher): a worker stream on it is refused too.
    const w2 = await open(c3, worker, 'worker');
    expect(w2.outcome).toMatchObject({ code: status.RESOURCE_EXHAUSTED, details: expect.stringMatching(/--max-streams-per-connection/) });
    for (const s of [s2, s4, w1, s6]) s.cancel();
  }, 30_000);

  it('health stays open and implemented through the guard and the limits (handlers found by their original names too)', async () => {
    const c = connection();
    const code = await new Promise<status>((resolve) => {
      c.makeUnaryRequest('/grpc.health.v1.Health/Check', identity, identity, Buffer.alloc(0), new Metadata(), { deadline: Date.now() + 5_000 }, (err) => resolve(err ? err.code : status.OK));
    });
    expect(code).toBe(status.OK);
  });

  it('closes a connection that does not finish its TLS handshake in time', async () => {
    const started = Date.now();
    const closedAfter = await new Promise<number>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(Date.now() - started));
      setTimeout(() => {
        socket.destroy();
        reject(new Error('the server kept a silent connection open for 8 s'));
      }, 8_000);
    });
    expect(closedAfter).toBeGreaterThanOrEqual(400);
    expect(closedAfter).toBeLessThan(5_000);
  }, 15_000);

  it('closes a connection without calls after the idle timeout (the client reconnects on its next call)', async () => {
    const c = connection();
    const list = () =>
      new Promise<status>((resolve) => {
        c.makeUnaryRequest('/herald.v1.JobService/ListJobs', identity, identity, Buffer.alloc(0), md(watcher), { deadline: Date.now() + 5_000 }, (err) => resolve(err ? err.code : status.OK));
      });
    expect(await list()).toBe(status.OK);
    expect(c.getChannel().getConnectivityState(false)).toBe(connectivityState.READY);
    const end = Date.now() + 6_000;
    while (c.getChannel().getConnectivityState(false) === connectivityState.READY && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
    expect(c.getChannel().getConnectivityState(false)).not.toBe(connectivityState.READY);
    expect(await list()).toBe(status.OK);
  }, 15_000);
});
