// Steady-load fire lateness on a real 3-node cluster with worker processes.
// Run: npx tsx bench/steady.ts [--jobs 1000] [--seconds 60] [--workers 2] [--capacity 200] [--handler-ms 0]
//      [--server-flags "--fires-in-flight 2 ..."] [--watchers N] (N WatchRuns streams spread over the nodes)
//      [--secure] (TLS on both ports and auth: the creating client an operator token, workers a worker token)
// Jobs fire every second, their slots spread evenly over the second. After a warm-up, every slot
// in the measured window is checked: latenessMs = handler start (a Worker-library process whose
// handler is a no-op, bench-worker-process.ts) − slot time, and claimLatenessMs = claim time −
// slot time (the FSM's run.latenessMs); lost = a slot with no run record at all; notStarted = a
// run not started when the bench stopped (dispatch backlog: the cluster cannot sustain the
// rate); doubled = a run whose handler started more than once.
// The last stdout line is JSON.
import { JobSpec } from '../src/gen/herald/v1/job.js';
import { MAX_RETENTION_RUNS } from '../src/fsm/commands/validation.js';
import { sleep } from '../test/raft-runtime/helpers/cluster.js';
import { allRuns, SchedulerCluster } from '../test/dispatch/helpers/process-cluster.js';
import { strArg } from './lib/args.js';
import { BenchWorkers } from './lib/bench-workers.js';
import { BenchWatchers } from './lib/bench-watchers.js';
import { processCpuMs } from './lib/process-cpu.js';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
}
const JOBS = arg('jobs', 1000);
const SECONDS = arg('seconds', 60);
const WORKERS = arg('workers', 2);
const CAPACITY = arg('capacity', 200);
const HANDLER_MS = arg('handler-ms', 0);
const WARMUP_MS = 5_000;
const WATCHERS = arg('watchers', 0);
const SECURE = process.argv.includes('--secure');
if (SECURE && WATCHERS > 0) throw new Error('--secure with --watchers is not supported (the watchers connect without credentials)');

function pct(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]! : NaN;
}

// --server-flags "<flags>": extra `herald server` flags for every node (scheduler tuning).
const SERVER_FLAGS = strArg('server-flags', '').split(' ').filter((f) => f !== '');
const c = await SchedulerCluster.start({ leaseMs: 30_000, misfireThresholdMs: 60_000, heartbeatMs: 2000, extraArgs: SERVER_FLAGS, secure: SECURE });
let workers: BenchWorkers | undefined;
let watchers: BenchWatchers | undefined;
try {
  workers = await BenchWorkers.start({ endpoints: c.endpoints, count: WORKERS, capacity: CAPACITY, handlerMs: HANDLER_MS, idPrefix: 'sw', ...(c.workerAuth ? { auth: c.workerAuth } : {}) });
  watchers = await BenchWatchers.start(c.endpoints, WATCHERS);
  const base = Math.ceil(Date.now() / 1000) * 1000 + 2000;
  for (let i = 0; i < JOBS; i += 500) {
    const items = Array.from({ length: Math.min(500, JOBS - i) }, (_, k) => ({
      id: `steady-${i + k}`,
      spec: JobSpec.fromPartial({
        taskType: 'test',
        schedule: { kind: { $case: 'every', every: { intervalMs: 1000, anchorUnixMs: base + Math.floor(((i + k) * 1000) / JOBS) } } },
        // History long enough to hold every slot of the window when it is checked at the end (the
        // default max_runs, 100, trimmed a window over ~100 s, and its slots counted as lost).
        retention: { maxRuns: Math.min(MAX_RETENTION_RUNS, SECONDS + 120) },
      }),
    }));
    const res = await c.client.createJobs(items, { deadlineMs: 120_000 });
    const failed = res.filter((r) => r.error);
    if (failed.length) throw new Error(`create failed: ${failed[0]!.error!.message}`);
  }
  const from = Math.max(Date.now(), base) + WARMUP_MS;
  const to = from + SECONDS * 1000;
  await sleep(from - Date.now());
  // Raft entries committed over the window: each costs an fsync'd append and an apply on every
  // node, so under steady load their count (fires, claims, finishes) matters as much as the runs.
  const index0 = Number((await c.client.status()).commitIndex);
  // CPU of each server over the window, per run fired in it (JOBS a second).
  const leaderId = await c.raft.waitForLeader();
  const servers = [...c.raft.nodes.values()].map((n) => ({ role: n.id === leaderId ? 'leader' : 'follower', pid: n.proc!.pid! }));
  const cpu0 = await Promise.all(servers.map((s) => processCpuMs(s.pid)));
  await sleep(to - Date.now());
  const cpu1 = await Promise.all(servers.map((s) => processCpuMs(s.pid)));
  const entriesPerSecond = Math.round((Number((await c.client.status()).commitIndex) - index0) / SECONDS);
  const usPerRun = (i: number) => Math.round(((cpu1[i]! - cpu0[i]!) * 1000) / (JOBS * SECONDS));
  const cpuUsPerRun = {
    leader: usPerRun(servers.findIndex((s) => s.role === 'leader')),
    followers: servers.flatMap((s, i) => (s.role === 'follower' ? [usPerRun(i)] : [])),
  };
  await sleep(3000);
  const watched = await watchers?.finish();
  const { starts: assigned } = await workers.finish();

  const seen = new Map<string, number>();
  for (const a of assigned) seen.set(a.runId, (seen.get(a.runId) ?? 0) + 1);
  const doubled = [...seen.values()].filter((n) => n > 1).length;
  const measured = assigned.filter((a) => a.slotMs >= from && a.slotMs < to && a.attempt === 1);
  const workerLateness = measured.map((a) => a.at - a.scheduledMs).sort((a, b) => a - b);
  // Per second of the window (stderr): periodic stalls show up as a recurring bad second.
  const perSecond = new Map<number, number[]>();
  for (const a of measured) {
    const s = Math.floor((a.slotMs - from) / 1000);
    (perSecond.get(s) ?? perSecond.set(s, []).get(s)!).push(a.at - a.scheduledMs);
  }
  for (const [s, xs] of [...perSecond.entries()].sort((a, b) => a[0] - b[0])) {
    xs.sort((a, b) => a - b);
    process.stderr.write(`second ${s}: n=${xs.length} p50=${pct(xs, 0.5)} p99=${pct(xs, 0.99)} max=${xs[xs.length - 1]}\n`);
  }

  const { lateness, lost, notStarted, runs } = await c.stopAndInspect(async (fsm) => {
    const lateness: number[] = [];
    let lost = 0;
    let notStarted = 0;
    let runs = 0;
    for (let i = 0; i < JOBS; i++) {
      const rs = (await allRuns(fsm, `steady-${i}`)).filter((r) => r.slotUnixMs >= from && r.slotUnixMs < to);
      const expected = SECONDS; // one slot per second in [from, to)
      runs += rs.length;
      const started = rs.filter((r) => r.attempt > 0);
      lost += Math.max(0, expected - rs.length);
      notStarted += rs.length - started.length;
      lateness.push(...started.map((r) => r.latenessMs));
    }
    return { lateness: lateness.sort((a, b) => a - b), lost, notStarted, runs };
  });
  console.log(
    JSON.stringify({
      bench: 'steady',
      secure: SECURE,
      jobs: JOBS,
      seconds: SECONDS,
      workers: WORKERS,
      handlerMs: HANDLER_MS,
      runs,
      lost,
      notStarted,
      doubled,
      latenessMs: { p50: pct(workerLateness, 0.5), p99: pct(workerLateness, 0.99), max: workerLateness[workerLateness.length - 1] ?? NaN },
      claimLatenessMs: { p50: pct(lateness, 0.5), p99: pct(lateness, 0.99), max: lateness[lateness.length - 1] ?? NaN },
      entriesPerSecond,
      cpuUsPerRun,
      watchers: WATCHERS,
      watchEvents: watched ? { min: Math.min(...watched.events), max: Math.max(...watched.events), resets: watched.resets } : undefined,
    }),
  );
} finally {
  watchers?.kill();
  workers?.kill();
  await c.cleanup();
}
