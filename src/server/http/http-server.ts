// A node's HTTP port: the public API as JSON / server-sent events (json-gateway.ts) and the
// dashboard (dashboard-assets.ts).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { RegisteredService } from '../grpc/recording-server.js';
import { loadProtoRegistry } from '../grpc/proto-descriptors.js';
import { PUBLIC_PROTO_FILES, protoRoot } from '../grpc/proto-files.js';
import { createJsonGateway } from './json-gateway.js';
import { dashboardAssets } from './dashboard-assets.js';

export interface HttpPort {
  readonly port: number;
  close(): Promise<void>;
}

export async function startHttpServer(o: { services: readonly RegisteredService[]; host: string; port: number; logger: Logger }): Promise<HttpPort> {
  const gateway = createJsonGateway(o.services, loadProtoRegistry(PUBLIC_PROTO_FILES, protoRoot()), o.logger);
  const assets = dashboardAssets();
  const server: Server = createServer((req, res) => {
    if (!gateway.handle(req, res)) assets.handle(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Watch streams never end by themselves.
        server.closeAllConnections();
      }),
  };
}
