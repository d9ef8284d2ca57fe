// A chaos worker process: the Worker library with one handler that records, in the ledger, the
// raw invocation at handler start and then one fenced effect (run id + fencing token), the way a
// real handler would write to a downstream system. The job payload says how the handler behaves:
// {"failAttempts":n} fails attempts 1..n (retryable), {"workMs":n} works that long first.
// The ledger may answer an invocation with a crash instruction (the nemesis's "kill -9 before
// the effect" / "after the effect, before the ack"): the process then SIGKILLs itself there.
//
// Run: node --import tsx chaos/worker/chaos-worker-main.ts   (configuration in the environment:
// CHAOS_ENDPOINTS a,b,c  CHAOS_LEDGER http://127.0.0.1:p  CHAOS_WORKER_ID  CHAOS_CONCURRENCY;
// a secure run adds CHAOS_CA, the cluster's CA file, and CHAOS_TOKEN, a worker-role token)
import { readFileSync } from 'node:fs';
import { Worker } from '../../src/client/worker/worker.js';
import { HandlerError } from '../../src/client/worker/handler-errors.js';
import type { RunContext } from '../../src/client/worker/run-context.js';
import { CHAOS_TASK_TYPE } from './task-type.js';
import { exitWithParent } from '../orchestrator/exit-with-parent.js';

exitWithParent();

const env = (k: string): string => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is required`);
  return v;
};
const ledger = env('CHAOS_LEDGER');
const workerId = env('CHAOS_WORKER_ID');

async function post(path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const r = await fetch(`${ledger}${path}`, { method: 'POST', body: JSON.stringify(body) });
  return { status: r.status, json: (await r.json()) as Record<string, unknown> };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });
}

async function handle(ctx: RunContext): Promise<unknown> {
  let spec: { failAttempts?: number; workMs?: number } = {};
  try {
    spec = ctx.json();
  } catch {
    // no payload
  }
  const record = {
    runId: ctx.run.id,
    jobId: ctx.run.jobId,
    slotMs: ctx.run.slotMs,
    scheduledMs: ctx.run.scheduledMs,
    fencingToken: ctx.fencingToken,
    attempt: ctx.attempt,
    workerId,
    startedMs: Date.now(),
  };
  const inv = await post('/invoke', record);
  if (inv.json.crash === 'before-effect') process.kill(process.pid, 'SIGKILL');
  if (ctx.attempt <= (spec.failAttempts ?? 0)) throw new HandlerError(`planned failure of attempt ${ctx.attempt}`, { type: 'ChaosPlanned' });
  if (spec.workMs) await sleep(spec.workMs, ctx.signal);
  // A lost lease or a cancel: do not write (the library would not report the outcome anyway).
  if (ctx.signal.aborted) throw ctx.signal.reason instanceof Error ? ctx.signal.reason : new Error('aborted');
  const eff = await post('/effect', record);
  if (inv.json.crash === 'after-effect') process.kill(process.pid, 'SIGKILL');
  if (eff.status === 409) throw new HandlerError('the ledger fenced this attempt out (a newer token exists)', { type: 'Fenced' });
  return { verdict: eff.json.verdict };
}

const worker = new Worker({
  endpoints: env('CHAOS_ENDPOINTS').split(','),
  ...(process.env.CHAOS_CA ? { tls: { ca: readFileSync(process.env.CHAOS_CA) } } : {}),
  ...(process.env.CHAOS_TOKEN ? { token: process.env.CHAOS_TOKEN } : {}),
  workerId,
  concurrency: Number(process.env.CHAOS_CONCURRENCY ?? '4'),
  handlers: { [CHAOS_TASK_TYPE]: handle },
  reconnect: { initialBackoffMs: 50, maxBackoffMs: 1_000 },
  shutdownGraceMs: 2_000,
  abortWaitMs: 500,
});
worker.on('connected', (address, nodeId) => process.stdout.write(JSON.stringify({ event: 'connected', address, nodeId }) + '\n'));
worker.start();
process.stdout.write(JSON.stringify({ event: 'started', workerId }) + '\n');
const stop = () => void worker.shutdown({ graceMs: 1_000 }).finally(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
