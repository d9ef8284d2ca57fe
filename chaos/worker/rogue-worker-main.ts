// A rogue chaos worker: speaks the worker protocol directly (the dispatch tests' RawWorker) and,
// like a buggy client, ignores lease loss — it keeps executing, writes its effect whatever the
// ledger says, and reports success with its old fencing token. The server's fencing must refuse
// those reports; with the FSM's accept-stale-tokens switch on, the chaos checkers must notice.
// Same ledger records and payload conventions as chaos-worker-main.ts; same environment (a secure
// run's CHAOS_CA and CHAOS_TOKEN included).
import { readFileSync } from 'node:fs';
import { credentials } from '@grpc/grpc-js';
import { RawWorker } from '../../test/dispatch/fixtures/raw-worker.js';
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
const post = async (path: string, body: unknown) => {
  const r = await fetch(`${ledger}${path}`, { method: 'POST', body: JSON.stringify(body) });
  return { status: r.status, json: (await r.json()) as Record<string, unknown> };
};

const worker = new RawWorker({
  endpoints: env('CHAOS_ENDPOINTS').split(','),
  ...(process.env.CHAOS_CA ? { credentials: credentials.createSsl(readFileSync(process.env.CHAOS_CA)) } : {}),
  ...(process.env.CHAOS_TOKEN ? { token: process.env.CHAOS_TOKEN } : {}),
  workerId,
  taskTypes: [CHAOS_TASK_TYPE],
  capacity: Number(process.env.CHAOS_CONCURRENCY ?? '4'),
  reportAfterLoss: true,
  handler: async (a) => {
    let spec: { failAttempts?: number; workMs?: number } = {};
    try {
      spec = JSON.parse(a.payload.toString('utf8')) as typeof spec;
    } catch {
      // no payload
    }
    const record = {
      runId: a.runId,
      jobId: a.jobId,
      slotMs: a.slotUnixMs,
      scheduledMs: a.scheduledUnixMs,
      fencingToken: a.fencingToken,
      attempt: a.attempt,
      workerId,
      startedMs: Date.now(),
    };
    const inv = await post('/invoke', record);
    if (inv.json.crash === 'before-effect') process.kill(process.pid, 'SIGKILL');
    if (a.attempt <= (spec.failAttempts ?? 0)) return false;
    // Ignores the abort signal on purpose.
    if (spec.workMs) await new Promise((r) => setTimeout(r, spec.workMs));
    await post('/effect', record);
    if (inv.json.crash === 'after-effect') process.kill(process.pid, 'SIGKILL');
    return true;
  },
});
worker.start();
process.stdout.write(JSON.stringify({ event: 'started', workerId, rogue: true }) + '\n');
const stop = () => {
  worker.stop();
  setTimeout(() => process.exit(0), 50);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
