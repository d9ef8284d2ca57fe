// Runs the built CLI (bin/herald.mjs → dist/) as a subprocess, the way users run it.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';

export const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'herald.mjs');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `herald <args>` to completion (killed after timeoutMs); `input` goes to its stdin. */
export function runCli(args: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number; cwd?: string; input?: string } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, ...opts.env },
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
    });
    let stdout = '';
    let stderr = '';
    proc.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => proc.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    proc.once('error', reject);
    proc.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    if (opts.input !== undefined) proc.stdin!.end(opts.input);
  });
}

/** A long-running CLI process (dev, worker) whose output is collected as it comes. */
export class CliProcess {
  readonly proc: ChildProcess;
  stdout = '';
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(args: string[], env: NodeJS.ProcessEnv = {}) {
    this.proc = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc.stdout!.on('data', (d: Buffer) => (this.stdout += d.toString()));
    this.proc.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
    this.exited = new Promise((resolve) => this.proc.once('exit', (code, signal) => resolve({ code, signal })));
  }

  get running(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Resolves when stdout matches `re`; rejects if the process exits or the time runs out. */
  async waitFor(re: RegExp, timeoutMs: number, stream: 'stdout' | 'stderr' = 'stdout'): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = this[stream].match(re);
      if (m) return m;
      if (!this.running) throw new Error(`process exited before ${re} appeared:\nstdout:\n${this.stdout.slice(-3000)}\nstderr:\n${this.stderr.slice(-3000)}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${re}:\nstdout:\n${this.stdout.slice(-3000)}\nstderr:\n${this.stderr.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Sends a signal and waits (bounded) for the exit; SIGKILL if it does not come. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 20_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.running) this.proc.kill(signal);
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), timeoutMs);
    const r = await this.exited;
    clearTimeout(timer);
    return r;
  }
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** A dev --base-port whose derived ports (base+1 .. base+33) are all free right now. */
export async function freeBasePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    // Blocks of 100 ports: a test's range never overlaps another test's, even at base+100.
    // 22000–31999: below the kernel ephemeral range and above the blocks of chaos/orchestrator/free-port.ts.
    const base = 22_000 + Math.floor(Math.random() * 100) * 100;
    const ports = [1, 2, 3, 11, 12, 13, 21, 22, 23, 31, 32, 33].map((d) => base + d);
    if ((await Promise.all(ports.map(portFree))).every(Boolean)) return base;
  }
  throw new Error('no free port range for the dev cluster');
}
