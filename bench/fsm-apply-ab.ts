// A/B of the FSM run path's apply CPU between two checkouts, in ONE process: each side's state
// machine (its own src/fsm, imported from its directory) applies the same herd, step by step in
// turn (fire+claim calls, then finish calls, as bench/fsm-apply.ts models them), so a noisy
// neighbour slows both sides alike. On a shared VM the same build's CPU per run varies by ±20%
// from one process to the next; here one run's b/a ratio of the same build is 1 ± ~5%, so
// compare the mean of several short runs, swapping the sides (e.g. 8 runs: ± ~2–3%).
//
//   npx tsx bench/fsm-apply-ab.ts --a ../wt-base --b . [--runs 20000] [--rounds 3] [--fire-batch 1000] [--finish-batch 1000] [--results]
//
// Reported per side: main-thread CPU per run (Linux schedstat: apply's JavaScript and the GC work
// on the main thread) and the ratio b/a over all steps and per step kind. Process-wide CPU (LevelDB
// and V8 helper threads) cannot be told apart per side here: use bench/fsm-apply.ts for it.
// Followers apply without results (the default); --results encodes every result as a leader does.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Entry } from '../src/raft/types.js';
import type * as FsmIndex from '../src/fsm/index.js';
import type * as JobGen from '../src/gen/herald/v1/job.js';
import { mainThreadCpuNs } from './lib/process-cpu.js';

const args = process.argv.slice(2);
const opt = (name: string, def: string): string => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1]! : def;
};
const N = Number(opt('runs', '20000'));
const ROUNDS = Number(opt('rounds', '3'));
const FIRE_BATCH = Number(opt('fire-batch', '1000'));
const FINISH_BATCH = Number(opt('finish-batch', '1000'));
const RESULTS = args.includes('--results');
const T0 = Date.UTC(2030, 0, 1);

interface Side {
  name: string;
  fsmMod: typeof FsmIndex;
  fsm: FsmIndex.SchedulerStateMachine;
  spec: (at: number) => JobGen.JobSpec;
  dir: string;
  index: number;
  ns: { fireClaim: number; finish: number };
}

async function side(name: string, root: string): Promise<Side> {
  const fsmMod = (await import(join(resolve(root), 'src/fsm/index.ts'))) as typeof FsmIndex;
  const jobMod = (await import(join(resolve(root), 'src/gen/herald/v1/job.ts'))) as typeof JobGen;
  const dir = await mkdtemp(join(tmpdir(), `herald-fsm-ab-${name}-`));
  const fsm = await fsmMod.SchedulerStateMachine.open(dir);
  const spec = (at: number) => jobMod.JobSpec.fromPartial({ taskType: 'test', schedule: { kind: { $case: 'at', at: { atUnixMs: at } } } });
  return { name, fsmMod, fsm, spec, dir, index: 0, ns: { fireClaim: 0, finish: 0 } };
}

function entries(s: Side, cmds: FsmIndex.FsmCommand[]): Entry[] {
  return cmds.map((c) => ({ term: 1, index: ++s.index, type: 'normal', data: s.fsmMod.encodeCommand(c) }));
}

async function main(): Promise<void> {
  const a = await side('a', opt('a', '.'));
  const b = await side('b', opt('b', '.'));
  const sides = [a, b];
  const wanted = RESULTS ? undefined : () => false;
  const stepRatios: { fireClaim: number[]; finish: number[] } = { fireClaim: [], finish: [] };
  let flip = false;
  // Applies one step on both sides (alternating which goes first); returns b/a main-thread time.
  const step = async (kind: 'fireClaim' | 'finish', make: (s: Side) => Entry[]): Promise<void> => {
    const prepared = sides.map((s) => make(s));
    const order = flip ? [1, 0] : [0, 1];
    flip = !flip;
    const took = [0, 0];
    for (const i of order) {
      const s = sides[i]!;
      const t = mainThreadCpuNs();
      await s.fsm.apply(prepared[i]!, wanted);
      took[i] = mainThreadCpuNs() - t;
      s.ns[kind] += took[i]!;
    }
    stepRatios[kind].push(took[1]! / took[0]!);
  };
  try {
    for (let r = 0; r < ROUNDS; r++) {
      const at = T0 + (r + 1) * 60_000;
      const ids = Array.from({ length: N }, (_, i) => `herd-${r}-${i}`);
      for (const s of sides) {
        const spec = s.spec(at);
        for (let i = 0; i < N; i += 1000) {
          const items = ids.slice(i, i + 1000).map((id) => ({ jobId: id, spec, idempotencyKey: `k-${id}` }));
          await s.fsm.apply(entries(s, [{ type: 'putJobs', nowMs: at - 30_000, items }]), wanted);
        }
      }
      const tokens = new Map<string, number>();
      for (let i = 0; i < N; i += FIRE_BATCH) {
        const g = ids.slice(i, i + FIRE_BATCH);
        const runIds = g.map((j) => `${j}@${at}`);
        await step('fireClaim', (s) => {
          const es = entries(s, [
            { type: 'fireRuns', nowMs: at + 5, misfireThresholdMs: 600_000, items: g.map((jobId) => ({ jobId, slotMs: at })) },
            { type: 'claimRuns', nowMs: at + 10, items: runIds.map((runId) => ({ runId, workerId: 'w1', leaseDeadlineMs: at + 120_000 })) },
          ]);
          // A claim's token is its entry's index: the same on both sides.
          for (const id of runIds) tokens.set(id, es[1]!.index);
          return es;
        });
      }
      for (let i = 0; i < N; i += FINISH_BATCH) {
        const g = ids.slice(i, i + FINISH_BATCH).map((j) => `${j}@${at}`);
        await step('finish', (s) => entries(s, [{ type: 'finishRuns', nowMs: at + 20, items: g.map((id) => s.fsmMod.finishSuccess(id, tokens.get(id)!)) }]));
      }
    }
    // Both sides must have done the same work.
    const [ha, hb] = [await a.fsm.runCounts(), await b.fsm.runCounts()];
    if (JSON.stringify([...ha]) !== JSON.stringify([...hb])) throw new Error(`run counts differ: ${JSON.stringify([...ha])} vs ${JSON.stringify([...hb])}`);
    const runs = N * ROUNDS;
    const per = (s: Side) => ({
      fireClaimUs: +(s.ns.fireClaim / 1000 / runs).toFixed(2),
      finishUs: +(s.ns.finish / 1000 / runs).toFixed(2),
      perRunUs: +((s.ns.fireClaim + s.ns.finish) / 1000 / runs).toFixed(2),
    });
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
    console.log(
      JSON.stringify({
        bench: 'fsm-apply-ab',
        runs,
        results: RESULTS ? 'all' : 'none (follower)',
        mainCpu: { a: per(a), b: per(b) },
        ratioBA: {
          perRun: +((b.ns.fireClaim + b.ns.finish) / (a.ns.fireClaim + a.ns.finish)).toFixed(3),
          fireClaim: +(b.ns.fireClaim / a.ns.fireClaim).toFixed(3),
          finish: +(b.ns.finish / a.ns.finish).toFixed(3),
          medianStep: { fireClaim: +median(stepRatios.fireClaim).toFixed(3), finish: +median(stepRatios.finish).toFixed(3) },
        },
      }),
    );
  } finally {
    for (const s of sides) {
      await s.fsm.close();
      await rm(s.dir, { recursive: true, force: true });
    }
  }
}

await main();
