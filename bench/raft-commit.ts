// Raft commit throughput and latency on a 3-node cluster of real `herald server` processes
// (built CLI, 127.0.0.1, temp data dirs, KV state machine), the same workload as
// ../shared/peers/etcd-bench.mjs: closed-loop puts of 256-byte values to the leader, keys
// bench/<tag>/<n mod 100000>, 2 s warm-up, then (a) concurrency 1 and (b) concurrency 64.
// Reports ops/s, latency percentiles (nearest rank), CPU, and fsyncs per committed entry.
//
// Usage: npm run build && npm run bench -- raft-commit [--seq-seconds 12] [--conc-seconds 12]
//        [--warmup-seconds 2] [--concurrency 64] [--value-bytes 256] [--procs 1] [--etcd-json <file>]
// The load generator sends each put to the leader's peer port as one RaftService.Forward call;
// every put is its own Raft entry, answered only once committed and applied.
// Progress goes to stderr; the last stdout line is JSON.

import { spawn, fork, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Metadata, credentials, type ServiceError } from '@grpc/grpc-js';
import { RaftServiceClient } from '../src/gen/herald/raft/v1/raft.js';
import { ClusterServiceClient, NodeRole, type GetStatusResponse } from '../src/gen/herald/v1/cluster_service.js';
import { encodeKvCommand } from '../src/raft/kv/kv-command.js';
import { SERVER_NODE_FLAGS } from '../src/server/node/server-node-flags.js';

const args = process.argv.slice(2);
function opt(name: string, def: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : def;
}
const O = {
  seqSeconds: Number(opt('seq-seconds', '12')),
  concSeconds: Number(opt('conc-seconds', '12')),
  warmupSeconds: Number(opt('warmup-seconds', '2')),
  concurrency: Number(opt('concurrency', '64')),
  valueBytes: Number(opt('value-bytes', '256')),
  procs: Number(opt('procs', '1')),
  etcdJson: opt('etcd-json', ''),
  role: opt('role', 'main'),
  target: opt('target', ''),
  clusterId: opt('cluster-id', ''),
};

const log = (...a: unknown[]) => process.stderr.write(a.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join(' ') + '\n');
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const BIN = join(fileURLToPath(new URL('.', import.meta.url)), '..', 'bin', 'herald.mjs');

function pct(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}
function summarize(values: number[]) {
  const a = Float64Array.from(values).sort();
  const r = (x: number) => Number(x.toFixed(3));
  let sum = 0;
  for (const v of a) sum += v;
  return { n: a.length, min: r(a[0] ?? NaN), p50: r(pct(a, 0.5)), p90: r(pct(a, 0.9)), p99: r(pct(a, 0.99)), p999: r(pct(a, 0.999)), max: r(a[a.length - 1] ?? NaN), mean: r(sum / Math.max(1, a.length)) };
}

function cpuSeconds(pid: number): number {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0;
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

// ---------------------------------------------------------------- load generator

function makeLoad(client: RaftServiceClient, clusterId: string, conc: number, tag: string) {
  const value = Buffer.alloc(O.valueBytes, 'x');
  let seq = 0;
  let errors = 0;
  let lat: number[] = [];
  let measuring = false;
  let stop = false;
  let cpu0 = process.cpuUsage();
  let t0 = process.hrtime.bigint();
  const put = (key: string): Promise<unknown> => {
    const command = Buffer.from(encodeKvCommand({ op: 'put', key, value }));
    return new Promise<void>((resolve, reject) => {
      client.forward({ clusterId, command, timeoutMs: 10_000 }, (err: ServiceError | null) => (err ? reject(err) : resolve()));
    });
  };
  const loop = async () => {
    while (!stop) {
      const k = `bench/${tag}/${seq++ % 100_000}`;
      const t = process.hrtime.bigint();
      try {
        await put(k);
      } catch (e) {
        errors++;
        if (errors < 5) log(`put error: ${(e as Error).message}`);
        continue;
      }
      if (measuring) lat.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
  };
  const loops = Array.from({ length: conc }, () => loop());
  return {
    begin() {
      lat = [];
      errors = 0;
      cpu0 = process.cpuUsage();
      t0 = process.hrtime.bigint();
      measuring = true;
    },
    async end() {
      measuring = false;
      const elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
      const cpu = process.cpuUsage(cpu0);
      stop = true;
      await Promise.all(loops);
      return { lat, errors, elapsed, cpuSec: (cpu.user + cpu.system) / 1e6 };
    },
  };
}

function newClient(target: string): RaftServiceClient {
  return new RaftServiceClient(target, credentials.createInsecure(), { 'grpc.max_receive_message_length': 64 << 20 });
}

async function loadgenChild(): Promise<void> {
  const client = newClient(O.target);
  const load = makeLoad(client, O.clusterId, O.concurrency, `conc${process.pid}`);
  process.on('message', (m: { cmd: string }) => {
    if (m.cmd === 'begin') load.begin();
    if (m.cmd === 'end') {
      void load.end().then((r) => process.send!({ type: 'result', ...r }, () => process.exit(0)));
    }
  });
  process.send!({ type: 'ready' });
}

// ---------------------------------------------------------------- cluster

interface Node {
  id: string;
  peerPort: number;
  clientPort: number;
  proc?: ChildProcess;
  out: string;
}

/** Fills `nodes` as it spawns, so the caller's cleanup finds every process even when a start fails. */
async function startCluster(root: string, nodes: Node[]): Promise<void> {
  for (let i = 1; i <= 3; i++) nodes.push({ id: `n${i}`, peerPort: await freePort(), clientPort: await freePort(), out: '' });
  const peers = nodes.map((n) => `${n.id}=127.0.0.1:${n.peerPort}/127.0.0.1:${n.clientPort}`).join(',');
  await Promise.all(
    nodes.map(
      (n) =>
        new Promise<void>((resolve, reject) => {
          // HERALD_BENCH_CPU_PROF=<dir>: each server writes a V8 CPU profile there on exit.
          const prof = process.env.HERALD_BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.HERALD_BENCH_CPU_PROF}`] : [];
          const p = spawn(process.execPath, [...SERVER_NODE_FLAGS, ...prof, BIN, 'server', '--insecure', '--state-machine', 'kv', '--id', n.id, '--peers', peers, '--data-dir', join(root, n.id), '--log-level', 'warn'], {
            stdio: ['ignore', 'pipe', 'inherit'],
          });
          n.proc = p;
          p.stdout!.on('data', (d: Buffer) => {
            n.out += d.toString();
            if (n.out.includes('"listening"')) resolve();
          });
          p.once('exit', (code) => reject(new Error(`${n.id} exited with ${code}`)));
        }),
    ),
  );
}

function status(n: Node): Promise<GetStatusResponse> {
  const c = new ClusterServiceClient(`127.0.0.1:${n.clientPort}`, credentials.createInsecure());
  return new Promise((resolve, reject) =>
    c.getStatus({}, new Metadata(), { deadline: Date.now() + 2000 }, (err: ServiceError | null, r) => {
      c.close();
      if (err) reject(err);
      else resolve(r);
    }),
  );
}

interface NodeStats {
  id: string;
  commit: number;
  storage: { syncedWrites: number; entriesWritten: number };
  driver: { readies: number; entriesApplied: number; persistMs: number; applyMs: number };
}

async function nodeStats(nodes: Node[]): Promise<NodeStats[]> {
  const out: NodeStats[] = [];
  for (const n of nodes) {
    const before = n.out.length;
    n.proc!.kill('SIGUSR2');
    for (let i = 0; i < 100; i++) {
      const tail = n.out.slice(before);
      const line = tail.split('\n').find((l) => l.includes('"stats"'));
      if (line && line.endsWith('}')) {
        out.push(JSON.parse(line) as NodeStats);
        break;
      }
      await sleep(20);
    }
  }
  return out;
}

async function runPhase(nodes: Node[], leader: Node, clusterId: string, conc: number, seconds: number, tag: string, procs: number) {
  const target = `127.0.0.1:${leader.peerPort}`;
  const parts: Array<{ begin: () => void; end: () => Promise<{ lat: number[]; errors: number; elapsed: number; cpuSec: number }> }> = [];
  const clients: RaftServiceClient[] = [];
  if (procs <= 1) {
    const client = newClient(target);
    clients.push(client);
    const load = makeLoad(client, clusterId, conc, tag);
    parts.push({ begin: () => load.begin(), end: () => load.end() });
  } else {
    const self = fileURLToPath(import.meta.url);
    for (let i = 0; i < procs; i++) {
      const c = Math.floor(conc / procs) + (i < conc % procs ? 1 : 0);
      const ch = fork(self, ['--role', 'loadgen', '--target', target, '--cluster-id', clusterId, '--concurrency', String(c), '--value-bytes', String(O.valueBytes)], {
        execArgv: ['--import', 'tsx'],
        serialization: 'advanced',
      });
      await new Promise((res) => ch.once('message', res));
      parts.push({
        begin: () => ch.send({ cmd: 'begin' }),
        end: () => new Promise((res) => {
          ch.once('message', (m) => res(m as never));
          ch.send({ cmd: 'end' });
        }),
      });
    }
  }
  await sleep(O.warmupSeconds * 1000);
  const s0 = await nodeStats(nodes);
  const srv0 = nodes.reduce((a, n) => a + cpuSeconds(n.proc!.pid!), 0);
  const t0 = process.hrtime.bigint();
  for (const p of parts) p.begin();
  await sleep(seconds * 1000);
  const results = await Promise.all(parts.map((p) => p.end()));
  const elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
  const srvCpu = nodes.reduce((a, n) => a + cpuSeconds(n.proc!.pid!), 0) - srv0;
  const s1 = await nodeStats(nodes);
  for (const c of clients) c.close();
  const lat: number[] = [];
  let errors = 0;
  let cpuSec = 0;
  for (const r of results) {
    for (const v of r.lat) lat.push(v);
    errors += r.errors;
    cpuSec += r.cpuSec;
  }
  // fsyncs per committed entry: synced log writes on all three nodes over the entries committed
  // in the same window (stats are sampled around the warm-up-free window plus drain).
  const committed = Math.max(...s1.map((s) => s.commit)) - Math.max(...s0.map((s) => s.commit));
  const syncs = s1.reduce((a, s, i) => a + s.storage.syncedWrites - s0[i]!.storage.syncedWrites, 0);
  const leaderIdx = nodes.indexOf(leader);
  const leaderSyncs = s1[leaderIdx]!.storage.syncedWrites - s0[leaderIdx]!.storage.syncedWrites;
  return {
    concurrency: conc,
    loadgen_procs: procs,
    value_bytes: O.valueBytes,
    seconds: Number(elapsed.toFixed(2)),
    ops: lat.length,
    ops_per_s: Number((lat.length / elapsed).toFixed(1)),
    lat_ms: summarize(lat),
    errors,
    committed_entries: committed,
    fsyncs_per_entry_all_nodes: Number((syncs / Math.max(1, committed)).toFixed(4)),
    fsyncs_per_entry_leader: Number((leaderSyncs / Math.max(1, committed)).toFixed(4)),
    client_cpu_pct: Number(((cpuSec / elapsed) * 100).toFixed(1)),
    herald_cpu_pct_total: Number(((srvCpu / elapsed) * 100).toFixed(1)),
    // Per node, over the window: where a round's time goes (leader first).
    nodes: [leaderIdx, ...nodes.map((_, i) => i).filter((i) => i !== leaderIdx)].map((i) => {
      const a = s0[i]!;
      const b = s1[i]!;
      const readies = b.driver.readies - a.driver.readies;
      const syncsN = b.storage.syncedWrites - a.storage.syncedWrites;
      return {
        id: b.id,
        readies,
        entries_per_sync: Number(((b.storage.entriesWritten - a.storage.entriesWritten) / Math.max(1, syncsN)).toFixed(1)),
        persist_ms_avg: Number(((b.driver.persistMs - a.driver.persistMs) / Math.max(1, syncsN)).toFixed(3)),
        apply_ms_per_entry: Number(((b.driver.applyMs - a.driver.applyMs) / Math.max(1, b.driver.entriesApplied - a.driver.entriesApplied)).toFixed(4)),
      };
    }),
  };
}

/** The machine is shared: record how busy it was, so figures can be read against it. */
async function machineInfo(): Promise<Record<string, unknown>> {
  const os = await import('node:os');
  let cpuPressure = '';
  try {
    cpuPressure = readFileSync('/proc/pressure/cpu', 'utf8').split('\n')[0] ?? '';
  } catch {
    /* not Linux */
  }
  return { node: process.version, cpus: os.cpus().length, cpu_model: os.cpus()[0]?.model, loadavg: os.loadavg().map((x) => Number(x.toFixed(2))), cpu_pressure: cpuPressure };
}

async function main(): Promise<void> {
  const started = Date.now();
  const root = await mkdtemp(join(tmpdir(), 'herald-bench-'));
  const nodes: Node[] = [];
  const cleanup = async () => {
    for (const n of nodes) if (n.proc && n.proc.exitCode === null) n.proc.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  };
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => void cleanup().then(() => process.exit(130)));
  try {
    await startCluster(root, nodes);
    let leader: Node | undefined;
    let clusterId = '';
    for (let i = 0; i < 300 && !leader; i++) {
      for (const n of nodes) {
        const st = await status(n).catch(() => undefined);
        if (st?.role === NodeRole.NODE_ROLE_LEADER) {
          leader = n;
          clusterId = st.clusterId;
        }
      }
      if (!leader) await sleep(100);
    }
    if (!leader) throw new Error('no leader');
    log(`leader is ${leader.id} (peer port ${leader.peerPort})`);
    log(`(a) sequential puts for ${O.seqSeconds}s`);
    const seq = await runPhase(nodes, leader, clusterId, 1, O.seqSeconds, 'seq', 1);
    log('seq', seq);
    log(`(b) concurrency ${O.concurrency} puts for ${O.concSeconds}s`);
    const conc = await runPhase(nodes, leader, clusterId, O.concurrency, O.concSeconds, 'conc', O.procs);
    log('conc', conc);
    const after = await Promise.all(nodes.map((n) => status(n).then((s) => ({ id: s.nodeId, role: s.role, term: s.term, commit: s.commitIndex, applied: s.appliedIndex }))));

    let vs_etcd: Record<string, unknown> | undefined;
    if (O.etcdJson) {
      const lines = (await readFile(O.etcdJson, 'utf8')).trim().split('\n');
      const e = JSON.parse(lines[lines.length - 1]!) as {
        seq_puts: { ops_per_s: number; lat_ms: { p50: number; p99: number } };
        conc_puts: { ops_per_s: number; lat_ms: { p50: number; p99: number } };
      };
      vs_etcd = {
        etcd_seq_ops_per_s: e.seq_puts.ops_per_s,
        etcd_conc_ops_per_s: e.conc_puts.ops_per_s,
        etcd_conc_p99_ms: e.conc_puts.lat_ms.p99,
        seq_throughput_ratio: Number((seq.ops_per_s / e.seq_puts.ops_per_s).toFixed(3)),
        conc_throughput_ratio: Number((conc.ops_per_s / e.conc_puts.ops_per_s).toFixed(3)),
        conc_p99_ratio: Number((conc.lat_ms.p99 / e.conc_puts.lat_ms.p99).toFixed(3)),
        conc_p50_ratio: Number((conc.lat_ms.p50 / e.conc_puts.lat_ms.p50).toFixed(3)),
      };
    }
    await Promise.all(nodes.map((n) => new Promise<void>((res) => {
      n.proc!.once('exit', () => res());
      n.proc!.kill('SIGTERM');
    })));
    process.stdout.write(
      JSON.stringify({
        bench: 'raft-commit',
        config: { members: 3, loopback: true, fsync: 'sync write per Ready (group commit)', target: 'leader peer port (RaftService.Forward, one call per put)', tick_ms: 100, election_ticks: 10, warmup_s: O.warmupSeconds, key_space: 100000 },
        machine: await machineInfo(),
        seq_puts: seq,
        conc_puts: conc,
        cluster_after: after,
        vs_etcd,
        wall_s: Number(((Date.now() - started) / 1000).toFixed(1)),
      }) + '\n',
    );
  } finally {
    await cleanup();
  }
}

if (O.role === 'loadgen') await loadgenChild();
else await main();
