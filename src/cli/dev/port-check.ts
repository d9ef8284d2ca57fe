// Dev checks its ports before starting any node: "port 7112 (n2 peer) is in use" says what to do,
// where a node's bind failure deep in its log does not.
import { createServer } from 'node:net';
import { UsageError } from '../usage-error.js';
import type { DevNodePorts } from './dev-ports.js';

function inUse(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(true));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(false)));
  });
}

export async function assertPortsFree(nodes: DevNodePorts[], withMetrics: boolean, withHttp: boolean): Promise<void> {
  const wanted = nodes.flatMap((n) => [
    { port: n.clientPort, what: `${n.id} client` },
    { port: n.peerPort, what: `${n.id} peer` },
    ...(withMetrics ? [{ port: n.metricsPort, what: `${n.id} metrics` }] : []),
    ...(withHttp ? [{ port: n.httpPort, what: `${n.id} HTTP` }] : []),
  ]);
  const busy = (await Promise.all(wanted.map(async (w) => ((await inUse(w.port)) ? w : undefined)))).filter((w) => w !== undefined);
  if (busy.length > 0) {
    throw new UsageError(
      `port${busy.length > 1 ? 's' : ''} ${busy.map((b) => `${b.port} (${b.what})`).join(', ')} in use: is another herald dev running? Stop it, or pick another --base-port with another --data-dir`,
    );
  }
}
