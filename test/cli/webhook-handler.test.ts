// The webhook executor of `herald worker --webhook` against a local HTTP server: the POST carries
// the payload, the HMAC signature and the run id as Idempotency-Key; a 2xx succeeds, a 5xx or a
// timeout is a retryable failure, another 4xx is not retryable.
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookHandler } from '../../src/cli/worker/webhook-handler.js';
import { HandlerError } from '../../src/client/worker/handler-errors.js';

let server: Server;
let url = '';
let status = 200;
let delayMs = 0;
const seen: { headers: IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      setTimeout(() => res.writeHead(status).end('nope'), delayMs);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

function ctx(payload: string) {
  const run = { id: 'herald:alerts:alerts@5~m0', jobId: 'herald:alerts:alerts', taskType: 'alerts', slotMs: 5, scheduledMs: 5, manual: true, backfilled: false, payload: Buffer.from(payload) };
  return { run, attempt: 2, fencingToken: 9, signal: new AbortController().signal } as never;
}

describe('webhook handler', () => {
  const handler = (timeoutMs = 2_000) => webhookHandler({ url, secret: 'k', timeoutMs, write: () => undefined, json: true });

  it('POSTs the payload signed, with the run id as Idempotency-Key; a 2xx succeeds', async () => {
    status = 204;
    delayMs = 0;
    await expect(handler()(ctx('{"event":"dead"}'))).resolves.toEqual({ status: 204 });
    const { headers, body } = seen.at(-1)!;
    expect(body).toBe('{"event":"dead"}');
    expect(headers['idempotency-key']).toBe('herald:alerts:alerts@5~m0');
    expect(headers['x-herald-signature']).toBe(`sha256=${createHmac('sha256', 'k').update(body).digest('hex')}`);
    expect(headers['x-herald-attempt']).toBe('2');
    expect(headers['content-type']).toBe('application/json');
  });

  it('a 5xx or a timeout is a retryable failure; a 4xx is not', async () => {
    status = 502;
    const e5 = await Promise.resolve(handler()(ctx('{}'))).catch((e: unknown) => e);
    expect(e5).toBeInstanceOf(HandlerError);
    expect(e5).toMatchObject({ type: 'WebhookHttp502', retryable: true });
    status = 401;
    expect(await Promise.resolve(handler()(ctx('{}'))).catch((e: unknown) => e)).toMatchObject({ type: 'WebhookHttp401', retryable: false });
    status = 200;
    delayMs = 500;
    expect(await Promise.resolve(handler(100)(ctx('{}'))).catch((e: unknown) => e)).toMatchObject({ type: 'WebhookTimeout', retryable: true });
    delayMs = 0;
  });
});
