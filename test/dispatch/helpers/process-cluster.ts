// Real `herald server --state-machine scheduler` processes plus real worker processes
// (fixtures/worker-process.ts), for the multi-process dispatch tests and benches. Everything
// started here is killed by cleanup(), even when a test fails.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HeraldClient } from '../../../src/client/herald-client.js';
import { SchedulerStateMachine } from '../../../src/fsm/index.js';
import type { JobSpec } from '../../../src/gen/herald/v1/job.js';
import { TestCluster, waitFor } from '../../raft-runtime/helpers/cluster.js';
import type { TimedEvent } from '../fixtures/raw-worker.js';
import { createRoleTokens, makeSecureCluster, type SecureCluster } from '../../../chaos/orchestrator/secure-cluster.js';

export interface SchedulerClusterOptions {
  size?: number;
  tickMs?: number;
  electionTicks?: number;
  leaseMs?: number;
  heartbeatMs?: number;
  misfireThresholdMs?: number;
  watchdogGraceMs?: number;
  extraArgs?: string[];
  /** Where the nodes listen and how they are started (TestCluster's host / spawnPrefix). */
  host?: (id: string) => string;
  spawnPrefix?: (id: string) => string[];
  /**
   * TLS on both ports and auth on (chaos/orchestrator/secure-cluster.ts): `client` writes with an
   * operator token, `workerAuth` holds a worker token for the task type `test`.
   */
  secure?: boolean;
}

/** What a worker process needs to connect to a secure cluster. */
export interface WorkerAuth {
  caFile: string;
  token: string;
}

const WORKER_SCRIPT = join(import.meta.dirname, '..', 'fixtures', 'worker-process.ts');

export class WorkerProc {
  readonly events: TimedEvent[] = [];
  readonly exit: Promise<unknown>;
  private buf = '';

  constructor(
    readonly id: string,
    readonly proc: ChildProcess,
  ) {
    this.exit = new Promise((r) => proc.once('exit', r));
    proc.stdout!.on('data', (d: Buffer) => {
      this.buf += d.toString();
      const lines = this.buf.split('\n');
      this.buf = lines.pop()!;
      for (const l of lines) if (l.trim()) this.events.push(JSON.parse(l) as TimedEvent);
    });
    proc.stderr!.on('data', () => undefined);
  }

  get running(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  of<T extends TimedEvent['type']>(type: T): Extract<TimedEvent, { type: T }>[] {
    return this.events.filter((e) => e.type === type) as Extract<TimedEvent, { type: T }>[];
  }

  signal(sig: NodeJS.Signals): void {
    if (this.running) this.proc.kill(sig);
  }
}

export class SchedulerCluster {
  readonly workers: WorkerProc[] = [];
  client!: HeraldClient;
  /** Set on a secure cluster. */
  workerAuth: WorkerAuth | undefined;

  private constructor(
    readonly raft: TestCluster,
    readonly opts: SchedulerClusterOptions,
    private readonly secureDir?: string,
  ) {}

  static async start(opts: SchedulerClusterOptions = {}): Promise<SchedulerCluster> {
    const args = [
      '--state-machine',
      'scheduler',
      '--lease-ms',
      String(opts.leaseMs ?? 2000),
      '--heartbeat-interval-ms',
      String(opts.heartbeatMs ?? 300),
      '--misfire-threshold-ms',
      String(opts.misfireThresholdMs ?? 5000),
      '--watchdog-grace-ms',
      String(opts.watchdogGraceMs ?? 5000),
      '--log-level',
      'warn',
      ...(opts.extraArgs ?? []),
    ];
    const size = opts.size ?? 3;
    const secureDir = opts.secure ? await mkdtemp(join(tmpdir(), 'herald-secure-')) : undefined;
    let sec: SecureCluster | undefined;
    try {
      if (secureDir) sec = await makeSecureCluster(secureDir, Array.from({ length: size }, (_, i) => `n${i + 1}`));
    } catch (e) {
      if (secureDir) await rm(secureDir, { recursive: true, force: true });
      throw e;
    }
    const raft = await TestCluster.create({
      size,
      tickMs: opts.tickMs ?? 100,
      electionTicks: opts.electionTicks ?? 10,
      extraArgs: args,
      host: opts.host,
      spawnPrefix: opts.spawnPrefix,
      ...(sec ? { security: sec.serverFlags, clientCredentials: sec.observerCredentials } : {}),
    });
    const c = new SchedulerCluster(raft, opts, secureDir);
    try {
      await raft.startAll();
      let auth = {};
      if (sec) {
        const t = await createRoleTokens(c.endpoints, sec, [
          { name: 'test-client', role: 'operator' },
          { name: 'test-workers', role: 'worker', taskTypes: ['test'] },
        ]);
        auth = { tls: sec.clientTls, token: t['test-client']! };
        c.workerAuth = { caFile: sec.caFile, token: t['test-workers']! };
      }
      c.client = new HeraldClient({ endpoints: c.endpoints, defaultDeadlineMs: 20_000, ...auth });
      await raft.waitForLeader();
    } catch (e) {
      await c.cleanup();
      throw e;
    }
    return c;
  }

  get endpoints(): string[] {
    return [...this.raft.nodes.values()].map((n) => `${this.raft.hostOf(n.id)}:${n.clientPort}`);
  }

  startWorker(id: string, o: { capacity?: number; sleepMs?: number; reportAfterLoss?: boolean; types?: string[]; quiet?: boolean; batches?: boolean } = {}): WorkerProc {
    // HERALD_BENCH_WORKER_CPU_PROF=<dir> (benches): each worker writes a V8 CPU profile there on exit.
    const prof = process.env.HERALD_BENCH_WORKER_CPU_PROF;
    const args = [
      ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []),
      '--import',
      'tsx',
      WORKER_SCRIPT,
      '--endpoints',
      this.endpoints.join(','),
      '--id',
      id,
      '--types',
      (o.types ?? ['test']).join(','),
      '--capacity',
      String(o.capacity ?? 4),
      '--sleep-ms',
      String(o.sleepMs ?? 0),
      ...(o.reportAfterLoss ? ['--report-after-loss'] : []),
      ...(o.quiet ? ['--quiet'] : []),
      ...(o.batches === false ? ['--no-batches'] : []),
    ];
    const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const w = new WorkerProc(id, proc);
    this.workers.push(w);
    return w;
  }

  async waitWorkersConnected(workers: WorkerProc[], timeoutMs = 45_000): Promise<void> {
    await waitFor('workers welcomed', () => workers.every((w) => w.of('welcome').length > 0), timeoutMs, 50);
  }

  /** Opens a stopped node's scheduler state machine (offline inspection). */
  async withFsm<T>(id: string, fn: (fsm: SchedulerStateMachine) => Promise<T>): Promise<T> {
    if (this.raft.isRunning(id)) throw new Error(`node ${id} is running`);
    const fsm = await SchedulerStateMachine.open(join(this.raft.nodes.get(id)!.dataDir, 'sm'));
    try {
      return await fn(fsm);
    } finally {
      await fsm.close();
    }
  }

  /** Stops every node gracefully and opens the one that applied the most. */
  async stopAndInspect<T>(fn: (fsm: SchedulerStateMachine) => Promise<T>): Promise<T> {
    await this.raft.stopAll('SIGTERM');
    let best = '';
    let bestApplied = -1;
    for (const id of this.raft.nodes.keys()) {
      const applied = await this.withFsm(id, (f) => f.appliedIndex());
      if (applied > bestApplied) {
        best = id;
        bestApplied = applied;
      }
    }
    return this.withFsm(best, fn);
  }

  async cleanup(): Promise<void> {
    for (const w of this.workers) w.signal('SIGKILL');
    await Promise.all(this.workers.map((w) => w.exit));
    this.client?.close();
    await this.raft.cleanup();
    if (this.secureDir) await rm(this.secureDir, { recursive: true, force: true });
  }
}

/**
 * Creates jobs in one CreateJobs call per chunk, retrying items that failed with a retryable
 * error (a leader change on a loaded machine) under the same idempotency key, so none is created
 * twice.
 */
export async function createJobsReliably(client: HeraldClient, items: { id: string; spec: JobSpec }[], chunk = 500): Promise<void> {
  for (let i = 0; i < items.length; i += chunk) {
    let todo = items.slice(i, i + chunk).map((it) => ({ ...it, idempotencyKey: `create-${it.id}` }));
    for (let attempt = 0; todo.length > 0; attempt++) {
      const res = await client.createJobs(todo, { deadlineMs: 120_000 });
      const failed = todo.filter((_, k) => res[k]!.error);
      const fatal = res.find((r) => r.error && r.error.code !== 'UNAVAILABLE' && r.error.code !== 'DEADLINE_EXCEEDED');
      if (fatal || attempt >= 10) throw new Error(`createJobs failed: ${(fatal ?? res.find((r) => r.error))!.error!.message}`);
      todo = failed;
      if (todo.length > 0) await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** Every run of a job (all pages), via the FSM. */
export async function allRuns(fsm: SchedulerStateMachine, jobId: string) {
  const out = [];
  let pageToken = '';
  do {
    const page = await fsm.listRuns({ jobId, pageSize: 1000, pageToken });
    out.push(...page.items);
    pageToken = page.nextPageToken;
  } while (pageToken);
  return out.sort((a, b) => a.slotUnixMs - b.slotUnixMs);
}
