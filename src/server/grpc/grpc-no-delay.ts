// grpc-js sets TCP_NODELAY on the sockets it dials but not on the ones its Server accepts, so a
// small unary response (a Forward result, a ReadIndex answer) can sit in Nagle's buffer until the
// client's delayed ACK fires: tens of milliseconds per request. We disable Nagle on every accepted
// socket. grpc-js keeps its http2 servers in a private map, so this reaches in, defensively: if
// the internals change, it does nothing (and the bench shows the latency again).

import type { Server } from '@grpc/grpc-js';
import type { Socket } from 'node:net';

interface ListeningServer {
  on(event: 'connection', fn: (socket: Socket) => void): void;
}

/** Call after bindAsync resolved. */
export function enableNoDelay(server: Server): boolean {
  const servers = (server as unknown as { http2Servers?: Map<ListeningServer, unknown> }).http2Servers;
  if (!(servers instanceof Map)) return false;
  for (const s of servers.keys()) {
    s.on('connection', (socket: Socket) => socket.setNoDelay(true));
  }
  return servers.size > 0;
}
