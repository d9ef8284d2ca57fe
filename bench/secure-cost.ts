// What TLS + auth cost (issue 29): bench/herd.ts and bench/steady.ts with and without `--secure`,
// interleaved — plain first in odd rounds, secure first in even ones — each run a fresh cluster.
// Secure: TLS on the client port, mutual TLS on the peer port, auth on; the creating client holds
// an operator token, the workers a worker token for their task type (test/dispatch/helpers/
// process-cluster.ts). Reported per mode (medians over the rounds) and as the cost against the
// targets: herd drain rate at most 15 % lower, steady start-lateness p99 at most 5 ms higher.
//
// Run: npm run bench -- secure-cost [--rounds 1] [--pairs herd,steady] [--herd-runs 20000]
//      [--steady-jobs 1000] [--steady-seconds 30]
// Progress and each run's raw JSON go to stderr; the last stdout line is JSON.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { numArg, strArg } from './lib/args.js';
import { machineLoad } from './lib/machine.js';
import { runJson, stopChildren } from './lib/run-json.js';

const here = dirname(fileURLToPath(import.meta.url));
const ROUNDS = numArg('rounds', 1);
const PAIRS = strArg('pairs', 'herd,steady').split(',').filter(Boolean);
const HERD_N = numArg('herd-runs', 20_000);
const STEADY_JOBS = numArg('steady-jobs', 1000);
const STEADY_S = numArg('steady-seconds', 30);
const TARGET = { herdDrainRateCostPct: 15, steadyP99CostMs: 5 };
const log = (m: string) => process.stderr.write(`[secure-cost] ${m}\n`);

type Mode = 'plain' | 'secure';
type Figures = Record<string, number>;

const BENCHES: Record<string, { args: string[]; figures: (j: Record<string, unknown>) => Figures }> = {
  herd: {
    args: ['--runs', String(HERD_N)],
    figures: (j) => {
      const h = j as { runs: number; drainMs: number; latenessMs: { p99: number }; drainCpuUsPerRun: { leader: number; followers: number[] }; lost: number; doubled: number; succeeded: number };
      return {
        drainRate: Math.round((h.runs * 1000) / h.drainMs),
        drainMs: h.drainMs,
        latenessP99Ms: h.latenessMs.p99,
        leaderCpuUsPerRun: h.drainCpuUsPerRun.leader,
        followerCpuUsPerRun: Math.round(h.drainCpuUsPerRun.followers.reduce((a, b) => a + b, 0) / Math.max(1, h.drainCpuUsPerRun.followers.length)),
        lost: h.lost,
        doubled: h.doubled,
        notSucceeded: h.runs - h.succeeded,
      };
    },
  },
  steady: {
    args: ['--jobs', String(STEADY_JOBS), '--seconds', String(STEADY_S)],
    figures: (j) => {
      const s = j as { latenessMs: { p50: number; p99: number; max: number }; claimLatenessMs: { p99: number }; cpuUsPerRun: { leader: number }; lost: number; doubled: number; notStarted: number };
      return {
        latenessP50Ms: s.latenessMs.p50,
        latenessP99Ms: s.latenessMs.p99,
        latenessMaxMs: s.latenessMs.max,
        claimLatenessP99Ms: s.claimLatenessMs.p99,
        leaderCpuUsPerRun: s.cpuUsPerRun.leader,
        lost: s.lost,
        doubled: s.doubled,
        notStarted: s.notStarted,
      };
    },
  },
};

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

function medians(runs: Figures[]): Figures {
  const out: Figures = {};
  for (const k of Object.keys(runs[0] ?? {})) out[k] = +median(runs.map((r) => r[k]!)).toFixed(1);
  return out;
}

for (const p of PAIRS) if (!BENCHES[p]) throw new Error(`unknown bench ${p}; use herd, steady`);
process.on('SIGINT', () => void stopChildren().then(() => process.exit(130)));
process.on('SIGTERM', () => void stopChildren().then(() => process.exit(143)));

const runs = new Map<string, { plain: Figures[]; secure: Figures[]; loads: number[]; errors: string[] }>();
const started = Date.now();
try {
  for (let round = 1; round <= ROUNDS; round++) {
    for (const name of PAIRS) {
      const b = BENCHES[name]!;
      const acc = runs.get(name) ?? { plain: [], secure: [], loads: [], errors: [] };
      runs.set(name, acc);
      const order: Mode[] = round % 2 === 1 ? ['plain', 'secure'] : ['secure', 'plain'];
      for (const mode of order) {
        log(`round ${round}/${ROUNDS}: ${name} ${mode}`);
        acc.loads.push(machineLoad().loadavg[0]!);
        const r = await runJson(`${name} ${mode}`, process.execPath, ['--import', 'tsx', join(here, `${name}.ts`), ...b.args, ...(mode === 'secure' ? ['--secure'] : [])], {
          timeoutMs: 30 * 60_000,
          // Our benches' clusters draw test ports from a block of their own (see lib/ports.ts).
          env: { ...process.env, VITEST_POOL_ID: process.env.VITEST_POOL_ID ?? '7' },
        });
        if (r.json) process.stderr.write(`[secure-cost] raw ${JSON.stringify(r.json)}\n`);
        if (r.error || !r.json) {
          acc.errors.push(r.error ?? 'no JSON');
          continue;
        }
        acc[mode].push(b.figures(r.json));
      }
    }
  }
} finally {
  await stopChildren();
}

const result: Record<string, unknown> = {};
for (const [name, acc] of runs) {
  const plain = medians(acc.plain);
  const secure = medians(acc.secure);
  const cost =
    name === 'herd'
      ? { drainRateCostPct: +((1 - secure.drainRate! / plain.drainRate!) * 100).toFixed(1), target: `<= ${TARGET.herdDrainRateCostPct} %` }
      : { latenessP99CostMs: +(secure.latenessP99Ms! - plain.latenessP99Ms!).toFixed(1), target: `<= ${TARGET.steadyP99CostMs} ms` };
  const met = name === 'herd' ? (cost as { drainRateCostPct: number }).drainRateCostPct <= TARGET.herdDrainRateCostPct : (cost as { latenessP99CostMs: number }).latenessP99CostMs <= TARGET.steadyP99CostMs;
  result[name] = { rounds: { plain: acc.plain.length, secure: acc.secure.length }, plain, secure, cost, targetMet: acc.plain.length > 0 && acc.secure.length > 0 ? met : 'no data', loadavg1m: acc.loads, errors: acc.errors };
}
console.log(
  JSON.stringify({
    bench: 'secure-cost',
    rounds: ROUNDS,
    sizes: { herdRuns: HERD_N, steadyJobs: STEADY_JOBS, steadySeconds: STEADY_S },
    pairs: result,
    wallS: Math.round((Date.now() - started) / 1000),
    machineAtEnd: machineLoad(),
  }),
);
