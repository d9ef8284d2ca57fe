// A round-time herd: N one-off jobs due at one instant on a real 3-node cluster with worker
// processes. Reports how long firing and draining (all runs executed and their results committed)
// took after the instant, with lateness percentiles as the handlers saw them, and the CPU each
// process used per run over the drain (drainCpuUsPerRun: the figure to compare on a shared
// machine, where the drain time also counts waiting for a core).
// Workers are the Worker library with a no-op handler (bench-worker-process.ts), as BullMQ's bench
// worker is; they report what they saw only after the drain.
// Run: npx tsx bench/herd.ts [--runs 100000] [--workers 2] [--capacity 1000] [--handler-ms 0] [--warmup 0] [--fire-batch N (server default)]
//      [--server-flags "--follower-apply-window-ms 0 ..."] (extra `herald server` flags for every node)
//      [--lead-seconds S] (the instant S s after the creates start; default from a calibrated create rate)
//      [--watchers N] (N WatchRuns streams, unfiltered, spread over the nodes, attached through the herd)
//      [--secure] (TLS on both ports and auth: the creating client an operator token, workers a worker token)
//      [--cron-jitter-ms J] (the midnight herd: N daily cron jobs due at one round instant, each with a
//      J ms jitter window — lateness is counted from each run's jittered instant, and the report
//      gives how evenly the starts spread over the window's seconds)
// The last stdout line is JSON.
import { JobSpec } from '../src/gen/herald/v1/job.js';
import { RunState } from '../src/gen/herald/v1/run.js';
import { sleep, waitFor } from '../test/raft-runtime/helpers/cluster.js';
import { SchedulerCluster } from '../test/dispatch/helpers/process-cluster.js';
import { BenchWorkers } from './lib/bench-workers.js';
import { processCpuMs, processThreadCpuMs, threadCpuDelta } from './lib/process-cpu.js';
import { strArg } from './lib/args.js';
import { BenchWatchers } from './lib/bench-watchers.js';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
}
const N = arg('runs', 100_000);
const WORKERS = arg('workers', 2);
const CAPACITY = arg('capacity', 1000);
const HANDLER_MS = arg('handler-ms', 0);
const JITTER_MS = arg('cron-jitter-ms', 0);
// --warmup N: a herd of N runs goes first (created, fired, drained), so the measured herd meets
// servers whose hot paths are already compiled, as a cluster that has been running would. Off
// (0) by default and in `compare`: the peers' runs start cold too.
const WARMUP = arg('warmup', 0);
// --lead-seconds S: the herd's instant S seconds after the creates start (default: from the
// calibrated create rate, 1.5× the time N creates should take, plus 5 s).
const LEAD_S = arg('lead-seconds', 0);
const BATCH = 1000;
const WATCHERS = arg('watchers', 0);
const SECURE = process.argv.includes('--secure');
if (SECURE && WATCHERS > 0) throw new Error('--secure with --watchers is not supported (the watchers connect without credentials)');

function pct(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]! : NaN;
}

const FIRE_BATCH = arg('fire-batch', 0);
// The herd is a deliberate overload: its last slots wait for workers about as long as the drain
// takes, which is neither a misfire nor a stalled scheduler (the watchdog), so both bounds are far.
const c = await SchedulerCluster.start({
  leaseMs: 120_000,
  misfireThresholdMs: 600_000,
  watchdogGraceMs: 600_000,
  heartbeatMs: 5000,
  secure: SECURE,
  extraArgs: [...(FIRE_BATCH > 0 ? ['--fire-batch', String(FIRE_BATCH)] : []), ...strArg('server-flags', '').split(' ').filter((f) => f !== '')],
});
let workers: BenchWorkers | undefined;
let watchers: BenchWatchers | undefined;
try {
  workers = await BenchWorkers.start({ endpoints: c.endpoints, count: WORKERS, capacity: CAPACITY, handlerMs: HANDLER_MS, idPrefix: 'hw', ...(c.workerAuth ? { auth: c.workerAuth } : {}) });
  watchers = await BenchWatchers.start(c.endpoints, WATCHERS);
  const spec = (at: number) => JobSpec.fromPartial({ taskType: 'test', schedule: { kind: { $case: 'at', at: { atUnixMs: at } } } });
  // A daily cron at the herd's instant (UTC) with a jitter window.
  const herdSpec = (at: number) => {
    if (JITTER_MS <= 0) return spec(at);
    const d = new Date(at);
    const expression = `${d.getUTCMinutes()} ${d.getUTCHours()} * * *`;
    return JobSpec.fromPartial({ taskType: 'test', jitterMs: JITTER_MS, schedule: { kind: { $case: 'cron', cron: { expression, timeZone: 'UTC' } } } });
  };
  if (WARMUP > 0) {
    const warmAt = Date.now() + 2000 + WARMUP / 2;
    for (let i = 0; i < WARMUP; i += BATCH) {
      await c.client.createJobs(Array.from({ length: Math.min(BATCH, WARMUP - i) }, (_, k) => ({ id: `warm-${i + k}`, spec: spec(warmAt) })), { deadlineMs: 120_000 });
    }
    const w = workers;
    await waitFor('the warm-up herd to drain', async () => (await w.settled()) >= WARMUP, 10 * 60_000, 100);
  }
  // Calibrate the create rate (jobs far in the future, not part of the herd) to pick an instant
  // that falls after every herd job exists: the median of three batches (the first meets cold
  // code and would put a million-job herd's instant a quarter of an hour away), or --lead-seconds.
  const batchMs: number[] = [];
  for (let b = 0; b < 3; b++) {
    const t0 = Date.now();
    await c.client.createJobs(Array.from({ length: BATCH }, (_, k) => ({ id: `calib-${b}-${k}`, spec: spec(Date.now() + 86_400_000) })), { deadlineMs: 120_000 });
    batchMs.push(Date.now() - t0);
  }
  const perJobMs = batchMs.sort((a, b) => a - b)[1]! / BATCH;
  const leadMs = LEAD_S > 0 ? LEAD_S * 1000 : Math.ceil(perJobMs * N * 1.5) + 5000;
  // A whole second; with a jitter window a whole minute, as a cron job's (`M H * * *`, UTC).
  const round = JITTER_MS > 0 ? 60_000 : 1000;
  const at = Math.ceil((Date.now() + leadMs) / round) * round;
  const c0 = Date.now();
  for (let i = 0; i < N; i += BATCH) {
    const res = await c.client.createJobs(
      Array.from({ length: Math.min(BATCH, N - i) }, (_, k) => ({ id: `herd-${i + k}`, spec: herdSpec(at) })),
      { deadlineMs: 120_000 },
    );
    const failed = res.filter((r) => r.error);
    if (failed.length) throw new Error(`create failed: ${failed[0]!.error!.message}`);
  }
  const createMs = Date.now() - c0;
  const createdBeforeInstant = Date.now() < at;
  await sleep(Math.max(0, at - Date.now()));
  // CPU of each process over the drain (user + system, all threads: LevelDB's included).
  const leaderId = await c.raft.waitForLeader();
  const servers = [...c.raft.nodes.values()].map((n) => ({ role: n.id === leaderId ? 'leader' : 'follower', pid: n.proc!.pid! }));
  const pids = [...servers.map((s) => s.pid), ...workers.pids];
  const index0 = Number((await c.client.status()).commitIndex);
  const cpu0 = await Promise.all(pids.map(processCpuMs));
  const threads0 = await Promise.all(servers.map((s) => processThreadCpuMs(s.pid)));
  // Every result settled (the calibration jobs are a day away: only herd runs execute).
  const running = workers;
  await waitFor('the herd to drain', async () => (await running.settled()) >= N + WARMUP, 30 * 60_000, 100);
  const drainMs = Date.now() - at;
  const cpu1 = await Promise.all(pids.map(processCpuMs));
  const threads1 = await Promise.all(servers.map((s) => processThreadCpuMs(s.pid)));
  // Raft entries over the drain: how many runs each replicated command carried on average.
  const drainEntries = Number((await c.client.status()).commitIndex) - index0;
  const usPerRun = (i: number) => Math.round(((cpu1[i]! - cpu0[i]!) * 1000) / N);
  const drainCpuUsPerRun = {
    leader: usPerRun(servers.findIndex((s) => s.role === 'leader')),
    followers: servers.flatMap((s, i) => (s.role === 'follower' ? [usPerRun(i)] : [])),
    workers: workers.pids.reduce((sum, _, i) => sum + usPerRun(servers.length + i), 0),
  };
  // Of the servers' figures, what ran off the JavaScript thread (LevelDB writes and compaction, GC helpers).
  const offMain = (i: number) => Math.round(((threads1[i]!.other - threads0[i]!.other) * 1000) / N);
  const drainOffMainThreadUsPerRun = {
    leader: offMain(servers.findIndex((s) => s.role === 'leader')),
    followers: servers.flatMap((s, i) => (s.role === 'follower' ? [offMain(i)] : [])),
  };
  // The leader's busiest threads over the drain (µs per run): which helper the off-main share is.
  const li = servers.findIndex((s) => s.role === 'leader');
  const leaderThreadsUsPerRun = Object.fromEntries(
    threadCpuDelta(threads0[li]!.byThread, threads1[li]!.byThread)
      .slice(0, 8)
      .map((t) => [t.thread, Math.round((t.ms * 1000) / N)]),
  );
  const watched = await watchers?.finish();
  const { starts, accepted, refused } = await workers.finish();
  const herd = starts.filter((a) => a.runId.startsWith('herd-'));
  const doubled = herd.length - new Set(herd.map((a) => a.runId)).size;
  const lateness = herd.map((a) => a.at - a.scheduledMs).sort((a, b) => a - b);
  const latenessPct = { p50: pct(lateness, 0.5), p99: pct(lateness, 0.99), max: lateness[lateness.length - 1] ?? NaN };
  // With a jitter window: starts (and jittered instants) per second of the window, against an
  // even share (N / the window's seconds); the busiest second's ratio to that share.
  const spread = (() => {
    if (JITTER_MS <= 0) return undefined;
    const seconds = Math.ceil(JITTER_MS / 1000);
    const share = herd.length / seconds;
    const busiest = (times: number[]) => {
      const perSecond = new Map<number, number>();
      for (const t of times) {
        const k = Math.floor((t - at) / 1000);
        perSecond.set(k, (perSecond.get(k) ?? 0) + 1);
      }
      let max = 0;
      for (const v of perSecond.values()) max = Math.max(max, v);
      return { max, ratioToShare: Number((max / share).toFixed(2)), secondsUsed: perSecond.size };
    };
    // Where in the window the runs more than 100 ms late were due (second -> count).
    const lateBySecond: Record<number, number> = {};
    for (const a of herd) {
      if (a.at - a.scheduledMs <= 100) continue;
      const k = Math.floor((a.scheduledMs - at) / 1000);
      lateBySecond[k] = (lateBySecond[k] ?? 0) + 1;
    }
    return { windowSeconds: seconds, evenShare: Math.round(share), starts: busiest(herd.map((a) => a.at)), jitteredInstants: busiest(herd.map((a) => a.scheduledMs)), lateBySecond };
  })();
  // The drain counted from the end of the jitter window (the last instant a run was due).
  const drainAfterWindowMs = JITTER_MS > 0 ? drainMs - JITTER_MS : undefined;
  const counts = await c.stopAndInspect((fsm) => fsm.runCounts());
  console.log(
    JSON.stringify({
      bench: 'herd',
      mode: JITTER_MS > 0 ? 'cron-jitter' : 'one-off',
      jitterMs: JITTER_MS,
      secure: SECURE,
      runs: N,
      workers: WORKERS,
      capacityPerWorker: CAPACITY,
      handlerMs: HANDLER_MS,
      warmupRuns: WARMUP,
      watchers: WATCHERS,
      // Run changes each watcher received (fewest, most) and the resets (OUT_OF_RANGE) among them.
      watchEvents: watched ? { min: Math.min(...watched.events), max: Math.max(...watched.events), resets: watched.resets } : undefined,
      createMs,
      createdBeforeInstant,
      drainMs,
      drainAfterWindowMs,
      spread,
      drainCpuUsPerRun,
      drainOffMainThreadUsPerRun,
      leaderThreadsUsPerRun,
      drainEntries,
      // The herd's own (the warm-up's runs all succeeded before it was created).
      succeeded: (counts.get(RunState.RUN_STATE_SUCCEEDED) ?? 0) - WARMUP,
      resultsAccepted: accepted - WARMUP,
      resultsRefused: refused,
      started: herd.length,
      lost: N - new Set(herd.map((a) => a.runId)).size,
      doubled,
      // Handler start − scheduled instant (slot + jitter; the same figure under both names: compare reads startLatenessMs).
      latenessMs: latenessPct,
      startLatenessMs: latenessPct,
    }),
  );
} finally {
  watchers?.kill();
  workers?.kill();
  await c.cleanup();
}
