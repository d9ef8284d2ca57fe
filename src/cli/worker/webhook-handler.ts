// Webhook mode of `herald worker` (--webhook URL): each run's payload — for alert runs, the event
// as JSON (docs/alerts.md) — is POSTed to the URL. The body is signed with HMAC-SHA256 under a
// shared secret (X-Herald-Signature: sha256=<hex>), and the run id is the Idempotency-Key, so a
// receiver can drop the duplicate a retry after a lost response would send. A 2xx succeeds; a 5xx,
// 408, 429, a timeout or a network error is a retryable failure (the run's retry policy backs off
// and tries again); any other status is not retryable (a retry would be refused alike).
import { createHmac } from 'node:crypto';
import { HandlerError, NonRetryableError } from '../../client/worker/handler-errors.js';
import type { Handler } from '../../client/worker/run-context.js';
import { describeRun, runLineJson, type LineWriter } from './echo-handler.js';

export interface WebhookOptions {
  readonly url: string;
  /** HMAC-SHA256 key; without one no signature header is sent. */
  readonly secret?: string | undefined;
  /** One attempt's request timeout. */
  readonly timeoutMs: number;
  readonly write: LineWriter;
  readonly json: boolean;
}

export const SIGNATURE_HEADER = 'X-Herald-Signature';

/** The signature header's value for `body` under `secret`: "sha256=" and the hex HMAC of the body's bytes. */
export function webhookSignature(secret: string, body: Uint8Array): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** Statuses a later attempt may turn into a success. */
function retryableStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

export function webhookHandler(o: WebhookOptions): Handler {
  return async (ctx) => {
    const started = Date.now();
    o.write(o.json ? runLineJson(ctx, 'run') : describeRun(ctx));
    const body = ctx.run.payload.length > 0 ? ctx.run.payload : Buffer.from('{}');
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'idempotency-key': ctx.run.id,
      'x-herald-run-id': ctx.run.id,
      'x-herald-job-id': ctx.run.jobId,
      'x-herald-attempt': String(ctx.attempt),
    };
    if (o.secret) headers[SIGNATURE_HEADER.toLowerCase()] = webhookSignature(o.secret, body);
    let res: Response;
    try {
      res = await fetch(o.url, { method: 'POST', headers, body, signal: AbortSignal.any([ctx.signal, AbortSignal.timeout(o.timeoutMs)]) });
    } catch (e) {
      const timedOut = e instanceof Error && e.name === 'TimeoutError';
      const why = timedOut ? `no response within ${o.timeoutMs} ms` : `request failed: ${e instanceof Error ? (e.cause instanceof Error ? e.cause.message : e.message) : String(e)}`;
      o.write(o.json ? runLineJson(ctx, 'failed', { durationMs: Date.now() - started, error: why }) : `run ${ctx.run.id} attempt ${ctx.attempt}: webhook ${why}`);
      throw new HandlerError(`webhook ${o.url}: ${why}`, { type: timedOut ? 'WebhookTimeout' : 'WebhookUnreachable', retryable: true });
    }
    // The body only for the message (bounded): a receiver's error page may be large.
    const text = (await res.text().catch(() => '')).slice(0, 500);
    const ms = Date.now() - started;
    if (res.ok) {
      o.write(o.json ? runLineJson(ctx, 'succeeded', { durationMs: ms, status: res.status }) : `run ${ctx.run.id} attempt ${ctx.attempt}: webhook answered ${res.status} in ${ms}ms`);
      return { status: res.status };
    }
    o.write(o.json ? runLineJson(ctx, 'failed', { durationMs: ms, status: res.status }) : `run ${ctx.run.id} attempt ${ctx.attempt}: webhook answered ${res.status} in ${ms}ms`);
    const message = `webhook ${o.url} answered ${res.status}${text ? `: ${text}` : ''}`;
    if (retryableStatus(res.status)) throw new HandlerError(message, { type: `WebhookHttp${res.status}`, retryable: true });
    throw new NonRetryableError(message, { type: `WebhookHttp${res.status}` });
  };
}
