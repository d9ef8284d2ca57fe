// A worker process for the benches: the Worker library (what users run) with a handler that only
// records the run and the instant it started — a no-op, as the peers' bench workers are — plus
// `--handler-ms` of simulated work when asked. Records stay in memory and reach the bench over IPC
// when it asks (`finish`): nothing per run crosses a process boundary while a scenario is measured,
// so the bench's own bookkeeping does not compete with the cluster for the machine's cores.
//
// Forked by bench-workers.ts from the compiled file (dist/bench/lib/bench-worker-process.js):
//   --endpoints a,b,c --id w1 --capacity 500 [--handler-ms 0] [--task-type test] [--ca file]
// (a secure cluster: --ca its CA file, the worker token in HERALD_BENCH_WORKER_TOKEN)
// IPC: bench → worker {cmd: 'progress' | 'finish'}; worker → bench {type: 'connected'},
// {type: 'progress', started, settled}, {type: 'records', ...BenchWorkerRecords} (then it exits).
import { readFileSync } from 'node:fs';
import { Worker } from '../../src/client/worker/worker.js';
import { numArg, strArg } from './args.js';

export interface BenchWorkerRecords {
  workerId: string;
  /** Per handler start, in start order. */
  runIds: string[];
  attempts: number[];
  slotMs: number[];
  scheduledMs: number[];
  /** Date.now() at handler start. */
  startedAt: number[];
  /** Results the cluster accepted (committed outcome), and refused. */
  accepted: number;
  refused: number;
}

export type BenchWorkerMessage =
  | { type: 'connected' }
  | { type: 'progress'; started: number; settled: number }
  | ({ type: 'records' } & BenchWorkerRecords);

export type BenchWorkerCommand = { cmd: 'progress' } | { cmd: 'finish' };

function main(): void {
  const send = (m: BenchWorkerMessage): void => void process.send!(m);
  const workerId = strArg('id', 'bench-worker');
  const handlerMs = numArg('handler-ms', 0);
  const records: BenchWorkerRecords = { workerId, runIds: [], attempts: [], slotMs: [], scheduledMs: [], startedAt: [], accepted: 0, refused: 0 };
  const sleep = (ms: number, signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
    });
  const worker = new Worker({
    endpoints: strArg('endpoints', '').split(','),
    ...(strArg('ca', '') ? { tls: { ca: readFileSync(strArg('ca', '')) } } : {}),
    ...(process.env.HERALD_BENCH_WORKER_TOKEN ? { token: process.env.HERALD_BENCH_WORKER_TOKEN } : {}),
    workerId,
    concurrency: numArg('capacity', 100),
    handlers: {
      [strArg('task-type', 'test')]: (ctx) => {
        records.runIds.push(ctx.run.id);
        records.attempts.push(ctx.attempt);
        records.slotMs.push(ctx.run.slotMs);
        records.scheduledMs.push(ctx.run.scheduledMs);
        records.startedAt.push(Date.now());
        return handlerMs > 0 ? sleep(handlerMs, ctx.signal) : undefined;
      },
    },
  });
  worker.on('settled', (s) => {
    if (s.accepted) records.accepted++;
    else records.refused++;
  });
  worker.once('connected', () => send({ type: 'connected' }));
  process.on('message', (m: BenchWorkerCommand) => {
    if (m.cmd === 'progress') send({ type: 'progress', started: records.runIds.length, settled: records.accepted + records.refused });
    if (m.cmd === 'finish') {
      void worker.shutdown({ graceMs: 2_000 }).finally(() => {
        process.send!({ type: 'records', ...records } satisfies BenchWorkerMessage, () => process.exit(0));
      });
    }
  });
  // The bench going away takes its workers with it.
  process.on('disconnect', () => process.exit(0));
  worker.start();
}

main();
