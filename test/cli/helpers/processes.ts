// Finds processes by a marker in their command line (the test's temp dir), to prove that nothing
// the test started outlives it and to clean up by pid if a test fails midway.
import { execFileSync } from 'node:child_process';

export function pidsWithArg(marker: string): number[] {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return out
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.includes(marker) && !l.includes('ps -eo'))
    .map((l) => Number(l.split(/\s+/, 1)[0]))
    .filter((p) => Number.isInteger(p) && p !== process.pid);
}

export function killPids(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}
