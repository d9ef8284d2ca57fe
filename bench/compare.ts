// Ours vs the peers (../shared/peers), interleaved on this machine, with ratios ours / peer:
//  - public : bench/public-commit.ts (CreateJob through the SDK, endpoints = every node: what a
//             user's write costs) vs etcd 3.4 puts at concurrency 64 and 1 — the headline;
//  - raft   : bench/raft-commit.ts vs etcd 3.4 (3 members), 256-byte puts at concurrency 64 and 1
//             (the raw consensus path: a bare command per RaftService.Forward call on the peer port);
//  - herd   : bench/herd.ts vs BullMQ herd (Redis AOF, --bullmq-fsync), N one-offs due at once;
//  - steady : bench/steady.ts vs BullMQ job schedulers (1 job / s each) — lateness.
// Each round runs every selected pair, ours first in odd rounds and the peer first in even ones;
// the report gives per-metric medians over the rounds and the ratio of the medians. A peer whose
// tools are absent (and cannot be installed: not root) is reported as skipped, not failed.
//
// Run: npm run bench -- compare [--rounds 1] [--pairs public,raft,herd,steady] [--raft-seconds 12]
//      [--warmup-seconds 2] [--herd-runs 100000] [--steady-jobs 1000] [--steady-seconds 30]
//      [--bullmq-fsync always] [--peers-dir ../shared/peers]
// Progress (and every raw result line) goes to stderr; the last stdout line is JSON.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { numArg, strArg } from './lib/args.js';
import {
  herdVsBullmq,
  raftVsEtcd,
  steadyVsBullmqSched,
  summarizeRounds,
  type OurHerd,
  type OurSteady,
  type PairFigures,
  type PeerHerd,
  type PeerSched,
  type PutsResult,
} from './lib/compare-ratios.js';
import { machineLoad } from './lib/machine.js';
import { runJson, stopChildren, type JsonRun } from './lib/run-json.js';

const here = dirname(fileURLToPath(import.meta.url));
const ROUNDS = numArg('rounds', 1);
const PAIRS = strArg('pairs', 'public,raft,herd,steady').split(',').filter(Boolean);
const RAFT_S = numArg('raft-seconds', 12);
const WARMUP_S = numArg('warmup-seconds', 2);
const HERD_N = numArg('herd-runs', 100_000);
const STEADY_JOBS = numArg('steady-jobs', 1000);
const STEADY_S = numArg('steady-seconds', 30);
const FSYNC = strArg('bullmq-fsync', 'always');
const PEERS = resolve(strArg('peers-dir', join(here, '..', '..', 'shared', 'peers')));
const log = (m: string) => process.stderr.write(`[compare] ${m}\n`);

function onPath(bin: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Why a peer cannot run here, or undefined when it can (its script installs what is missing as root). */
function peerMissing(script: string, bin: string): string | undefined {
  if (!existsSync(join(PEERS, script))) return `${join(PEERS, script)} not found`;
  if (!onPath(bin) && process.getuid?.() !== 0) return `${bin} is not installed and installing it needs root`;
  return undefined;
}

const ours = (name: string, args: string[], timeoutMs: number) =>
  runJson(`ours ${name}`, process.execPath, ['--import', 'tsx', join(here, `${name}.ts`), ...args], {
    timeoutMs,
    // Our benches' clusters draw test ports from a block of their own (see lib/ports.ts).
    env: { ...process.env, VITEST_POOL_ID: process.env.VITEST_POOL_ID ?? '7' },
  });
const peer = (script: string, args: string[], timeoutMs: number) => runJson(`peer ${script}`, join(PEERS, script), args, { timeoutMs });

interface PairPlan {
  name: string;
  missing?: string;
  ours: () => Promise<JsonRun>;
  peer: () => Promise<JsonRun>;
  figures: (o: Record<string, unknown>, p: Record<string, unknown>) => PairFigures;
  invariants: (o: Record<string, unknown>, p: Record<string, unknown>) => Record<string, unknown>;
}

// A BullMQ herd's instant is `lead` seconds after adding starts: leave room to add N jobs even on
// a busy machine (2,000 adds/s; 22,000/s when quiet), else its drain includes adding.
const bullLead = Math.max(20, Math.ceil(HERD_N / 2000));
// The peer's own drain bound (150 s) ends a million-job herd before it is done: scale it as the lead.
const bullDrainTimeoutS = Math.max(150, Math.ceil(HERD_N / 1000));
const etcdPlan = {
  missing: peerMissing('run-etcd.sh', 'etcd'),
  peer: () => peer('run-etcd.sh', ['--seq-seconds', String(RAFT_S), '--conc-seconds', String(RAFT_S), '--warmup-seconds', String(WARMUP_S)], 600_000),
  figures: (o: Record<string, unknown>, p: Record<string, unknown>) => raftVsEtcd(o as unknown as PutsResult, p as unknown as PutsResult),
  invariants: (o: Record<string, unknown>, p: Record<string, unknown>) => ({
    oursErrors: (o as { conc_puts: { errors: number } }).conc_puts.errors,
    peerErrors: (p as { conc_puts: { errors: number } }).conc_puts.errors,
  }),
};
const plans: Record<string, PairPlan> = {
  public: {
    name: 'public-commit (SDK CreateJob) vs etcd',
    ...etcdPlan,
    ours: () => ours('public-commit', ['--seq-seconds', String(RAFT_S), '--conc-seconds', String(RAFT_S), '--warmup-seconds', String(WARMUP_S)], 300_000),
  },
  raft: {
    name: 'raft-commit (raw consensus, Forward per put) vs etcd',
    ...etcdPlan,
    ours: () => ours('raft-commit', ['--seq-seconds', String(RAFT_S), '--conc-seconds', String(RAFT_S), '--warmup-seconds', String(WARMUP_S)], 300_000),
  },
  herd: {
    name: 'herd vs BullMQ herd',
    missing: peerMissing('run-bullmq.sh', 'redis-server'),
    ours: () => ours('herd', ['--runs', String(HERD_N)], 60 * 60_000),
    peer: () => peer('run-bullmq.sh', ['--fsync', FSYNC, '--phases', 'herd', '--herd-n', String(HERD_N), '--lead-s', String(bullLead), '--drain-timeout-s', String(bullDrainTimeoutS)], 30 * 60_000),
    figures: (o, p) => herdVsBullmq(o as unknown as OurHerd, (p as { herd: PeerHerd }).herd),
    invariants: (o, p) => {
      const h = (p as { herd: { lost: number; duplicated_jobs: number } }).herd;
      const x = o as { runs: number; succeeded: number; doubled: number };
      return { oursLost: x.runs - x.succeeded, oursDoubled: x.doubled, peerLost: h.lost, peerDoubled: h.duplicated_jobs };
    },
  },
  steady: {
    name: 'steady vs BullMQ job schedulers',
    missing: peerMissing('run-bullmq.sh', 'redis-server'),
    ours: () => ours('steady', ['--jobs', String(STEADY_JOBS), '--seconds', String(STEADY_S)], 30 * 60_000),
    peer: () => peer('run-bullmq.sh', ['--fsync', FSYNC, '--phases', 'sched', '--sched-n', String(STEADY_JOBS), '--sched-s', String(STEADY_S)], 30 * 60_000),
    figures: (o, p) => steadyVsBullmqSched(o as unknown as OurSteady, (p as { sched: PeerSched }).sched),
    invariants: (o, p) => {
      const s = (p as { sched: { missed_slots: number; duplicate_slots: number } }).sched;
      const x = o as { lost: number; doubled: number; notStarted: number };
      return { oursLost: x.lost, oursDoubled: x.doubled, oursNotStarted: x.notStarted, peerMissed: s.missed_slots, peerDoubled: s.duplicate_slots };
    },
  },
};

for (const p of PAIRS) if (!plans[p]) throw new Error(`unknown pair ${p}; pairs: ${Object.keys(plans).join(', ')}`);
process.on('SIGINT', () => void stopChildren().then(() => process.exit(130)));
process.on('SIGTERM', () => void stopChildren().then(() => process.exit(143)));

const result: Record<string, unknown> = {};
const perPair = new Map<string, { rounds: PairFigures[]; invariants: Record<string, unknown>[]; errors: string[]; loads: number[] }>();
const started = Date.now();
try {
  for (let round = 1; round <= ROUNDS; round++) {
    for (const key of PAIRS) {
      const plan = plans[key]!;
      const acc = perPair.get(key) ?? { rounds: [], invariants: [], errors: [], loads: [] };
      perPair.set(key, acc);
      if (plan.missing) {
        if (round === 1) log(`${plan.name}: peer skipped (${plan.missing}); ours not run either — a ratio needs both`);
        continue;
      }
      log(`round ${round}/${ROUNDS}: ${plan.name}`);
      acc.loads.push(machineLoad().loadavg[0]!);
      const order = round % 2 === 1 ? [plan.ours, plan.peer] : [plan.peer, plan.ours];
      const [a, b] = [await order[0]!(), await order[1]!()];
      const [o, p] = round % 2 === 1 ? [a, b] : [b, a];
      for (const r of [o, p]) if (r.json) process.stderr.write(`[compare] raw ${JSON.stringify(r.json)}\n`);
      if (o.error || p.error) {
        acc.errors.push(...[o.error, p.error].filter((e): e is string => !!e));
        log(`${plan.name}: round ${round} failed: ${[o.error, p.error].filter(Boolean).join('; ')}`);
        continue;
      }
      acc.rounds.push(plan.figures(o.json!, p.json!));
      acc.invariants.push(plan.invariants(o.json!, p.json!));
    }
  }
  for (const key of PAIRS) {
    const plan = plans[key]!;
    const acc = perPair.get(key)!;
    result[key] = plan.missing
      ? { name: plan.name, skipped: plan.missing }
      : { name: plan.name, roundsOk: acc.rounds.length, metrics: summarizeRounds(acc.rounds), invariants: acc.invariants, loadavg1m: acc.loads, errors: acc.errors };
  }
} finally {
  await stopChildren();
}
console.log(
  JSON.stringify({
    bench: 'compare',
    rounds: ROUNDS,
    ratio: 'ours / peer (throughput: higher is better; latency: lower is better)',
    // What a user's write gets (the SDK's CreateJob); `pairs.raft` is the raw consensus path beside it.
    headline: result.public,
    bullmqFsync: FSYNC,
    sizes: { raftSeconds: RAFT_S, herdRuns: HERD_N, steadyJobs: STEADY_JOBS, steadySeconds: STEADY_S },
    pairs: result,
    wallS: Math.round((Date.now() - started) / 1000),
    machineAtEnd: machineLoad(),
  }),
);
