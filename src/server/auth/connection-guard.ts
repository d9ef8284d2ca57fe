// Connection-level abuse limits on the client port (issue 29), below gRPC: how many TCP
// connections one remote address may hold at once, and how long a connection may stay silent
// before its first byte. Both act on the accepted socket, before TLS or HTTP/2 spend anything on
// it: a flood of idle connections from one host, or connections that never speak (a plaintext
// port has no TLS handshake timeout to end them), are closed. Over the cap a connection is closed
// at once with a TCP reset (the caller sees a broken connection, not a status) and counted in
// what the guard returns.
// grpc-js keeps its http2 servers in a private map (as grpc-no-delay.ts notes): if that changes,
// the guard attaches to nothing and says so (returns false), and the gRPC-level caps still hold.
import type { Server } from '@grpc/grpc-js';
import type { Socket } from 'node:net';
import type { ClientLimits } from './client-limits.js';

interface ListeningServer {
  on(event: 'connection', fn: (socket: Socket) => void): void;
}

export interface ConnectionGuardStats {
  /** Connections closed because their address held the most it may. */
  refusedOverCap: number;
  /** Connections closed because they sent nothing within the first-byte timeout. */
  closedSilent: number;
}

/** Call after bindAsync resolved. `stats` is updated as connections are refused or closed. */
export function guardConnections(server: Server, limits: Pick<ClientLimits, 'maxConnectionsPerAddress' | 'firstByteTimeoutMs'>, stats: ConnectionGuardStats = { refusedOverCap: 0, closedSilent: 0 }): boolean {
  const servers = (server as unknown as { http2Servers?: Map<ListeningServer, unknown> }).http2Servers;
  if (!(servers instanceof Map) || servers.size === 0) return false;
  const open = new Map<string, number>();
  const onConnection = (socket: Socket): void => {
    const addr = socket.remoteAddress ?? '';
    const held = open.get(addr) ?? 0;
    if (limits.maxConnectionsPerAddress > 0 && held >= limits.maxConnectionsPerAddress) {
      stats.refusedOverCap += 1;
      socket.resetAndDestroy();
      return;
    }
    open.set(addr, held + 1);
    // bytesRead rather than a 'data' listener: the socket's bytes belong to TLS / HTTP/2.
    const timer = setTimeout(() => {
      if (socket.bytesRead > 0 || socket.destroyed) return;
      stats.closedSilent += 1;
      // A reset: once HTTP/2 holds the socket, destroy() leaves the connection open.
      socket.resetAndDestroy();
    }, limits.firstByteTimeoutMs);
    timer.unref();
    socket.once('close', () => {
      clearTimeout(timer);
      const n = (open.get(addr) ?? 1) - 1;
      if (n <= 0) open.delete(addr);
      else open.set(addr, n);
    });
  };
  for (const s of servers.keys()) s.on('connection', onConnection);
  return true;
}
