// Apply cost of the run path in one process, without Raft or gRPC: N one-off jobs created, then
// fired, claimed and finished in batches as the leader proposes them. Reports µs of apply per
// item for each command and the LevelDB writes (batch operations) per run, the figures that every
// replica pays for every slot of a herd. Profile with:
//   node --import tsx --cpu-prof bench/fsm-apply.ts --runs 20000
//
//   npx tsx bench/fsm-apply.ts [--runs 50000] [--fire-batch 5000] [--claim-batch 2000] [--finish-batch 1000] [--create-batch 1000] [--single-creates]
// Creates go as putJobs entries of --create-batch jobs (CreateJobs), or with --single-creates as
// one putJob entry per job, --create-batch entries per apply call.
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { JobSpec } from '../src/gen/herald/v1/job.js';
import { decodeResult, encodeCommand, finishSuccess, SchedulerStateMachine, type FsmCommand, type FsmResult } from '../src/fsm/index.js';
import type { Entry } from '../src/raft/types.js';

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
const T0 = Date.UTC(2030, 0, 1);

interface Phase {
  applyMs: number;
  cpuMs: number;
  items: number;
  writes: number;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'herald-fsm-apply-'));
  const fsm = await SchedulerStateMachine.open(dir);
  // Counts the operations of every LevelDB batch apply writes.
  type Chained = { put: (...a: unknown[]) => unknown; del: (...a: unknown[]) => unknown };
  const store = (fsm as unknown as { store: { batch: (...a: unknown[]) => unknown } }).store;
  const origBatch = store.batch.bind(store);
  let writes = 0;
  store.batch = (...a: unknown[]) => {
    if (Array.isArray(a[0])) writes += a[0].length;
    const out = origBatch(...a);
    if (a.length === 0) {
      // A chained batch (apply writes through one): count its puts and dels.
      const b = out as Chained;
      const put = b.put.bind(b);
      const del = b.del.bind(b);
      b.put = (...x: unknown[]) => (writes++, put(...x));
      b.del = (...x: unknown[]) => (writes++, del(...x));
    }
    return out;
  };
  let index = 0;
  // Commands are encoded before and results decoded after the clock runs: only apply is timed.
  // CPU time (process.cpuUsage, LevelDB's threads included) is the figure to compare on a
  // shared machine: wall time also counts waiting for a core.
  const phase = async (items: number, cmds: () => FsmCommand[][]): Promise<{ p: Phase; results: FsmResult[] }> => {
    const groups = cmds().map((g) => g.map((c): Entry => ({ term: 1, index: ++index, type: 'normal', data: encodeCommand(c) })));
    const w0 = writes;
    let ms = 0;
    const raw: Uint8Array[] = [];
    const cpu0 = process.cpuUsage();
    for (const g of groups) {
      const t = performance.now();
      raw.push(...(await fsm.apply(g)));
      ms += performance.now() - t;
    }
    const cpu = process.cpuUsage(cpu0);
    return { p: { applyMs: ms, cpuMs: (cpu.user + cpu.system) / 1000, items, writes: writes - w0 }, results: raw.map(decodeResult) };
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
    );
    const fire = await phase(N, () =>
      chunks(ids, FIRE_BATCH).map((g) => [{ type: 'fireRuns', nowMs: at + 5, misfireThresholdMs: 600_000, items: g.map((jobId) => ({ jobId, slotMs: at })) }]),
    );
    const runIds = fire.results.flatMap((r) => (r.type === 'fire' ? r.items.flatMap((i) => i.created) : []));
    if (runIds.length !== N) throw new Error(`fired ${runIds.length} runs, expected ${N}`);
    const claim = await phase(N, () =>
      chunks(runIds, CLAIM_BATCH).map((g) => [{ type: 'claimRuns', nowMs: at + 10, items: g.map((runId) => ({ runId, workerId: 'w1', leaseDeadlineMs: at + 120_000 })) }]),
    );
    const tokens = new Map<string, number>();
    for (const r of claim.results) {
      if (r.type !== 'claim') continue;
      for (const i of r.items) if (i.run) tokens.set(i.run.id, i.run.fencingToken);
    }
    if (tokens.size !== N) throw new Error(`claimed ${tokens.size} runs, expected ${N}`);
    const finish = await phase(N, () =>
      chunks(runIds, FINISH_BATCH).map((g) => [{ type: 'finishRuns', nowMs: at + 20, items: g.map((id) => finishSuccess(id, tokens.get(id)!)) }]),
    );
    const ok = finish.results.every((r) => r.type === 'runItems' && r.items.every((i) => !i.error));
    if (!ok) throw new Error('a finish failed');
    const per = (p: Phase) => ({
      usPerItem: +((p.applyMs * 1000) / p.items).toFixed(1),
      cpuUsPerItem: +((p.cpuMs * 1000) / p.items).toFixed(1),
      writesPerItem: +(p.writes / p.items).toFixed(2),
    });
    const f = per(fire.p);
    const c = per(claim.p);
    const d = per(finish.p);
    console.log(
      JSON.stringify({
        bench: 'fsm-apply',
        runs: N,
        creates: SINGLE_CREATES ? 'putJob' : 'putJobs',
        batches: { create: CREATE_BATCH, fire: FIRE_BATCH, claim: CLAIM_BATCH, finish: FINISH_BATCH },
        create: per(create.p),
        fire: f,
        claim: c,
        finish: d,
        perRun: { us: +(f.usPerItem + c.usPerItem + d.usPerItem).toFixed(1), cpuUs: +(f.cpuUsPerItem + c.cpuUsPerItem + d.cpuUsPerItem).toFixed(1), writes: +(f.writesPerItem + c.writesPerItem + d.writesPerItem).toFixed(2) },
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

await main();
