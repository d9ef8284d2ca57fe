// The bench side of bench-watch-process.ts: one forked process (compiled, as the workers) holding
// N watch streams spread over the nodes.
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { BenchWatchMessage } from './bench-watch-process.js';

const ROOT = join(import.meta.dirname, '..', '..', ...(import.meta.filename.endsWith('.ts') ? [] : ['..']));
const SCRIPT = join(ROOT, 'dist', 'bench', 'lib', 'bench-watch-process.js');

export class BenchWatchers {
  private constructor(private readonly proc: ChildProcess) {}

  /** Starts `count` watchers and waits until every one is attached (0: none, no process). */
  static async start(endpoints: string[], count: number, timeoutMs = 30_000): Promise<BenchWatchers | undefined> {
    if (count <= 0) return undefined;
    const proc = fork(SCRIPT, ['--endpoints', endpoints.join(','), '--count', String(count)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    const w = new BenchWatchers(proc);
    await w.next('ready', timeoutMs);
    return w;
  }

  get pid(): number {
    return this.proc.pid!;
  }

  /** Ends the streams; what each watcher received. */
  async finish(timeoutMs = 30_000): Promise<{ events: number[]; resets: number }> {
    const done = this.next('done', timeoutMs);
    this.proc.send({ type: 'finish' });
    const m = (await done) as Extract<BenchWatchMessage, { type: 'done' }>;
    return { events: m.events, resets: m.resets };
  }

  kill(): void {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGKILL');
  }

  private next(type: BenchWatchMessage['type'], timeoutMs: number): Promise<BenchWatchMessage> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`bench watchers: no ${type} within ${timeoutMs} ms`)), timeoutMs);
      const onMessage = (m: BenchWatchMessage) => {
        if (m.type !== type) return;
        clearTimeout(timer);
        this.proc.off('message', onMessage);
        this.proc.off('exit', onExit);
        resolve(m);
      };
      const onExit = () => {
        clearTimeout(timer);
        reject(new Error(`bench watchers exited before sending ${type}`));
      };
      this.proc.on('message', onMessage);
      this.proc.once('exit', onExit);
    });
  }
}
