// The fixtures of the Worker library's scenarios: fake worker servers and workers with short
// timings, stopped after each test (stopAll), a gate to hold a handler, and a signal's abort.
import { Worker, type WorkerOptions } from '../../../src/client/worker/worker.js';
import type { RunAbortedError } from '../../../src/client/worker/handler-errors.js';
import { FakeWorkerServer } from './fake-worker-server.js';

let servers: FakeWorkerServer[] = [];
let workers: Worker[] = [];

export async function server(opts: ConstructorParameters<typeof FakeWorkerServer>[0] = {}): Promise<FakeWorkerServer> {
  const s = await FakeWorkerServer.start(opts);
  servers.push(s);
  return s;
}

export function worker(opts: Partial<WorkerOptions> & Pick<WorkerOptions, 'endpoints' | 'handlers'>): Worker {
  const w = new Worker({
    workerId: 'w-test',
    heartbeatIntervalMs: 20,
    reconnect: { initialBackoffMs: 10, maxBackoffMs: 50 },
    shutdownGraceMs: 2_000,
    abortWaitMs: 500,
    ...opts,
  });
  workers.push(w);
  return w;
}

/** A promise with its resolve exposed, to hold a handler until the test lets it go. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

export function aborted(signal: AbortSignal): Promise<RunAbortedError> {
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason as RunAbortedError), { once: true }));
}


/** Stops every worker and server the test made (afterEach). */
export async function stopAll(): Promise<void> {
  await Promise.all(workers.map((w) => w.shutdown({ graceMs: 0 })));
  await Promise.all(servers.map((s) => s.stop()));
  workers = [];
  servers = [];
}
