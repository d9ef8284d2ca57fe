// Connection-level abuse limits (issue 29, connection-guard.ts) on a real grpc-js server on
// loopback: a connection that sends nothing is closed after the first-byte timeout while one that
// spoke stays; one address holds at most the cap, the next connection is closed at once, and a
// slot frees when a connection closes. Without the guard, silent connections stay open.
import { connect, type Socket } from 'node:net';
import { Server, ServerCredentials, credentials, Metadata } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { guardConnections, type ConnectionGuardStats } from '../../src/server/auth/connection-guard.js';
import { clientLimitsOf } from '../../src/server/auth/client-limits.js';
import { ClusterServiceClient } from '../../src/gen/herald/v1/cluster_service.js';

const servers: Server[] = [];
const sockets: Socket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const s of servers.splice(0)) s.forceShutdown();
});

async function serve(limits?: { maxConnectionsPerAddress: number; firstByteTimeoutMs: number }, stats?: ConnectionGuardStats): Promise<number> {
  const server = new Server();
  servers.push(server);
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
  if (limits) expect(guardConnections(server, limits, stats)).toBe(true);
  return port;
}

/** A raw TCP connection; resolves once connected, with a promise of its close. */
async function open(port: number): Promise<{ socket: Socket; closed: Promise<number> }> {
  const t0 = Date.now();
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  socket.on('error', () => undefined);
  const closed = new Promise<number>((r) => socket.once('close', () => r(Date.now() - t0)));
  // A connection refused over the cap may be reset before the client saw it connect.
  await Promise.race([new Promise<void>((resolve) => socket.once('connect', () => resolve())), closed]);
  return { socket, closed };
}

const within = <T>(p: Promise<T>, ms: number): Promise<T | 'open'> => Promise.race([p, new Promise<'open'>((r) => setTimeout(() => r('open'), ms))]);

describe('client port: connections per address and the first-byte timeout', () => {
  it('closes a connection that sends nothing; keeps one that spoke', async () => {
    const stats = { refusedOverCap: 0, closedSilent: 0 };
    const port = await serve({ maxConnectionsPerAddress: 0, firstByteTimeoutMs: 300 }, stats);
    const silent = await open(port);
    // A gRPC client speaks at once (the HTTP/2 preface): its connection stays past the timeout.
    const client = new ClusterServiceClient(`127.0.0.1:${port}`, credentials.createInsecure());
    try {
      const err = await new Promise<unknown>((r) => client.getStatus({}, new Metadata(), { deadline: Date.now() + 3_000 }, (e) => r(e)));
      expect((err as { code: number }).code).toBe(12); // UNIMPLEMENTED: connected, spoke, got an answer
      const closedAfter = await within(silent.closed, 5_000);
      expect(closedAfter).not.toBe('open');
      expect(closedAfter as number).toBeGreaterThanOrEqual(250);
      expect(stats.closedSilent).toBe(1);
      await new Promise((r) => setTimeout(r, 500));
      const again = await new Promise<unknown>((r) => client.getStatus({}, new Metadata(), { deadline: Date.now() + 3_000 }, (e) => r(e)));
      expect((again as { code: number }).code).toBe(12);
    } finally {
      client.close();
    }
  });

  it('one address holds at most the cap; the next is closed at once; a closed one frees its slot', async () => {
    const stats = { refusedOverCap: 0, closedSilent: 0 };
    const port = await serve({ maxConnectionsPerAddress: 3, firstByteTimeoutMs: 60_000 }, stats);
    const held = [await open(port), await open(port), await open(port)];
    const over = await open(port);
    expect(await within(over.closed, 3_000)).not.toBe('open');
    expect(stats.refusedOverCap).toBe(1);
    for (const h of held) expect(await within(h.closed, 200)).toBe('open');
    held[0]!.socket.destroy();
    await held[0]!.closed;
    await new Promise((r) => setTimeout(r, 100));
    const next = await open(port);
    expect(await within(next.closed, 500)).toBe('open');
    expect(stats.refusedOverCap).toBe(1);
  });

  it('without the guard a silent connection stays open (the control)', async () => {
    const port = await serve();
    const silent = await open(port);
    expect(await within(silent.closed, 800)).toBe('open');
  });

  it('the limits are flags with bounds', () => {
    expect(clientLimitsOf().maxConnectionsPerAddress).toBeGreaterThan(0);
    expect(() => clientLimitsOf({ firstByteTimeoutMs: 0 })).toThrow(/--first-byte-timeout-ms/);
    expect(() => clientLimitsOf({ maxConnectionsPerAddress: -1 })).toThrow(/--max-connections-per-address/);
  });
});
