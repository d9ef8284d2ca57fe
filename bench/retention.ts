// Retention: N jobs firing every second whose task type no worker serves (issue 30), on a real
// 3-node cluster, for M minutes. Without retention for every outcome the store grows by N runs a
// second forever; with it, each job holds at most max_runs terminal runs (plus the trim slack)
// and its backlog at most max_pending_runs. Prints the stored run count (by state, read through
// the leader's /metrics gauges of the replicated counters) and the leader's RSS and V8 heap at the
// start, every --sample-seconds, and at the end: both should be flat once every job reached its
// retention (`steady`, the first sample from max_runs + 60 s, against `end`).
//
// Run: npm run bench -- retention [--jobs 1000] [--minutes 10] [--max-runs 100]
//      [--deadline-ms 1000 (0: no starting deadline; runs then stop at max_pending_runs)]
//      [--sample-seconds 60] [--server-flags "..."]
// The last stdout line is JSON.
import { JobSpec } from '../src/gen/herald/v1/job.js';
import { sleep } from '../test/raft-runtime/helpers/cluster.js';
import { createJobsReliably, SchedulerCluster } from '../test/dispatch/helpers/process-cluster.js';
import { numArg, strArg } from './lib/args.js';
import { useBenchPortBlock } from './lib/ports.js';
import { machineLoad, rssMiB, v8PagesResident } from './lib/machine.js';
import { hardRunSlack } from '../src/fsm/store/retention.js';

const JOBS = numArg('jobs', 1000);
const MINUTES = numArg('minutes', 10);
const MAX_RUNS = numArg('max-runs', 100);
const DEADLINE_MS = numArg('deadline-ms', 1000);
const SAMPLE_S = numArg('sample-seconds', 60);
const log = (m: string) => process.stderr.write(`[retention] ${m}\n`);

interface Sample {
  atS: number;
  storedRuns: number;
  byState: Record<string, number>;
  leaderRssMiB: number;
  /** The leader's RSS split: anonymous (owned) and file-backed (mapped LevelDB tables, page cache). */
  leaderAnonMiB: number;
  leaderFileMiB: number;
  /** The leader's V8 heap pages resident (pooled ones included): what of `anon` the JS heap holds. */
  leaderV8PagesMiB: number;
  /** V8 heap in use and memory held by buffers outside it (ArrayBuffers), from the leader's /metrics. */
  leaderHeapUsedMiB: number;
  /** V8 heap committed (what the heap holds of RSS, used or not). */
  leaderHeapTotalMiB: number;
  leaderExternalMiB: number;
  /** LevelDB's own estimate of its memory, per store (log, fsm). */
  leaderStoreMiB: Record<string, number>;
}

/**
 * The leader's own gauges: stored runs by state (the state machine's replicated counters, so no
 * paging through 100k runs under load) and its V8 heap, which tells heap growth from native memory.
 */
async function scrape(port: number): Promise<{ total: number; byState: Record<string, number>; heapUsedMiB: number; heapTotalMiB: number; externalMiB: number; storeMiB: Record<string, number> }> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(30_000) });
  const text = await res.text();
  const byState: Record<string, number> = {};
  let total = 0;
  let heapUsedMiB = NaN;
  let externalMiB = NaN;
  let heapTotalMiB = NaN;
  const storeMiB: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const runs = /^herald_runs\{state="([A-Z_]+)"[^}]*\} (\d+)/.exec(line);
    if (runs) {
      byState[runs[1]!] = Number(runs[2]);
      total += Number(runs[2]);
    }
    const heap = /^herald_process_nodejs_heap_size_used_bytes\{[^}]*\} (\S+)/.exec(line);
    if (heap) heapUsedMiB = Math.round(Number(heap[1]) / 1048576);
    const ext = /^herald_process_nodejs_external_memory_bytes\{[^}]*\} (\S+)/.exec(line);
    if (ext) externalMiB = Math.round(Number(ext[1]) / 1048576);
    const heapTotal = /^herald_process_nodejs_heap_size_total_bytes\{[^}]*\} (\S+)/.exec(line);
    if (heapTotal) heapTotalMiB = Math.round(Number(heapTotal[1]) / 1048576);
    const store = /^herald_store_memory_bytes\{store="(\w+)"[^}]*\} (\S+)/.exec(line);
    if (store) storeMiB[store[1]!] = Math.round(Number(store[2]) / 1048576);
  }
  return { total, byState, heapUsedMiB, heapTotalMiB, externalMiB, storeMiB };
}

useBenchPortBlock();
const loadAtStart = machineLoad();
const c = await SchedulerCluster.start({ extraArgs: ['--metrics-addr', '127.0.0.1:0', ...strArg('server-flags', '').split(' ').filter((f) => f !== '')] });
try {
  const items = Array.from({ length: JOBS }, (_, i) => ({
    id: `ret-${String(i).padStart(6, '0')}`,
    spec: JobSpec.fromPartial({
      taskType: 'unserved',
      schedule: { kind: { $case: 'every', every: { intervalMs: 1000, anchorUnixMs: 0 } } },
      startingDeadlineMs: DEADLINE_MS,
      retention: { maxRuns: MAX_RUNS },
    }),
  }));
  await createJobsReliably(c.client, items);
  const t0 = Date.now();
  log(`${JOBS} jobs created`);
  const samples: Sample[] = [];
  const sample = async (): Promise<Sample> => {
    const leader = c.raft.nodes.get(await c.raft.waitForLeader(30_000))!;
    const m = await scrape(leader.metricsPort!);
    const rss = rssMiB(leader.proc?.pid);
    const s = { atS: Math.round((Date.now() - t0) / 1000), storedRuns: m.total, byState: m.byState, leaderRssMiB: rss.rss, leaderAnonMiB: rss.anon, leaderFileMiB: rss.file, leaderV8PagesMiB: v8PagesResident(leader.proc?.pid).residentMiB, leaderHeapUsedMiB: m.heapUsedMiB, leaderHeapTotalMiB: m.heapTotalMiB, leaderExternalMiB: m.externalMiB, leaderStoreMiB: m.storeMiB };
    log(`${JSON.stringify(s)} (leader pid ${leader.proc?.pid})`);
    samples.push(s);
    return s;
  };
  const start = await sample();
  const endAt = t0 + MINUTES * 60_000;
  let failedSamples = 0;
  while (Date.now() < endAt) {
    await sleep(Math.min(SAMPLE_S * 1000, Math.max(0, endAt - Date.now())));
    // A sample the cluster cannot answer in time (an overloaded machine) is counted, not fatal.
    await sample().catch((e: unknown) => {
      failedSamples += 1;
      log(`sample failed: ${String(e)}`);
    });
  }
  const end = samples.at(-1)!;
  // Flat means flat once every job holds its retention (max_runs slots of 1 s plus a minute): the
  // first sample from then on against the last.
  const steady = samples.find((x) => x.atS >= MAX_RUNS + 60) ?? end;
  // The bound the store should hold once every job reached its retention: max_runs terminal runs
  // plus the trim slack (a tenth, at most 10) and the runs still waiting for their deadline.
  const slack = Math.min(10, Math.max(1, Math.ceil(MAX_RUNS / 10)));
  // Whether memory still climbs once steady: the least-squares slope over the steady samples and
  // the mean of their first half against their second (a GC or flush swings one sample by tens of
  // MiB, so two single samples say little about a trend).
  const steadySamples = samples.filter((x) => x.atS >= steady.atS);
  const trend = (pick: (x: Sample) => number) => {
    const n = steadySamples.length;
    if (n < 4) return undefined;
    const xs = steadySamples.map((x) => x.atS / 600);
    const ys = steadySamples.map(pick);
    const mx = xs.reduce((a, b) => a + b, 0) / n;
    const my = ys.reduce((a, b) => a + b, 0) / n;
    const slope = xs.reduce((a, x, i) => a + (x - mx) * (ys[i]! - my), 0) / xs.reduce((a, x) => a + (x - mx) ** 2, 0);
    const half = Math.floor(n / 2);
    const mean = (v: number[]) => Math.round(v.reduce((a, b) => a + b, 0) / v.length);
    return { slopePer10Min: +slope.toFixed(1), firstHalfMean: mean(ys.slice(0, half)), secondHalfMean: mean(ys.slice(n - half)), min: Math.min(...ys), max: Math.max(...ys) };
  };
  console.log(
    JSON.stringify({
      bench: 'retention',
      jobs: JOBS,
      minutes: MINUTES,
      maxRuns: MAX_RUNS,
      deadlineMs: DEADLINE_MS,
      start: { storedRuns: start.storedRuns, leaderRssMiB: start.leaderRssMiB, leaderAnonMiB: start.leaderAnonMiB, leaderFileMiB: start.leaderFileMiB },
      steady: { atS: steady.atS, storedRuns: steady.storedRuns, leaderRssMiB: steady.leaderRssMiB, leaderAnonMiB: steady.leaderAnonMiB, leaderFileMiB: steady.leaderFileMiB, leaderHeapUsedMiB: steady.leaderHeapUsedMiB },
      end: { storedRuns: end.storedRuns, byState: end.byState, leaderRssMiB: end.leaderRssMiB, leaderAnonMiB: end.leaderAnonMiB, leaderFileMiB: end.leaderFileMiB, leaderHeapUsedMiB: end.leaderHeapUsedMiB, leaderExternalMiB: end.leaderExternalMiB },
      steadyTrend: { fromS: steady.atS, samples: steadySamples.length, leaderRssMiB: trend((x) => x.leaderRssMiB), leaderAnonMiB: trend((x) => x.leaderAnonMiB), leaderV8PagesMiB: trend((x) => x.leaderV8PagesMiB), storedRuns: trend((x) => x.storedRuns) },
      boundRuns: JOBS * (MAX_RUNS + slack + Math.ceil(DEADLINE_MS / 1000) + 2),
      // What apply itself holds, however far the trimmer falls behind (apply-run-bound.ts).
      hardBoundRuns: JOBS * (MAX_RUNS + hardRunSlack(MAX_RUNS) + Math.ceil(DEADLINE_MS / 1000) + 2),
      samples: samples.map((s) => ({ atS: s.atS, storedRuns: s.storedRuns, leaderRssMiB: s.leaderRssMiB, leaderAnonMiB: s.leaderAnonMiB, leaderFileMiB: s.leaderFileMiB, leaderV8PagesMiB: s.leaderV8PagesMiB, leaderHeapUsedMiB: s.leaderHeapUsedMiB, leaderHeapTotalMiB: s.leaderHeapTotalMiB, leaderStoreMiB: s.leaderStoreMiB })),
      failedSamples,
      loadAtStart,
      loadAtEnd: machineLoad(),
    }),
  );
} finally {
  await c.cleanup();
}
