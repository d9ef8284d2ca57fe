import { timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface MetricsServerOptions {
  /**
   * A file holding the bearer token a scraper must send (`Authorization: Bearer <token>`); read on
   * every scrape, so replacing the file rotates the token without a restart. Absent: /metrics is
   * open (it carries counts, never payloads or secrets).
   */
  tokenFile?: string;
}

/** Whether the request carries the token in the file; a missing or empty file refuses everyone. */
function authorized(header: string | undefined, tokenFile: string): boolean {
  let expected: string;
  try {
    expected = readFileSync(tokenFile, 'utf8').trim();
  } catch {
    return false;
  }
  const m = /^Bearer\s+(\S+)$/i.exec(header ?? '');
  if (!m || expected === '') return false;
  const a = Buffer.from(m[1]!);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Serves GET /metrics (Prometheus text format) on its own HTTP listener. */
export async function startMetricsServer(
  registry: Registry,
  host: string,
  port: number,
  o: MetricsServerOptions = {},
): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try GET /metrics\n');
      return;
    }
    if (o.tokenFile !== undefined && !authorized(req.headers.authorization, o.tokenFile)) {
      res
        .writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer realm="herald-metrics"' })
        .end('unauthorized: send `Authorization: Bearer <token>` with the token in this node\'s --metrics-token-file\n');
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { 'content-type': registry.contentType }).end(body),
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${String(err)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    server,
    port: bound,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
