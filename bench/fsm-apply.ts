// Apply cost of the run path in one process, without Raft or gRPC: N one-off jobs created, then
// fired, claimed and finished in batches as the leader proposes them. Reports µs of apply per
// item for each command and the LevelDB writes (batch operations) per run, the figures that every
// replica pays for every slot of a herd. Profile with:
//   node --import tsx --cpu-prof bench/fsm-apply.ts --runs 20000
//
//   npx tsx bench/fsm-apply.ts [--runs 50000] [--fire-batch 5000] [--claim-batch 2000] [--finish-batch 1000] [--create-batch 1000] [--single-creates] [--phases] [--follower] [--alloc [--alloc-top N]] [--effects]
//
// --alloc adds allocBytesPerItem to each step: the bytes apply allocated per item, from V8's
// sampling heap profiler with collected objects kept. Unlike CPU time it hardly moves with the
// neighbours, and every allocated byte is GC work later (the largest single cost in a herd).
// --alloc-top N prints each step's N largest allocating functions to stderr.
//
// By default fire and claim go as the cluster applies them: the leader proposes a claimRuns of
// the fired runs right behind each fireRuns (dispatcher.ts claimBehindFire), so every replica
// usually gets both entries in one apply call (one transaction, one batch: the run is written
// once, already RUNNING). The "fireClaim" figure is that call per run. --phases applies all fires,
// then all claims in batches of --claim-batch, as separate calls (the older model).
// --effects applies with applyCapturing and writes each call's effects into a second store
// (applyEffects), timed: what a follower pays per run to write what the leader's apply computed
// instead of evaluating the commands, and the bytes per run such effects put on the peer streams.
// Creates go as putJobs entries of --create-batch jobs (CreateJobs), or with --single-creates as
// one putJob entry per job, --create-batch entries per apply call.
import { mkdtemp, rm } from 'node:fs/promises';
import { Session } from 'node:inspector';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { JobSpec } from '../src/gen/herald/v1/job.js';
import { RunState } from '../src/gen/herald/v1/run.js';
import { decodeResult, encodeCommand, finishSuccess, SchedulerStateMachine, type FsmCommand, type FsmResult } from '../src/fsm/index.js';
import type { Entry } from '../src/raft/types.js';
import { mainThreadCpuNs } from './lib/process-cpu.js';

const args = process.argv.slice(2);
const num = (name: string, def: number): number => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const N = num('runs', 50_000);
const FIRE_BATCH = num('fire-batch', 5000);
const CLAIM_BATCH = num('claim-batch', 2000);
const FINISH_BATCH = num('finish-batch', 1000);
const CREATE_BATCH = num('create-batch', 1000);
const SINGLE_CREATES = args.includes('--single-creates');
const PHASES = args.includes('--phases');
const FOLLOWER = args.includes('--follower');
const ALLOC = args.includes('--alloc');
const ALLOC_TOP = num('alloc-top', 0);
const EFFECTS = args.includes('--effects');
const T0 = Date.UTC(2030, 0, 1);

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

/** Bytes allocated between start() and stop() (sampled every 4 KiB, collected objects included). */
class AllocationSampler {
  private readonly session = new Session();
  constructor() {
    this.session.connect();
  }
  private post<T>(method: string, params?: object): Promise<T> {
    return new Promise((resolve, reject) => this.session.post(method, params, (err, r) => (err ? reject(err) : resolve(r as T))));
  }
  async start(): Promise<void> {
    await this.post('HeapProfiler.enable');
    await this.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  }
  async stop(): Promise<{ bytes: number; top: [string, number][] }> {
    const { profile } = await this.post<{ profile: { head: ProfileNode } }>('HeapProfiler.stopSampling');
    const byFunction = new Map<string, number>();
    let bytes = 0;
    const walk = (n: ProfileNode): void => {
      const f = n.callFrame;
      const name = `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`;
      byFunction.set(name, (byFunction.get(name) ?? 0) + n.selfSize);
      bytes += n.selfSize;
      n.children.forEach(walk);
    };
    walk(profile.head);
    return { bytes, top: [...byFunction].sort((a, b) => b[1] - a[1]) };
  }
}

interface Phase {
  applyMs: number;
  cpuMs: number;
  /** CPU of the main thread alone (apply's JavaScript), without LevelDB's and V8's helper threads. */
  mainCpuMs: number;
  items: number;
  writes: number;
  writeBytes: number;
  /** Bytes allocated by the step (--alloc only). */
  allocBytes: number | undefined;
}

interface Applied {
  p: Phase;
  results: FsmResult[];
  entries: Entry[][];
  /** Each apply call's effects (--effects only). */
  effects: Uint8Array[];
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'herald-fsm-apply-'));
  const fsm = await SchedulerStateMachine.open(dir);
  // Counts the operations of every LevelDB batch apply writes.
  type Chained = { _put: (...a: unknown[]) => unknown; _del: (...a: unknown[]) => unknown };
  const store = (fsm as unknown as { store: { batch: (...a: unknown[]) => unknown } }).store;
  const origBatch = store.batch.bind(store);
  let writes = 0;
  // Key and value bytes of those operations: LevelDB's log, memtable and compactions scale with them.
  let writeBytes = 0;
  const sizeOf = (x: unknown): number => (typeof x === 'string' ? x.length : x instanceof Uint8Array ? x.byteLength : 0);
  store.batch = (...a: unknown[]) => {
    if (Array.isArray(a[0])) writes += a[0].length;
    const out = origBatch(...a);
    if (a.length === 0) {
      // A chained batch (apply writes through one): count the puts and dels it hands to the
      // native batch (direct-batch.ts calls _put/_del itself, abstract-level's put/del call them).
      const b = out as Chained;
      const put = b._put.bind(b);
      const del = b._del.bind(b);
      // Fixed arity: a rest-args wrapper cost ~4% of the timed apply.
      b._put = (k: unknown, v: unknown, o: unknown) => (writes++, (writeBytes += sizeOf(k) + sizeOf(v)), put(k, v, o));
      b._del = (k: unknown, o: unknown) => (writes++, (writeBytes += sizeOf(k)), del(k, o));
    }
    return out;
  };
  let index = 0;
  // Commands are encoded before and results decoded after the clock runs: only apply is timed.
  // CPU time (process.cpuUsage, LevelDB's threads included) is the figure to compare on a
  // shared machine: wall time also counts waiting for a core.
  // With --follower the run path is applied as a follower does (no result wanted, none encoded):
  // its results are not there to read, so the claims' fencing tokens come from the entry indexes.
  const sampler = ALLOC ? new AllocationSampler() : undefined;
  const phase = async (items: number, cmds: () => FsmCommand[][], results = true, name = ''): Promise<Applied> => {
    const groups = cmds().map((g) => g.map((c): Entry => ({ term: 1, index: ++index, type: 'normal', data: encodeCommand(c) })));
    const wanted = results ? undefined : () => false;
    const w0 = writes;
    const b0 = writeBytes;
    let ms = 0;
    const raw: Uint8Array[] = [];
    const effects: Uint8Array[] = [];
    await sampler?.start();
    const cpu0 = process.cpuUsage();
    const main0 = mainThreadCpuNs();
    for (const g of groups) {
      const t = performance.now();
      if (EFFECTS) {
        const out = await fsm.applyCapturing(g, wanted);
        raw.push(...out.results);
        if (out.effects) effects.push(out.effects);
      } else raw.push(...(await fsm.apply(g, wanted)));
      ms += performance.now() - t;
    }
    const cpu = process.cpuUsage(cpu0);
    const mainMs = (mainThreadCpuNs() - main0) / 1e6;
    const alloc = await sampler?.stop();
    if (alloc && ALLOC_TOP > 0) {
      process.stderr.write(`${name}: ${(alloc.bytes / items).toFixed(0)} bytes allocated per item; largest allocators (bytes per item):\n`);
      for (const [f, b] of alloc.top.slice(0, ALLOC_TOP)) process.stderr.write(`  ${(b / items).toFixed(0).padStart(6)}  ${f}\n`);
    }
    return {
      p: { applyMs: ms, cpuMs: (cpu.user + cpu.system) / 1000, mainCpuMs: mainMs, items, writes: writes - w0, writeBytes: writeBytes - b0, allocBytes: alloc?.bytes },
      results: results ? raw.map(decodeResult) : [],
      entries: groups,
      effects,
    };
  };
  const chunks = <T>(xs: T[], n: number): T[][] => {
    const out: T[][] = [];
    for (let i = 0; i < xs.length; i += n) out.push(xs.slice(i, i + n));
    return out;
  };
  try {
    const at = T0 + 60_000;
    const spec = JobSpec.fromPartial({ taskType: 'test', schedule: { kind: { $case: 'at', at: { atUnixMs: at } } } });
    const ids = Array.from({ length: N }, (_, i) => `herd-${i}`);
    const create = await phase(N, () =>
      chunks(ids, CREATE_BATCH).map((g): FsmCommand[] =>
        SINGLE_CREATES
          ? g.map((id) => ({ type: 'putJob', nowMs: T0, jobId: id, spec, idempotencyKey: `k-${id}` }))
          : [{ type: 'putJobs', nowMs: T0, items: g.map((id) => ({ jobId: id, spec, idempotencyKey: `k-${id}` })) }],
      ),
      true,
      'create',
    );
    const fireCmd = (g: string[]): FsmCommand => ({ type: 'fireRuns', nowMs: at + 5, misfireThresholdMs: 600_000, items: g.map((jobId) => ({ jobId, slotMs: at })) });
    const claimCmd = (g: string[]): FsmCommand => ({ type: 'claimRuns', nowMs: at + 10, items: g.map((runId) => ({ runId, workerId: 'w1', leaseDeadlineMs: at + 120_000 })) });
    const runIdOf = (jobId: string): string => `${jobId}@${at}`;
    const runIds = ids.map(runIdOf);
    let fire: Applied | undefined;
    let claim: Applied;
    if (PHASES) {
      fire = await phase(N, () => chunks(ids, FIRE_BATCH).map((g) => [fireCmd(g)]), true, 'fire');
      const fired = fire.results.flatMap((r) => (r.type === 'fire' ? r.items.flatMap((i) => i.created) : []));
      if (fired.length !== N) throw new Error(`fired ${fired.length} runs, expected ${N}`);
      claim = await phase(N, () => chunks(runIds, CLAIM_BATCH).map((g) => [claimCmd(g)]), true, 'claim');
    } else {
      // [fireRuns(batch), claimRuns(its runs)] per apply call, as claimBehindFire proposes them.
      claim = await phase(N, () => chunks(ids, FIRE_BATCH).map((g) => [fireCmd(g), claimCmd(g.map(runIdOf))]), !FOLLOWER, 'fireClaim');
      if (!FOLLOWER) {
        const fired = claim.results.flatMap((r) => (r.type === 'fire' ? r.items.flatMap((i) => i.created) : []));
        if (fired.length !== N) throw new Error(`fired ${fired.length} runs, expected ${N}`);
      }
    }
    const tokens = new Map<string, number>();
    for (const r of claim.results) {
      if (r.type !== 'claim') continue;
      for (const i of r.items) if (i.run) tokens.set(i.run.id, i.run.fencingToken);
    }
    if (FOLLOWER && !PHASES) {
      // A claim's token is the index of its entry (the second of each call).
      claim.entries.forEach((g, i) => {
        for (const id of runIds.slice(i * FIRE_BATCH, (i + 1) * FIRE_BATCH)) tokens.set(id, g[1]!.index);
      });
    }
    if (tokens.size !== N) throw new Error(`claimed ${tokens.size} runs, expected ${N}`);
    const finish = await phase(
      N,
      () => chunks(runIds, FINISH_BATCH).map((g) => [{ type: 'finishRuns', nowMs: at + 20, items: g.map((id) => finishSuccess(id, tokens.get(id)!)) }]),
      !FOLLOWER,
      'finish',
    );
    const runPath = fire ? [fire, claim, finish] : [claim, finish];
    const effects = EFFECTS ? await replayEffects(create.effects, runPath, N) : undefined;
    const ok = FOLLOWER
      ? (await fsm.runCounts()).get(RunState.RUN_STATE_SUCCEEDED) === N
      : finish.results.every((r) => r.type === 'runItems' && r.items.every((i) => !i.error));
    if (!ok) throw new Error('a finish failed');
    const per = (p: Phase) => ({
      usPerItem: +((p.applyMs * 1000) / p.items).toFixed(1),
      cpuUsPerItem: +((p.cpuMs * 1000) / p.items).toFixed(1),
      mainCpuUsPerItem: +((p.mainCpuMs * 1000) / p.items).toFixed(1),
      writesPerItem: +(p.writes / p.items).toFixed(2),
      writeBytesPerItem: Math.round(p.writeBytes / p.items),
      ...(p.allocBytes === undefined ? {} : { allocBytesPerItem: Math.round(p.allocBytes / p.items) }),
    });
    const f = fire ? per(fire.p) : { usPerItem: 0, cpuUsPerItem: 0, mainCpuUsPerItem: 0, writesPerItem: 0, writeBytesPerItem: 0, allocBytesPerItem: 0 };
    const c = per(claim.p);
    const d = per(finish.p);
    console.log(
      JSON.stringify({
        bench: 'fsm-apply',
        runs: N,
        creates: SINGLE_CREATES ? 'putJob' : 'putJobs',
        mode: PHASES ? 'phases' : 'claimBehindFire',
        results: FOLLOWER ? 'none (follower)' : 'all',
        batches: { create: CREATE_BATCH, fire: FIRE_BATCH, claim: PHASES ? CLAIM_BATCH : FIRE_BATCH, finish: FINISH_BATCH },
        create: per(create.p),
        ...(PHASES ? { fire: f, claim: c } : { fireClaim: c }),
        finish: d,
        perRun: { us: +(f.usPerItem + c.usPerItem + d.usPerItem).toFixed(1), cpuUs: +(f.cpuUsPerItem + c.cpuUsPerItem + d.cpuUsPerItem).toFixed(1), mainCpuUs: +(f.mainCpuUsPerItem + c.mainCpuUsPerItem + d.mainCpuUsPerItem).toFixed(1), writes: +(f.writesPerItem + c.writesPerItem + d.writesPerItem).toFixed(2), writeBytes: (f.writeBytesPerItem ?? 0) + c.writeBytesPerItem + d.writeBytesPerItem, ...(ALLOC ? { allocBytes: (f.allocBytesPerItem ?? 0) + (c.allocBytesPerItem ?? 0) + (d.allocBytesPerItem ?? 0) } : {}) },
        ...(effects ? { effects } : {}),
        recordCache: fsm.recordCache ? { ...fsm.recordCache.stats } : null,
        loadAvg1m: +loadavg()[0]!.toFixed(2),
        node: process.version,
      }),
    );
  } finally {
    await fsm.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * A second store gets the creates' effects untimed, then the run path's effects timed: what a
 * follower pays to write what the leader's apply computed, against evaluating the commands.
 */
async function replayEffects(create: readonly Uint8Array[], runPath: readonly Applied[], runs: number): Promise<object> {
  const dir = await mkdtemp(join(tmpdir(), 'herald-fsm-effects-'));
  const replica = await SchedulerStateMachine.open(dir);
  try {
    for (const fx of create) if ((await replica.applyEffects(fx)) !== 'applied') throw new Error('create effects did not fit');
    const all = runPath.flatMap((a) => a.effects);
    const cpu0 = process.cpuUsage();
    const main0 = mainThreadCpuNs();
    const t0 = performance.now();
    for (const fx of all) if ((await replica.applyEffects(fx)) !== 'applied') throw new Error('run path effects did not fit');
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const mainUs = (mainThreadCpuNs() - main0) / 1e3;
    const bytes = all.reduce((n, e) => n + e.length, 0);
    const commandBytes = runPath.reduce((n, a) => n + a.entries.flat().reduce((m, e) => m + e.data.length, 0), 0);
    return {
      commandBytesPerRun: Math.round(commandBytes / runs),
      effectsBytesPerRun: Math.round(bytes / runs),
      calls: all.length,
      cpuUsPerRun: +((cpu.user + cpu.system) / runs).toFixed(1),
      mainCpuUsPerRun: +(mainUs / runs).toFixed(1),
      usPerRun: +((ms * 1000) / runs).toFixed(1),
    };
  } finally {
    await replica.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
