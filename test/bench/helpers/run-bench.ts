// Runs one bench scenario as its own process (as `npm run bench` would) and parses the JSON on
// the last stdout line. The child inherits VITEST_POOL_ID, so its clusters use this worker's ports.
import { execFile } from 'node:child_process';
import { join } from 'node:path';

const BENCH_DIR = join(import.meta.dirname, '..', '..', '..', 'bench');

export function runBench(name: string, args: string[], timeoutMs: number): Promise<Record<string, any>> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--import', 'tsx', join(BENCH_DIR, `${name}.ts`), ...args], { timeout: timeoutMs, maxBuffer: 64 << 20, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`${name} failed: ${err.message}\n${stderr.slice(-3000)}`));
      try {
        resolve(JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, any>);
      } catch (e) {
        reject(new Error(`${name}: last stdout line is not JSON (${(e as Error).message})\n${stdout.slice(-1000)}`));
      }
    });
  });
}
