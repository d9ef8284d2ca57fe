// CPU time a process has used so far (user + system, every thread), from /proc on Linux: how
// benches tell which process a scenario's cost lands on.
import { readFile } from 'node:fs/promises';

const TICKS_PER_SECOND = 100; // USER_HZ: 100 on every Linux this runs on

/** Milliseconds of CPU used by `pid` so far; NaN where /proc is not readable. */
export async function processCpuMs(pid: number): Promise<number> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start after its closing paren.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}
