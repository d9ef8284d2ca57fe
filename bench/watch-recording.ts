// What recording changes for watchers costs a follower writing the leader's effects: one state
// machine evaluates a herd (create, fire, claim, finish N runs in calls of 250) capturing its
// effects, a second writes them, timed, with the node's change log as listener (default) or none
// (--no-log). Reports the writer's CPU per run and the GC pause time over the writes. In process,
// no Raft, no gRPC: only apply's cost, so an A/B pair is readable on a loaded machine.
// --root DIR loads the state machine and change log from another checkout's src/ (an older commit's
// tree; tsx compiles it), to compare builds with this one script.
// Run: npx tsx bench/watch-recording.ts [--runs 20000] [--no-log] [--root DIR]
// The last stdout line is JSON.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PerformanceObserver } from 'node:perf_hooks';
import { numArg, strArg } from './lib/args.js';

const root = resolve(strArg('root', join(dirname(fileURLToPath(import.meta.url)), '..')));
const variant = process.argv.includes('--no-log') ? 'none' : 'log';
const N = numArg('runs', 20_000);
const fsmMod = await import(`${root}/src/fsm/index.ts`);
const smMod = await import(`${root}/src/fsm/machine/scheduler-state-machine.ts`);
const logMod = await import(`${root}/src/server/watch/change-log.ts`);
const { JobSpec } = await import(`${root}/src/gen/herald/v1/job.ts`);
const { encodeCommand, finishSuccess } = fsmMod;
const SM = smMod.SchedulerStateMachine;
const T0 = Date.UTC(2030, 0, 1);
const S1 = T0 + 60_000;
const dirs: string[] = [];
const tmp = async (): Promise<string> => {
  const d = await mkdtemp(join(tmpdir(), 'herald-watch-rec-'));
  dirs.push(d);
  return d;
};
const leader = await SM.open(await tmp(), {});
const follower = await SM.open(await tmp(), {});
const log = { index: 0 };
const ids = Array.from({ length: N }, (_, i) => `herd-${i}`);
const B = 250;
const effects: Uint8Array[] = [];
const call = async (cmds: object[]) => {
  const entries = cmds.map((c) => ({ term: 1, index: ++log.index, type: 'normal', data: encodeCommand(c) }));
  const { effects: fx } = await leader.applyCapturing(entries);
  if (fx) effects.push(fx);
};
const spec = JobSpec.fromPartial({ taskType: 'test', schedule: { kind: { $case: 'at', at: { atUnixMs: S1 } } } });
for (let i = 0; i < N; i += B) await call([{ type: 'putJobs', nowMs: T0, items: ids.slice(i, i + B).map((jobId) => ({ jobId, spec, idempotencyKey: `k-${jobId}` })) }]);
const setup = effects.length;
for (let i = 0; i < N; i += B) await call([{ type: 'fireRuns', nowMs: S1, misfireThresholdMs: 600_000, items: ids.slice(i, i + B).map((jobId) => ({ jobId, slotMs: S1 })) }]);
for (let i = 0; i < N; i += B) await call([{ type: 'claimRuns', nowMs: S1 + 5, items: ids.slice(i, i + B).map((j) => ({ runId: `${j}@${S1}`, workerId: 'w1', leaseDeadlineMs: S1 + 600_000 })) }]);
const tokens = new Map<string, number>();
for (let i = 0; i < N; i += B) for (const r of await leader.getRuns(ids.slice(i, i + B).map((j) => `${j}@${S1}`))) tokens.set(r.id, r.fencingToken);
for (let i = 0; i < N; i += B) await call([{ type: 'finishRuns', nowMs: S1 + 10, items: ids.slice(i, i + B).map((j) => finishSuccess(`${j}@${S1}`, tokens.get(`${j}@${S1}`)!)) }]);
for (let i = 0; i < setup; i++) await follower.applyEffects(effects[i]!);
if (variant === 'log') follower.setChangeListener(new logMod.ChangeLog(await follower.appliedIndex(), { maxEvents: 100_000 }));
let gcMs = 0;
const obs = new PerformanceObserver((l) => { for (const e of l.getEntries()) gcMs += e.duration; });
obs.observe({ entryTypes: ['gc'] });
const c0 = process.cpuUsage();
const t0 = performance.now();
for (let i = setup; i < effects.length; i++) {
  const r = await follower.applyEffects(effects[i]!);
  if (r !== 'applied') throw new Error(r);
}
const wall = performance.now() - t0;
const c = process.cpuUsage(c0);
await new Promise((r) => setTimeout(r, 50));
obs.disconnect();
console.log(JSON.stringify({ bench: 'watch-recording', root, listener: variant, runs: N, wallMs: Math.round(wall), cpuUsPerRun: +(((c.user + c.system) / N)).toFixed(1), gcMs: Math.round(gcMs) }));
await leader.close();
await follower.close();
for (const d of dirs) await rm(d, { recursive: true, force: true });
