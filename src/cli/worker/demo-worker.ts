// The demo worker behind `herald worker` and `herald dev`: the SDK's Worker with an echo or exec
// handler for each task type, and its connection events reported on stderr.
import { Worker } from '../../client/worker.js';
import type { ClientLogger } from '../../client/logger.js';
import type { Handler } from '../../client/run-context.js';
import { echoHandler, type LineWriter } from './echo-handler.js';
import { execHandler } from './exec-handler.js';

export interface DemoWorkerOptions {
  endpoints: string[];
  taskTypes: string[];
  concurrency: number;
  /** Shell command per run; echo mode when undefined. */
  exec?: string | undefined;
  workerId?: string | undefined;
  shutdownGraceMs?: number | undefined;
  json: boolean;
  /** Where run lines go (stdout for `herald worker`). */
  write: LineWriter;
  /** Where connection notices go (stderr). */
  notice: LineWriter;
  verbose?: boolean;
}

/** Forwards the SDK's warnings and errors (and with verbose, info) as single lines. */
function lineLogger(notice: LineWriter, verbose: boolean): ClientLogger {
  const emit = (level: string) => (obj: object, msg?: string) => {
    const detail = Object.entries(obj)
      .filter(([, v]) => v !== undefined && typeof v !== 'object')
      .map(([k, v]) => `${k}=${String(v)}`)
      .join(' ');
    notice(`worker ${level}: ${msg ?? ''}${detail ? ` (${detail})` : ''}`);
  };
  const noop = () => {};
  return { debug: noop, info: verbose ? emit('info') : noop, warn: emit('warn'), error: emit('error') };
}

export function createDemoWorker(o: DemoWorkerOptions): Worker {
  const handler: Handler = o.exec !== undefined ? execHandler(o.exec, o.write, o.json) : echoHandler(o.write, o.json);
  const worker = new Worker({
    endpoints: o.endpoints,
    handlers: Object.fromEntries(o.taskTypes.map((t) => [t, handler])),
    concurrency: o.concurrency,
    ...(o.workerId !== undefined ? { workerId: o.workerId } : {}),
    ...(o.shutdownGraceMs !== undefined ? { shutdownGraceMs: o.shutdownGraceMs } : {}),
    logger: lineLogger(o.notice, o.verbose ?? false),
    version: 'herald-cli-demo',
  });
  worker.on('connected', (address, nodeId) => o.notice(`worker ${worker.workerId} connected to ${nodeId} at ${address} (task types: ${o.taskTypes.join(', ')})`));
  worker.on('disconnected', (address, err) => o.notice(`worker disconnected from ${address}${err ? `: ${err.message}` : ''}; reconnecting`));
  return worker;
}
