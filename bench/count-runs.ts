// What CountRuns costs a node (issue 32): the first call's seeding scan of the stored runs, a
// call after it, and what following apply costs — the same fire + cancel workload applied to two
// fresh state machines, one whose tally follows apply (CountRuns asked first) and one without,
// alternately so both see the same machine load (CPU time of the process, LevelDB's threads
// included, so a loaded machine skews it less than wall time). One process, in-process machines.
//
//   npx tsx bench/count-runs.ts [--jobs 2000] [--slots 50] [--rounds 3]
// Stores jobs × slots runs, all CANCELLED within the last hour. Prints one JSON line.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JobSpec } from '../src/gen/herald/v1/job.js';
import { encodeCommand, SchedulerStateMachine, type FsmCommand } from '../src/fsm/index.js';
import { RunState } from '../src/gen/herald/v1/run.js';
import type { Entry } from '../src/raft/types.js';
import { numArg } from './lib/args.js';
import { machineLoad } from './lib/machine.js';

const JOBS = numArg('jobs', 2000);
const SLOTS = numArg('slots', 50);
const ROUNDS = numArg('rounds', 3);
const MINUTE = 60_000;
const T = Math.floor(Date.now() / MINUTE) * MINUTE - SLOTS * MINUTE;
const ids = Array.from({ length: JOBS }, (_, i) => `job-${String(i).padStart(6, '0')}`);

async function applyAll(fsm: SchedulerStateMachine, cmds: FsmCommand[]): Promise<void> {
  let index = await fsm.appliedIndex();
  const entries: Entry[] = cmds.map((c) => ({ term: 1, index: ++index, type: 'normal', data: encodeCommand(c) }));
  await fsm.apply(entries);
}

const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** The workload: each minute-slot fired for every job, then every run of it cancelled. Its CPU ms (all threads: LevelDB's too). */
async function workload(fsm: SchedulerStateMachine): Promise<number> {
  let ms = 0;
  for (let s = 0; s < SLOTS; s++) {
    const slot = T + s * MINUTE;
    const fire: FsmCommand = { type: 'fireRuns', nowMs: slot, misfireThresholdMs: MINUTE, items: ids.map((jobId) => ({ jobId, slotMs: slot })) };
    const cancel: FsmCommand = { type: 'cancelRuns', nowMs: slot + 1000, items: ids.map((jobId) => ({ runId: `${jobId}@${slot}`, reason: '' })) };
    const t = cpuMs();
    await applyAll(fsm, [fire]);
    await applyAll(fsm, [cancel]);
    ms += cpuMs() - t;
  }
  return ms;
}

async function fresh(dir: string): Promise<SchedulerStateMachine> {
  const fsm = await SchedulerStateMachine.open(dir, { recordCacheBytes: 0 });
  // Every minute, retention 1,000 runs: nothing is trimmed during the bench.
  const spec = JobSpec.fromPartial({ taskType: 'bench', schedule: { kind: { $case: 'every', every: { intervalMs: MINUTE, anchorUnixMs: T } } }, retention: { maxRuns: 1000 } });
  for (let i = 0; i < JOBS; i += 1000) {
    await applyAll(fsm, [{ type: 'putJobs', nowMs: T - 1000, items: ids.slice(i, i + 1000).map((jobId) => ({ jobId, spec, idempotencyKey: '' })) }]);
  }
  return fsm;
}

const root = await mkdtemp(join(tmpdir(), 'herald-count-runs-'));
const loadAtStart = machineLoad();
const applyMs: { following: number[]; off: number[] } = { following: [], off: [] };
const seedMs: number[] = [];
const seedCpuMs: number[] = [];
const countMs: number[] = [];
let cancelled = 0;
try {
  // Round 0 warms the JIT up and is not counted.
  for (let r = 0; r <= ROUNDS; r++) {
    for (const following of r % 2 === 0 ? [true, false] : [false, true]) {
      const dir = join(root, `r${r}-${following}`);
      const fsm = await fresh(dir);
      try {
        if (following) await fsm.countRuns(0);
        const ms = await workload(fsm);
        if (r === 0) continue;
        (following ? applyMs.following : applyMs.off).push(ms);
        // The first ask on the store that was not following: the seeding scan of every run.
        let t = performance.now();
        const cpu = cpuMs();
        const c = await fsm.countRuns(Date.now() - 3_600_000);
        if (!following) {
          seedMs.push(performance.now() - t);
          seedCpuMs.push(cpuMs() - cpu);
        }
        t = performance.now();
        await fsm.countRuns(Date.now() - 3_600_000);
        countMs.push(performance.now() - t);
        cancelled = c.counts.get(RunState.RUN_STATE_CANCELLED) ?? 0;
      } finally {
        await fsm.close();
        await rm(dir, { recursive: true, force: true });
      }
    }
  }
} finally {
  await rm(root, { recursive: true, force: true });
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const runs = JOBS * SLOTS;
console.log(
  JSON.stringify({
    bench: 'count-runs',
    runs,
    cancelledCounted: cancelled,
    seedMs: Math.round(median(seedMs)),
    seedUsPerRun: Math.round(((median(seedMs) * 1000) / runs) * 100) / 100,
    seedCpuUsPerRun: Math.round(((median(seedCpuMs) * 1000) / runs) * 100) / 100,
    countMs: Math.round(median(countMs) * 100) / 100,
    // CPU of the workload's apply calls, with the tally following and without.
    workloadCpuMs: { following: Math.round(median(applyMs.following)), off: Math.round(median(applyMs.off)), all: applyMs },
    cpuUsPerRunFollowing: Math.round(((median(applyMs.following) - median(applyMs.off)) * 1000) / runs * 100) / 100,
    machine: { atStart: loadAtStart, atEnd: machineLoad() },
  }),
);
