// The bench side of bench-worker-process.ts: forks N worker processes (compiled, as servers run),
// waits for them to connect, polls how many results the cluster settled, and at the end collects
// every handler start they recorded.
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchWorkerCommand, BenchWorkerMessage, BenchWorkerRecords } from './bench-worker-process.js';

const ROOT = join(import.meta.dirname, '..', '..', ...(import.meta.filename.endsWith('.ts') ? [] : ['..']));
const SCRIPT = join(ROOT, 'dist', 'bench', 'lib', 'bench-worker-process.js');

export interface BenchWorkerOptions {
  endpoints: string[];
  count: number;
  /** Runs each worker executes at once. */
  capacity: number;
  /** Simulated work per run; 0 (default) is a no-op handler. */
  handlerMs?: number;
  idPrefix?: string;
  /** A secure cluster's CA file and worker token (the token travels in the environment, not argv). */
  auth?: { caFile: string; token: string };
}

/** One handler start as a worker saw it. */
export interface BenchRunStart {
  workerId: string;
  runId: string;
  attempt: number;
  slotMs: number;
  scheduledMs: number;
  at: number;
}

class BenchWorkerProc {
  /** Replies awaited, by message type: settled by the next message of that type, or by exit. */
  private readonly waiting = new Map<string, { resolve: (m: BenchWorkerMessage) => void; reject: (e: Error) => void }[]>();
  readonly exit: Promise<void>;
  private exited = false;

  constructor(readonly proc: ChildProcess) {
    this.exit = new Promise((resolve) =>
      proc.once('exit', () => {
        this.exited = true;
        for (const [type, list] of this.waiting) for (const w of list) w.reject(new Error(`bench worker ${proc.pid} exited before sending ${type}`));
        this.waiting.clear();
        resolve();
      }),
    );
    proc.on('message', (m: BenchWorkerMessage) => {
      const list = this.waiting.get(m.type);
      this.waiting.delete(m.type);
      for (const w of list ?? []) w.resolve(m);
    });
  }

  next<T extends BenchWorkerMessage['type']>(type: T, timeoutMs: number): Promise<Extract<BenchWorkerMessage, { type: T }>> {
    if (this.exited) return Promise.reject(new Error(`bench worker ${this.proc.pid} has exited`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`bench worker ${this.proc.pid}: no ${type} within ${timeoutMs} ms`)), timeoutMs);
      const list = this.waiting.get(type) ?? [];
      list.push({
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m as Extract<BenchWorkerMessage, { type: T }>);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.waiting.set(type, list);
    });
  }

  command(c: BenchWorkerCommand): void {
    if (this.proc.connected) this.proc.send(c);
  }
}

export class BenchWorkers {
  private constructor(private readonly procs: BenchWorkerProc[]) {}

  /** Forks the workers and resolves once every one is connected to the leader. */
  static async start(o: BenchWorkerOptions): Promise<BenchWorkers> {
    if (!existsSync(SCRIPT)) throw new Error(`${SCRIPT} is missing: run \`npm run build\` first (benches run compiled workers, as servers)`);
    // HERALD_BENCH_WORKER_CPU_PROF=<dir>: each worker writes a V8 CPU profile there on exit.
    const prof = process.env.HERALD_BENCH_WORKER_CPU_PROF;
    // HERALD_BENCH_WORKER_NODE_ARGS: extra node flags for every worker (e.g. --trace-gc, whose
    // output then goes to this process's stderr, as the workers' own stderr does).
    const nodeArgs = (process.env.HERALD_BENCH_WORKER_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
    const procs = Array.from({ length: o.count }, (_, i) => {
      const args = ['--endpoints', o.endpoints.join(','), '--id', `${o.idPrefix ?? 'bw'}${i}`, '--capacity', String(o.capacity), '--handler-ms', String(o.handlerMs ?? 0), ...(o.auth ? ['--ca', o.auth.caFile] : [])];
      const proc = fork(SCRIPT, args, {
        env: { ...process.env, ...(o.auth ? { HERALD_BENCH_WORKER_TOKEN: o.auth.token } : {}) },
        execArgv: [...nodeArgs, ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [])],
        serialization: 'advanced',
        stdio: ['ignore', nodeArgs.length > 0 ? process.stderr : 'ignore', 'inherit', 'ipc'],
      });
      return new BenchWorkerProc(proc);
    });
    const workers = new BenchWorkers(procs);
    try {
      await Promise.all(procs.map((p) => p.next('connected', 45_000)));
    } catch (e) {
      workers.kill();
      throw e;
    }
    return workers;
  }

  get pids(): number[] {
    return this.procs.map((p) => p.proc.pid!);
  }

  /** Results the cluster acknowledged so far, summed over the workers. */
  async settled(): Promise<number> {
    const replies = this.procs.map((p) => p.next('progress', 30_000));
    for (const p of this.procs) p.command({ cmd: 'progress' });
    return (await Promise.all(replies)).reduce((n, r) => n + r.settled, 0);
  }

  /** Shuts the workers down (bounded grace) and returns every handler start they recorded. */
  async finish(): Promise<{ starts: BenchRunStart[]; accepted: number; refused: number }> {
    const replies = this.procs.map((p) => p.next('records', 60_000));
    for (const p of this.procs) p.command({ cmd: 'finish' });
    const all: BenchWorkerRecords[] = await Promise.all(replies);
    await Promise.all(this.procs.map((p) => p.exit));
    const starts: BenchRunStart[] = [];
    for (const r of all) {
      for (let i = 0; i < r.runIds.length; i++) {
        starts.push({ workerId: r.workerId, runId: r.runIds[i]!, attempt: r.attempts[i]!, slotMs: r.slotMs[i]!, scheduledMs: r.scheduledMs[i]!, at: r.startedAt[i]! });
      }
    }
    return { starts, accepted: all.reduce((n, r) => n + r.accepted, 0), refused: all.reduce((n, r) => n + r.refused, 0) };
  }

  /** Stops every worker at once (error paths). */
  kill(): void {
    for (const p of this.procs) if (p.proc.exitCode === null) p.proc.kill('SIGKILL');
  }
}
