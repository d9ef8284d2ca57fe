// Scale bench of the scheduler FSM (issue 5, DESIGN I6):
//  - due-window read cost (a window holding 1,000 slots) with 10,000 jobs stored and with N jobs
//    stored (default 1,000,000): the cost should follow the slots in the window, not the jobs;
//  - apply of one 10,000-slot fireRuns batch (slots/s), on both stores.
// The two stores are measured alternately so both see the same machine load.
// Jobs are loaded through apply itself (putJob entries, large batches per apply call), so the
// store holds exactly what a cluster would. Prints one JSON line.
//
//   npx tsx bench/fsm-scale.ts [--jobs N] [--dir PATH]
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
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

async function applyCmds(fsm: SchedulerStateMachine, datas: Uint8Array[]): Promise<Uint8Array[]> {
  let index = await fsm.appliedIndex();
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

async function load(fsm: SchedulerStateMachine, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i += LOAD_BATCH) {
    const datas: Uint8Array[] = [];
    for (let k = i; k < Math.min(to, i + LOAD_BATCH); k++) {
      datas.push(encodeCommand({ type: 'putJob', nowMs: T0 - 1, jobId: `job-${String(k).padStart(8, '0')}`, spec: jobSpec(k), idempotencyKey: '' }));
    }
    await applyCmds(fsm, datas);
  }
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

type WindowStats = { p50Ms: number; p99Ms: number; slots: number };

function stats(times: number[], slots: number): WindowStats {
  return { p50Ms: +quantile(times, 0.5).toFixed(3), p99Ms: +quantile(times, 0.99).toFixed(3), slots };
}

/**
 * Reads due windows of WINDOW_SLOTS slots from the small and the large store ALTERNATELY, so both
 * see the same machine load (shared CI boxes are noisy): at random positions among each store's
 * jobs, or the same window again and again (warm: the pure cost of the range read).
 */
async function measureWindows(
  stores: readonly { fsm: SchedulerStateMachine; jobs: number }[],
  mode: 'random' | 'same',
  reps = 400,
): Promise<WindowStats[]> {
  const times = stores.map(() => [] as number[]);
  const slots = stores.map(() => 0);
  let seed = 12345;
  for (let r = 0; r < reps + 20; r++) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    for (let i = 0; i < stores.length; i++) {
      const { fsm, jobs } = stores[i]!;
      const first = mode === 'same' ? Math.floor(jobs / 2) * STEP : (seed % Math.max(1, jobs - WINDOW_SLOTS)) * STEP;
      const from = T0 + first;
      const t = performance.now();
      const due = await fsm.dueWindow(from, from + WINDOW_SLOTS * STEP, 10 * WINDOW_SLOTS);
      const dt = performance.now() - t;
      if (r >= 20) times[i]!.push(dt); // the first reads warm the block cache
      slots[i] = due.length;
    }
  }
  return stores.map((_, i) => stats(times[i]!, slots[i]!));
}

/** Applies one fireRuns command for FIRE_SLOTS due jobs in the middle of the store's jobs. */
async function fireBatch(fsm: SchedulerStateMachine, jobs: number): Promise<number> {
  const n = Math.min(FIRE_SLOTS, jobs);
  const base = Math.floor((jobs - n) / 2);
  const items = Array.from({ length: n }, (_, k) => ({ jobId: `job-${String(base + k).padStart(8, '0')}`, slotMs: T0 + (base + k) * STEP }));
  const nowMs = T0 + (base + n) * STEP;
  const cmd = encodeCommand({ type: 'fireRuns', nowMs, misfireThresholdMs: 3_600_000, items });
  const t = performance.now();
  const [res] = await applyCmds(fsm, [cmd]);
  const ms = performance.now() - t;
  const decoded = decodeResult(res!);
  const created = decoded.type === 'fire' ? decoded.items.reduce((c, i) => c + i.created.length, 0) : 0;
  if (created !== n) throw new Error(`fire created ${created} runs, expected ${n}`);
  return ms;
}

async function main(): Promise<void> {
  const base = argOf('--dir') ?? (await mkdtemp(join(tmpdir(), 'herald-fsm-bench-')));
  const small = await SchedulerStateMachine.open(join(base, 'small'));
  const large = await SchedulerStateMachine.open(join(base, 'large'));
  try {
    await load(small, 0, SMALL);
    const loadStart = performance.now();
    await load(large, 0, TOTAL);
    const loadMs = performance.now() - loadStart;
    // Measure settled trees: right after a bulk load LevelDB is still compacting in the background.
    await small.compact();
    await large.compact();
    const stores = [{ fsm: small, jobs: SMALL }, { fsm: large, jobs: TOTAL }];
    const [smallRandom, largeRandom] = await measureWindows(stores, 'random');
    const [smallWarm, largeWarm] = await measureWindows(stores, 'same');
    const fireSmallMs = await fireBatch(small, SMALL);
    const fireLargeMs = await fireBatch(large, TOTAL);
    const readyT = performance.now();
    const ready = await large.readyRuns({ limit: 1000 });
    const readyMs = performance.now() - readyT;
    console.log(
      JSON.stringify({
        bench: 'fsm-scale',
        jobsSmall: SMALL,
        jobsLarge: TOTAL,
        loadJobsPerSec: Math.round(TOTAL / (loadMs / 1000)),
        dueWindowSlots: WINDOW_SLOTS,
        dueWindowRandom: { small: smallRandom, large: largeRandom, p50Ratio: +(largeRandom!.p50Ms / smallRandom!.p50Ms).toFixed(2) },
        dueWindowWarm: { small: smallWarm, large: largeWarm, p50Ratio: +(largeWarm!.p50Ms / smallWarm!.p50Ms).toFixed(2) },
        fireBatchSlots: Math.min(FIRE_SLOTS, TOTAL),
        fireBatchMs: { small: +fireSmallMs.toFixed(1), large: +fireLargeMs.toFixed(1) },
        fireSlotsPerSec: { small: Math.round(Math.min(FIRE_SLOTS, SMALL) / (fireSmallMs / 1000)), large: Math.round(Math.min(FIRE_SLOTS, TOTAL) / (fireLargeMs / 1000)) },
        readyRuns1000Ms: +readyMs.toFixed(2),
        readyRunsReturned: ready.length,
        rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
        loadAvg1m: +loadavg()[0]!.toFixed(1),
        node: process.version,
      }),
    );
  } finally {
    await small.close();
    await large.close();
    if (!argOf('--dir')) await rm(base, { recursive: true, force: true });
  }
}

await main();
