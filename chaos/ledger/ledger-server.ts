import { createServer, type Server } from 'node:http';
import { LedgerState, parseEffectRecord } from './ledger-state.js';

/**
 * The ledger over HTTP on loopback: POST /invoke, POST /effect (200 applied|replay, 409 stale),
 * GET /snapshot. It runs outside the faults, in its own process, so it outlives every node and
 * worker it judges.
 */
export async function startLedgerServer(port = 0): Promise<{ port: number; state: LedgerState; close(): Promise<void>; server: Server }> {
  const state = new LedgerState();
  const server = createServer((req, res) => {
    const reply = (code: number, body: unknown) => res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.method === 'GET' && req.url === '/snapshot') return reply(200, state.snapshot());
    if (req.method !== 'POST' || (req.url !== '/invoke' && req.url !== '/effect')) return reply(404, { error: 'POST /invoke, POST /effect or GET /snapshot' });
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => {
      text += d;
      if (text.length > 64 * 1024) req.destroy();
    });
    req.on('end', () => {
      let record;
      try {
        record = parseEffectRecord(JSON.parse(text), Date.now());
      } catch (e) {
        return reply(400, { error: (e as Error).message });
      }
      if (req.url === '/invoke') {
        state.invoke(record);
        return reply(200, { ok: true });
      }
      const verdict = state.effect(record);
      return reply(verdict === 'stale' ? 409 : 200, { verdict });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const addr = server.address();
  return {
    port: typeof addr === 'object' && addr ? addr.port : 0,
    state,
    server,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
