// The demo worker behind `herald worker` and `herald dev`: the SDK's Worker with an echo or exec
// handler for each task type, and its connection events reported on stderr.
import { Worker } from '../../client/worker/worker.js';
import type { ClientLogger } from '../../client/logger.js';
import type { Handler } from '../../client/worker/run-context.js';
import { echoHandler, type LineWriter } from './echo-handler.js';
import { execHandler } from './exec-handler.js';
import type { ClientTls } from '../../client/tls-options.js';
import { webhookHandler, type WebhookOptions } from './webhook-handler.js';

export interface DemoWorkerOptions {
  endpoints: string[];
  /** TLS to the cluster (from --ca/--cert/--key); plaintext when absent. */
  tls?: ClientTls;
  /** Bearer token (a worker token for the task types, or an admin token). */
  token?: string;
  taskTypes: string[];
  concurrency: number;
  /** Shell command per run; echo mode when undefined. */
  exec?: string | undefined;
  /** POST each run's payload to a URL (alert runs); neither echo nor exec. */
  webhook?: Omit<WebhookOptions, 'write' | 'json'> | undefined;
  workerId?: string | undefined;
  shutdownGraceMs?: number | undefined;
  json: boolean;
  /** Where run lines go (stdout for `herald worker`). */
  write: LineWriter;
  /** Where connection notices go (stderr). */
  notice: LineWriter;
  verbose?: boolean;
}

const REPEAT_QUIET_MS = 30_000;

function clean(text: string): string {
  return text.replace(/\s*Resolution note:\s*$/, '').replace(/\s*\n\s*/g, ' ');
}

/**
 * Forwards the SDK's warnings and errors (and with verbose, info) as single lines. While the
 * cluster is unreachable the worker retries with backoff and the same warning comes back every
 * few seconds; a repeat within 30 s is counted instead of printed.
 */
function lineLogger(notice: LineWriter, verbose: boolean): ClientLogger {
  const last = new Map<string, { at: number; repeats: number }>();
  const emit = (level: string) => (obj: object, msg?: string) => {
    const detail = Object.entries(obj)
      .filter(([, v]) => v !== undefined && (typeof v !== 'object' || v instanceof Error))
      .map(([k, v]) => `${k}=${clean(v instanceof Error ? v.message : String(v))}`)
      .join(' ');
    const line = `worker ${level}: ${msg ?? ''}${detail ? ` (${detail})` : ''}`;
    const now = Date.now();
    const prev = last.get(line);
    if (prev && now - prev.at < REPEAT_QUIET_MS) {
      prev.repeats += 1;
      return;
    }
    last.set(line, { at: now, repeats: 0 });
    if (last.size > 100) last.clear();
    notice(prev && prev.repeats > 0 ? `${line} [repeated ${prev.repeats}x]` : line);
  };
  const noop = () => {};
  return { debug: noop, info: verbose ? emit('info') : noop, warn: emit('warn'), error: emit('error') };
}

export function createDemoWorker(o: DemoWorkerOptions): Worker {
  const handler: Handler =
    o.webhook !== undefined
      ? webhookHandler({ ...o.webhook, write: o.write, json: o.json })
      : o.exec !== undefined
        ? execHandler(o.exec, o.write, o.json)
        : echoHandler(o.write, o.json);
  const worker = new Worker({
    endpoints: o.endpoints,
    tls: o.tls,
    ...(o.token !== undefined ? { token: o.token } : {}),
    handlers: Object.fromEntries(o.taskTypes.map((t) => [t, handler])),
    concurrency: o.concurrency,
    ...(o.workerId !== undefined ? { workerId: o.workerId } : {}),
    ...(o.shutdownGraceMs !== undefined ? { shutdownGraceMs: o.shutdownGraceMs } : {}),
    logger: lineLogger(o.notice, o.verbose ?? false),
    version: 'herald-cli-demo',
  });
  worker.on('connected', (address, nodeId) => o.notice(`worker ${worker.workerId} connected to ${nodeId} at ${address} (task types: ${o.taskTypes.join(', ')})`));
  // Only a lost connection is news; failed attempts to connect are the logger's (rate-limited) warnings.
  let wasConnected = false;
  worker.on('connected', () => (wasConnected = true));
  worker.on('disconnected', (address, err) => {
    if (!wasConnected) return;
    wasConnected = false;
    o.notice(`worker disconnected from ${address}${err ? `: ${clean(err.message)}` : ''}; reconnecting`);
  });
  return worker;
}
