// The machine is shared and has 2 cores: every bench records how busy it was next to its figures.
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';

export function machineLoad(): { loadavg: number[]; cpus: number; cpuPressure: string; node: string } {
  let cpuPressure = '';
  try {
    cpuPressure = readFileSync('/proc/pressure/cpu', 'utf8').split('\n')[0] ?? '';
  } catch {
    // not Linux
  }
  return { loadavg: loadavg().map((x) => +x.toFixed(2)), cpus: cpus().length, cpuPressure, node: process.version };
}

/**
 * Resident set size of a process (current and peak), from /proc; NaN where unavailable. `anon` is
 * memory the process owns (heap, native allocations); `file` is file pages mapped into it — LevelDB
 * maps its table files, and those pages count in RSS but are page cache the kernel can take back.
 */
export function rssMiB(pid: number | undefined): { rss: number; peak: number; anon: number; file: number } {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(s)?.[1] ?? NaN);
    return { rss: Math.round(kb('VmRSS') / 1024), peak: Math.round(kb('VmHWM') / 1024), anon: Math.round(kb('RssAnon') / 1024), file: Math.round(kb('RssFile') / 1024) };
  } catch {
    return { rss: NaN, peak: NaN, anon: NaN, file: NaN };
  }
}
