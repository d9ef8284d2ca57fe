// One child process the chaos suite owns: spawned in its own process group (so a signal reaches
// it and anything it spawned), stdout read line by line (processes announce their ports with one
// JSON line), stderr appended to a log file for post-mortems. Every live ManagedProcess is in a
// registry, and a synchronous 'exit' hook kills every group left, so a crashed or interrupted
// orchestrator never leaves processes running.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { EventEmitter } from 'node:events';

export interface ManagedProcessOptions {
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** stderr (and stdout lines) are appended here. */
  logFile?: string;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const live = new Set<ManagedProcess>();
let hooked = false;

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => killAllManaged());
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      killAllManaged();
      process.exit(130);
    });
  }
}

/** Kills every process group still owned (synchronous: usable from an 'exit' hook). */
export function killAllManaged(): void {
  for (const p of [...live]) p.killNow();
}

/** Names of managed processes still running (tests assert this is empty after cleanup). */
export function liveManaged(): string[] {
  return [...live].map((p) => p.name);
}

export class ManagedProcess extends EventEmitter<{ line: [string] }> {
  readonly name: string;
  private child?: ChildProcess;
  private exitPromise?: Promise<ExitInfo>;
  private log?: WriteStream;
  private stderrTail = '';
  private stopped = false;
  /** Times this process was started (restarts included). */
  starts = 0;

  constructor(private readonly o: ManagedProcessOptions) {
    super();
    this.name = o.name;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  get paused(): boolean {
    return this.stopped;
  }

  /** Last few KB of stderr, for error messages. */
  get tail(): string {
    return this.stderrTail;
  }

  /**
   * Spawns the process; resolves with the first stdout line that `ready` accepts (parsed JSON),
   * rejects if the process exits first or the timeout passes.
   */
  start<T = unknown>(ready: (json: Record<string, unknown>) => boolean, timeoutMs = 30_000): Promise<T> {
    if (this.running) throw new Error(`${this.name} is already running`);
    hookExit();
    this.starts++;
    this.stopped = false;
    this.stderrTail = '';
    this.log ??= this.o.logFile ? createWriteStream(this.o.logFile, { flags: 'a' }) : undefined;
    this.log?.write(`\n==== start #${this.starts} ${new Date().toISOString()} ${this.o.command} ${this.o.args.join(' ')}\n`);
    const child = spawn(this.o.command, this.o.args, {
      cwd: this.o.cwd,
      env: this.o.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    this.child = child;
    live.add(this);
    this.exitPromise = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        live.delete(this);
        this.log?.write(`==== exit code=${code} signal=${signal} ${new Date().toISOString()}\n`);
        resolve({ code, signal });
      });
    });
    child.stderr!.on('data', (d: Buffer) => {
      this.log?.write(d);
      this.stderrTail = (this.stderrTail + d.toString()).slice(-4000);
    });
    let buf = '';
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        this.log?.write(`[stdout] ${line}\n`);
        this.emit('line', line);
      }
    });
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`${this.name} did not announce itself within ${timeoutMs} ms:\n${this.stderrTail}`));
      }, timeoutMs);
      const onLine = (line: string) => {
        let j: unknown;
        try {
          j = JSON.parse(line);
        } catch {
          return;
        }
        if (j && typeof j === 'object' && ready(j as Record<string, unknown>)) {
          cleanup();
          resolve(j as T);
        }
      };
      const cleanup = () => {
        clearTimeout(timer);
        this.off('line', onLine);
      };
      this.on('line', onLine);
      void this.exitPromise!.then((e) => {
        cleanup();
        reject(new Error(`${this.name} exited (${e.code ?? e.signal}) before it was ready:\n${this.stderrTail}`));
      });
    });
  }

  /** Resolves when the current process has exited (immediately if none). */
  exited(): Promise<ExitInfo> {
    return this.exitPromise ?? Promise.resolve({ code: null, signal: null });
  }

  /** Signals the whole process group. */
  signal(sig: NodeJS.Signals): void {
    if (!this.running || this.child?.pid === undefined) return;
    try {
      process.kill(-this.child.pid, sig);
    } catch {
      // already gone
    }
    if (sig === 'SIGSTOP') this.stopped = true;
    if (sig === 'SIGCONT') this.stopped = false;
  }

  /** kill -9 of the group; resolves when it is gone. */
  async kill(): Promise<ExitInfo> {
    if (!this.running) return this.exited();
    this.signal('SIGKILL');
    return this.exited();
  }

  /** SIGTERM (after SIGCONT, so a paused process can act on it), SIGKILL after graceMs. */
  async stop(graceMs = 5_000): Promise<ExitInfo> {
    if (!this.running) return this.exited();
    this.signal('SIGCONT');
    this.signal('SIGTERM');
    const t = setTimeout(() => this.signal('SIGKILL'), graceMs);
    const e = await this.exited();
    clearTimeout(t);
    return e;
  }

  /** Synchronous kill -9 (exit hooks). */
  killNow(): void {
    this.signal('SIGKILL');
  }

  async close(): Promise<void> {
    await this.kill();
    await new Promise<void>((r) => (this.log ? this.log.end(() => r()) : r()));
    this.log = undefined;
  }
}
