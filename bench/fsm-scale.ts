// Scale bench of the scheduler FSM (issue 5, DESIGN I6):
//  - due-window read cost (a window holding 1,000 slots) with 10,000 jobs stored and with N jobs
//    stored (default 1,000,000): the cost should follow the slots in the window, not the jobs;
//  - apply of one 10,000-slot fireRuns batch (slots/s).
// Jobs are loaded through apply itself (putJob entries, large batches per apply call), so the
// store holds exactly what a cluster would. Prints one JSON line.
//
//   npx tsx bench/fsm-scale.ts [--jobs N] [--dir PATH]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JobSpec } from '../src/gen/herald/v1/job.js';
import { decodeResult, encodeCommand, SchedulerStateMachine } from '../src/fsm/index.js';
import type { Entry } from '../src/raft/types.js';

const args = process.argv.slice(2);
const argOf = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const TOTAL = Number(argOf('--jobs') ?? 1_000_000);
const SMALL = Math.min(10_000, TOTAL);
const WINDOW_SLOTS = 1000;
const FIRE_SLOTS = Math.min(10_000, TOTAL);
const LOAD_BATCH = 5000;
const T0 = Date.UTC(2030, 0, 1);
/** Job i fires daily at T0 + i * STEP: a window of 1,000 slots is 1,000 * STEP long at any N. */
const STEP = 10;
const DAY = 86_400_000;

let index = 0;
async function applyCmds(fsm: SchedulerStateMachine, datas: Uint8Array[]): Promise<Uint8Array[]> {
  const entries: Entry[] = datas.map((data) => ({ term: 1, index: ++index, type: 'normal', data }));
  return fsm.apply(entries);
}

function jobSpec(i: number): JobSpec {
  return JobSpec.fromPartial({
    taskType: `type-${i % 8}`,
    schedule: { kind: { $case: 'every', every: { intervalMs: DAY, anchorUnixMs: T0 + i * STEP } } },
    labels: { shard: String(i % 16) },
  });
}

async function load(fsm: SchedulerStateMachine, from: number, to: number): Promise<number> {
  const start = performance.now();
  for (let i = from; i < to; i += LOAD_BATCH) {
    const datas: Uint8Array[] = [];
    for (let k = i; k < Math.min(to, i + LOAD_BATCH); k++) {
      datas.push(encodeCommand({ type: 'putJob', nowMs: T0 - 1, jobId: `job-${String(k).padStart(8, '0')}`, spec: jobSpec(k), idempotencyKey: '' }));
    }
    await applyCmds(fsm, datas);
  }
  return performance.now() - start;
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

/**
 * Reads windows of WINDOW_SLOTS slots among the first `jobs` jobs: at random positions (block
 * cache mostly cold for large N), or the same window again and again (warm: the pure cost of the
 * range read).
 */
async function measureWindows(fsm: SchedulerStateMachine, jobs: number, mode: 'random' | 'same', reps = 300): Promise<{ p50Ms: number; p99Ms: number; slots: number }> {
  const times: number[] = [];
  let seed = 12345;
  let slots = 0;
  for (let r = 0; r < reps + 20; r++) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    const first = mode === 'same' ? Math.floor(jobs / 2) * STEP : (seed % Math.max(1, jobs - WINDOW_SLOTS)) * STEP;
    const from = T0 + first;
    const t = performance.now();
    const due = await fsm.dueWindow(from, from + WINDOW_SLOTS * STEP, 10 * WINDOW_SLOTS);
    const dt = performance.now() - t;
    if (r >= 20) times.push(dt); // first reads warm the block cache
    slots = due.length;
  }
  return { p50Ms: +quantile(times, 0.5).toFixed(3), p99Ms: +quantile(times, 0.99).toFixed(3), slots };
}

async function main(): Promise<void> {
  const dir = argOf('--dir') ?? (await mkdtemp(join(tmpdir(), 'herald-fsm-bench-')));
  const fsm = await SchedulerStateMachine.open(dir);
  try {
    const loadSmallMs = await load(fsm, 0, SMALL);
    const small = await measureWindows(fsm, SMALL, 'random');
    const smallWarm = await measureWindows(fsm, SMALL, 'same');
    const loadRestMs = await load(fsm, SMALL, TOTAL);
    const large = await measureWindows(fsm, TOTAL, 'random');
    const largeWarm = await measureWindows(fsm, TOTAL, 'same');
    // Fire: 10,000 due slots in one command, at a position in the middle of the job range.
    const base = Math.floor((TOTAL - FIRE_SLOTS) / 2);
    const items = Array.from({ length: FIRE_SLOTS }, (_, k) => ({ jobId: `job-${String(base + k).padStart(8, '0')}`, slotMs: T0 + (base + k) * STEP }));
    const nowMs = T0 + (base + FIRE_SLOTS) * STEP;
    const fireCmd = encodeCommand({ type: 'fireRuns', nowMs, misfireThresholdMs: 3_600_000, items });
    const t = performance.now();
    const [res] = await applyCmds(fsm, [fireCmd]);
    const fireMs = performance.now() - t;
    const decoded = decodeResult(res!);
    const created = decoded.type === 'fire' ? decoded.items.reduce((n, i) => n + i.created.length, 0) : 0;
    if (created !== FIRE_SLOTS) throw new Error(`fire created ${created} runs, expected ${FIRE_SLOTS}`);
    const readyT = performance.now();
    const ready = await fsm.readyRuns({ limit: 1000, nowMs });
    const readyMs = performance.now() - readyT;
    console.log(
      JSON.stringify({
        bench: 'fsm-scale',
        jobsSmall: SMALL,
        jobsLarge: TOTAL,
        loadJobsPerSec: Math.round(TOTAL / ((loadSmallMs + loadRestMs) / 1000)),
        dueWindowSlots: WINDOW_SLOTS,
        dueWindowSmall: small,
        dueWindowLarge: large,
        dueWindowP50Ratio: +(large.p50Ms / small.p50Ms).toFixed(2),
        dueWindowSmallWarm: smallWarm,
        dueWindowLargeWarm: largeWarm,
        dueWindowWarmP50Ratio: +(largeWarm.p50Ms / smallWarm.p50Ms).toFixed(2),
        fireBatchSlots: FIRE_SLOTS,
        fireBatchMs: +fireMs.toFixed(1),
        fireSlotsPerSec: Math.round(FIRE_SLOTS / (fireMs / 1000)),
        readyRuns1000Ms: +readyMs.toFixed(2),
        readyRunsReturned: ready.length,
        rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
        loadAvg1m: +(await import('node:os')).loadavg()[0]!.toFixed(1),
        node: process.version,
      }),
    );
  } finally {
    await fsm.close();
    if (!argOf('--dir')) await rm(dir, { recursive: true, force: true });
  }
}

await main();
