// Starts a real grpc-js server on 127.0.0.1:0 with the given services, for tests.
import { Server, ServerCredentials, type ServiceDefinition, type UntypedServiceImplementation } from '@grpc/grpc-js';

export interface TestServer {
  address: string;
  port: number;
  server: Server;
  /** Stops the server at once (open streams and calls are cancelled). */
  stop(): Promise<void>;
}

export async function startTestServer(
  services: Array<[ServiceDefinition, UntypedServiceImplementation]>,
  port = 0,
): Promise<TestServer> {
  const server = new Server();
  for (const [def, impl] of services) server.addService(def, impl);
  const boundPort = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
  });
  let stopped = false;
  return {
    address: `127.0.0.1:${boundPort}`,
    port: boundPort,
    server,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      server.forceShutdown();
    },
  };
}

/** Polls `cond` until it holds, failing after `timeoutMs` with `what` in the message. */
export async function waitFor(cond: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
