import { createServer, type Server } from 'node:http';
import { LedgerState, parseEffectRecord } from './ledger-state.js';

/**
 * The ledger over HTTP (loopback, or the chaos bridge's address on a kernel network): POST /invoke, POST /effect (200 applied|replay, 409 stale),
 * GET /snapshot, POST /arm {mode, workerId?} (one-shot crash instruction), POST /disarm. It runs outside the faults, in its own process, so it outlives every node and
 * worker it judges.
 */
export async function startLedgerServer(port = 0, host = '127.0.0.1'): Promise<{ port: number; state: LedgerState; close(): Promise<void>; server: Server }> {
  const state = new LedgerState();
  const server = createServer((req, res) => {
    const reply = (code: number, body: unknown) => res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.method === 'GET' && req.url === '/snapshot') return reply(200, state.snapshot());
    if (req.method === 'POST' && req.url === '/disarm') return reply(200, { disarmed: state.disarm() });
    const routes = ['/invoke', '/effect', '/arm'];
    if (req.method !== 'POST' || !routes.includes(req.url ?? '')) return reply(404, { error: 'POST /invoke, /effect, /arm, /disarm or GET /snapshot' });
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => {
      text += d;
      if (text.length > 64 * 1024) req.destroy();
    });
    req.on('end', () => {
      if (req.url === '/arm') {
        let body: { mode?: unknown; workerId?: unknown };
        try {
          body = JSON.parse(text) as typeof body;
        } catch {
          return reply(400, { error: 'JSON body required' });
        }
        if (body.mode !== 'before-effect' && body.mode !== 'after-effect') return reply(400, { error: 'mode: before-effect or after-effect' });
        state.arm(body.mode, typeof body.workerId === 'string' ? body.workerId : undefined);
        return reply(200, { ok: true });
      }
      let record;
      try {
        record = parseEffectRecord(JSON.parse(text), Date.now());
      } catch (e) {
        return reply(400, { error: (e as Error).message });
      }
      if (req.url === '/invoke') {
        const crash = state.invoke(record);
        return reply(200, crash ? { ok: true, crash } : { ok: true });
      }
      const verdict = state.effect(record);
      return reply(verdict === 'stale' ? 409 : 200, { verdict });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const addr = server.address();
  return {
    port: typeof addr === 'object' && addr ? addr.port : 0,
    state,
    server,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
