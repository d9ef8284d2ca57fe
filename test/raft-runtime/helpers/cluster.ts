import { appendFileSync } from 'node:fs';
// Real `herald server` processes on 127.0.0.1 with ephemeral ports and temp data dirs, for the
// multi-process Raft tests and benches. Everything started here is killed by cleanup().

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metadata, credentials, type ChannelCredentials, type ServiceError } from '@grpc/grpc-js';
import {
  ClusterServiceClient,
  NodeRole,
  type GetStatusResponse,
  type TransferLeadershipResponse,
} from '../../../src/gen/herald/v1/cluster_service.js';
import { KvStateMachine } from '../../../src/raft/kv/kv-state-machine.js';
import { KvClient } from './kv-client.js';

export const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'herald.mjs');

import { freePort } from '../../../chaos/orchestrator/free-port.js';
import { SERVER_NODE_FLAGS } from '../../../src/server/node/server-node-flags.js';

export { freePort };

export interface ClusterOptions {
  size: number;
  tickMs?: number;
  electionTicks?: number;
  snapshotEntries?: number;
  compactionKeep?: number;
  snapshotBytes?: number;
  compactionKeepBytes?: number;
  extraArgs?: string[];
  /** The address node `id` listens on and is dialled at (default 127.0.0.1). */
  host?: (id: string) => string;
  /** A command the node's process is started under, e.g. `ip netns exec <ns>` (default none). */
  spawnPrefix?: (id: string) => string[];
  /**
   * Transport-security flags of node `id` (certificates); default `--insecure`, plus
   * `--allow-insecure-network` when `host` puts the nodes on non-loopback addresses.
   */
  security?: (id: string) => string[];
  /** How the helper's status client dials the client ports (TLS with `security`); default plaintext. */
  clientCredentials?: ChannelCredentials;
  /** Keep stderr (JSON logs) of each node in memory for assertions. */
}

export interface NodeProc {
  id: string;
  peerPort: number;
  clientPort: number;
  dataDir: string;
  proc?: ChildProcess;
  exit?: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: string;
  /** The port GET /metrics is served on, once the server said so (given `--metrics-addr`). */
  metricsPort?: number;
  /** Client endpoints of a running cluster: the node starts with `--join` instead of `--peers`. */
  join?: string;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function waitFor<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, timeoutMs = 15_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v as T;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(everyMs);
  }
}

export class TestCluster {
  readonly nodes = new Map<string, NodeProc>();
  clusterId = '';
  kv!: KvClient;
  private readonly statusClients = new Map<string, ClusterServiceClient>();

  private constructor(
    readonly root: string,
    readonly opts: ClusterOptions,
  ) {}

  get tickMs(): number {
    return this.opts.tickMs ?? 50;
  }
  get electionTicks(): number {
    return this.opts.electionTicks ?? 10;
  }
  /** The longest randomized election timeout. */
  get maxElectionMs(): number {
    return 2 * this.tickMs * this.electionTicks;
  }

  static async create(opts: ClusterOptions): Promise<TestCluster> {
    const root = await mkdtemp(join(tmpdir(), 'herald-raft-'));
    const c = new TestCluster(root, opts);
    for (let i = 1; i <= opts.size; i++) {
      const id = `n${i}`;
      c.nodes.set(id, { id, peerPort: await freePort(), clientPort: await freePort(), dataDir: join(root, id), stderr: '' });
    }
    return c;
  }

  /** A slot for a node that joins the running cluster later (`herald server --join`); not started. */
  async addJoiner(id: string, endpoints: string[]): Promise<NodeProc> {
    const n: NodeProc = { id, peerPort: await freePort(), clientPort: await freePort(), dataDir: join(this.root, id), stderr: '', join: endpoints.join(',') };
    this.nodes.set(id, n);
    return n;
  }

  peersFlag(): string {
    return [...this.nodes.values()].filter((n) => !n.join).map((n) => `${n.id}=${this.hostOf(n.id)}:${n.peerPort}/${this.hostOf(n.id)}:${n.clientPort}`).join(',');
  }

  hostOf(id: string): string {
    return this.opts.host?.(id) ?? '127.0.0.1';
  }

  args(id: string, extra: string[] = []): string[] {
    const n = this.nodes.get(id)!;
    const o = this.opts;
    return [
      BIN,
      'server',
      '--state-machine',
      'kv',
      '--id',
      id,
      ...(n.join
        ? ['--join', n.join, '--peer-addr', `${this.hostOf(id)}:${n.peerPort}`, '--client-addr', `${this.hostOf(id)}:${n.clientPort}`]
        : ['--peers', this.peersFlag()]),
      '--data-dir',
      n.dataDir,
      '--tick-ms',
      String(this.tickMs),
      '--election-ticks',
      String(this.electionTicks),
      ...(o.snapshotEntries ? ['--snapshot-entries', String(o.snapshotEntries)] : []),
      ...(o.compactionKeep !== undefined ? ['--compaction-keep', String(o.compactionKeep)] : []),
      ...(o.snapshotBytes ? ['--snapshot-bytes', String(o.snapshotBytes)] : []),
      ...(o.compactionKeepBytes !== undefined ? ['--compaction-keep-bytes', String(o.compactionKeepBytes)] : []),
      ...(o.security ? o.security(id) : ['--insecure', ...(o.host ? ['--allow-insecure-network'] : [])]),
      ...(o.extraArgs ?? []),
      ...extra,
    ];
  }

  /** Spawns a node; resolves once it announced its ports (or rejects with its stderr). */
  async start(id: string, extra: string[] = []): Promise<NodeProc> {
    const n = this.nodes.get(id)!;
    n.stderr = '';
    // HERALD_BENCH_CPU_PROF=<dir> (benches): each server writes a V8 CPU profile there on exit.
    const dir = process.env.HERALD_BENCH_CPU_PROF;
    const prof = dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
    // HERALD_BENCH_NODE_ARGS (benches): extra node flags for every server, e.g. GC tuning or tracing.
    const nodeArgs = (process.env.HERALD_BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
    const argv = [process.execPath, ...SERVER_NODE_FLAGS, ...nodeArgs, ...prof, ...this.args(id, extra)];
    const [cmd, ...rest] = [...(this.opts.spawnPrefix?.(id) ?? []), ...argv];
    const proc = spawn(cmd!, rest, { stdio: ['ignore', 'pipe', 'pipe'] });
    n.proc = proc;
    n.exit = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
    proc.stderr!.on('data', (d: Buffer) => {
      n.stderr += d.toString();
      if (n.stderr.length > 4_000_000) n.stderr = n.stderr.slice(-2_000_000);
    });
    let out = '';
    await new Promise<void>((resolve, reject) => {
      // HERALD_BENCH_STDOUT_DIR=<dir> (benches): each server's stdout is kept there, e.g. for --trace-gc.
      const tee = process.env.HERALD_BENCH_STDOUT_DIR;
      proc.stdout!.on('data', (d: Buffer) => {
        if (tee) appendFileSync(`${tee}/${id}-${proc.pid}.log`, d);
        out += d.toString();
        const metrics = out.split('\n').find((l) => l.includes('"event":"metrics"'));
        if (metrics) n.metricsPort = (JSON.parse(metrics) as { metricsPort: number }).metricsPort;
        const line = out.split('\n').find((l) => l.includes('"listening"'));
        if (line) {
          const j = JSON.parse(line) as { clusterId: string };
          this.clusterId = j.clusterId;
          resolve();
        }
      });
      void n.exit!.then(({ code, signal }) => reject(new Error(`node ${id} exited (${code ?? signal}) before listening:\n${n.stderr.slice(-3000)}`)));
    });
    this.kv ??= new KvClient(this.clusterId, new Map([...this.nodes.values()].map((x) => [x.id, `${this.hostOf(x.id)}:${x.peerPort}`])));
    return n;
  }

  async startAll(): Promise<void> {
    await Promise.all([...this.nodes.keys()].map((id) => this.start(id)));
  }

  isRunning(id: string): boolean {
    const p = this.nodes.get(id)!.proc;
    return !!p && p.exitCode === null && p.signalCode === null;
  }

  runningIds(): string[] {
    return [...this.nodes.keys()].filter((id) => this.isRunning(id));
  }

  /** Sends a signal and waits for the process to exit. */
  async kill(id: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const n = this.nodes.get(id)!;
    if (!n.proc || !this.isRunning(id)) return (await n.exit) ?? { code: null, signal: null };
    n.proc.kill(signal);
    return n.exit!;
  }

  private statusClient(id: string): ClusterServiceClient {
    let c = this.statusClients.get(id);
    if (!c) {
      c = new ClusterServiceClient(`${this.hostOf(id)}:${this.nodes.get(id)!.clientPort}`, this.opts.clientCredentials ?? credentials.createInsecure());
      this.statusClients.set(id, c);
    }
    return c;
  }

  status(id: string, timeoutMs = 2000): Promise<GetStatusResponse> {
    return new Promise((resolve, reject) =>
      this.statusClient(id).getStatus({}, new Metadata(), { deadline: Date.now() + timeoutMs }, (err: ServiceError | null, r) =>
        err ? reject(err) : resolve(r),
      ),
    );
  }

  transfer(id: string, targetId = '', timeoutMs = 10_000): Promise<TransferLeadershipResponse> {
    return new Promise((resolve, reject) =>
      this.statusClient(id).transferLeadership({ targetId }, new Metadata(), { deadline: Date.now() + timeoutMs }, (err: ServiceError | null, r) =>
        err ? reject(err) : resolve(r),
      ),
    );
  }

  /** A leader that every running node agrees on (same term). */
  async waitForLeader(timeoutMs = 15_000, among = this.runningIds()): Promise<string> {
    return waitFor(
      'an agreed leader',
      async () => {
        const sts = await Promise.all(among.map((id) => this.status(id)));
        const leaders = sts.filter((s) => s.role === NodeRole.NODE_ROLE_LEADER);
        if (leaders.length !== 1) return undefined;
        const l = leaders[0]!;
        return sts.every((s) => s.leaderId === l.nodeId && s.term === l.term) ? l.nodeId : undefined;
      },
      timeoutMs,
    );
  }

  /** Waits until every running node applied at least the leader's commit index. */
  async waitConverged(timeoutMs = 20_000): Promise<number> {
    return waitFor(
      'all nodes to apply the leader commit',
      async () => {
        const leader = await this.waitForLeader(timeoutMs);
        const l = await this.status(leader);
        const sts = await Promise.all(this.runningIds().map((id) => this.status(id)));
        return sts.every((s) => s.appliedIndex >= l.commitIndex) ? l.commitIndex : undefined;
      },
      timeoutMs,
      100,
    );
  }

  /** Opens a stopped node's state machine directly (offline inspection). */
  async withStateMachine<T>(id: string, fn: (sm: KvStateMachine) => Promise<T>): Promise<T> {
    if (this.isRunning(id)) throw new Error(`node ${id} is running`);
    const sm = await KvStateMachine.open(join(this.nodes.get(id)!.dataDir, 'sm'));
    try {
      return await fn(sm);
    } finally {
      await sm.close();
    }
  }

  async stopAll(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    await Promise.all(this.runningIds().map((id) => this.kill(id, signal)));
  }

  async cleanup(): Promise<void> {
    for (const id of this.nodes.keys()) {
      const p = this.nodes.get(id)!.proc;
      if (p && p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    }
    await Promise.all([...this.nodes.values()].map((n) => n.exit?.catch(() => undefined)));
    this.kv?.close();
    for (const c of this.statusClients.values()) c.close();
    await rm(this.root, { recursive: true, force: true });
  }
}

export { NodeRole };
