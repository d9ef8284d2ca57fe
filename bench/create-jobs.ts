// Create throughput through the batched API: N jobs (due far in the future, so nothing fires)
// created with CreateJobs on a real 3-node cluster, --batch jobs per call, --concurrency calls in
// flight. Each job carries its own idempotency key (the SDK's default), as a client would send it.
// Run: npx tsx bench/create-jobs.ts [--jobs 100000] [--batch 10000] [--concurrency 2]
// The last stdout line is JSON.
import { loadavg } from 'node:os';
import { JobSpec } from '../src/gen/herald/v1/job.js';
import { SchedulerCluster } from '../test/dispatch/helpers/process-cluster.js';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
}
const N = arg('jobs', 100_000);
const BATCH = arg('batch', 10_000);
const CONCURRENCY = arg('concurrency', 2);

const c = await SchedulerCluster.start({});
try {
  const at = Date.now() + 7 * 86_400_000;
  const spec = JobSpec.fromPartial({ taskType: 'test', schedule: { kind: { $case: 'at', at: { atUnixMs: at } } } });
  // Warm-up (connections, JIT), not counted.
  await c.client.createJobs(Array.from({ length: 1000 }, (_, k) => ({ id: `warm-${k}`, spec })), { deadlineMs: 120_000 });
  const load0 = loadavg()[0]!;
  let next = 0;
  let failed = 0;
  let firstError = '';
  const callMs: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < N) {
        const from = next;
        next = Math.min(N, next + BATCH);
        const t = performance.now();
        const res = await c.client.createJobs(
          Array.from({ length: next - from }, (_, k) => ({ id: `bulk-${from + k}`, spec })),
          { deadlineMs: 120_000 },
        );
        callMs.push(performance.now() - t);
        const bad = res.filter((r) => r.error);
        failed += bad.length;
        if (bad.length && !firstError) firstError = bad[0]!.error!.message;
      }
    }),
  );
  const ms = performance.now() - t0;
  callMs.sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      bench: 'create-jobs',
      jobs: N,
      batch: BATCH,
      concurrency: CONCURRENCY,
      createMs: Math.round(ms),
      jobsPerSec: Math.round(N / (ms / 1000)),
      failed,
      ...(firstError && { firstError }),
      callMs: { p50: Math.round(callMs[Math.floor(callMs.length / 2)]!), max: Math.round(callMs[callMs.length - 1]!) },
      loadAvg1m: { start: +load0.toFixed(1), end: +loadavg()[0]!.toFixed(1) },
    }),
  );
} finally {
  await c.raft.stopAll('SIGTERM').catch(() => undefined); // graceful: CPU profiles get written
  await c.cleanup();
}
