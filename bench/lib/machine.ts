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

/**
 * Resident anonymous memory in mappings of exactly one V8 heap page (256 KiB), and their count:
 * the JS heap as the kernel sees it, pooled pages included (heapTotal does not count those).
 */
export function v8PagesResident(pid: number | 'self' | undefined): { pages: number; residentMiB: number } {
  let pages = 0;
  let kib = 0;
  let inPage = false;
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/smaps`, 'utf8');
  } catch {
    return { pages: NaN, residentMiB: NaN };
  }
  for (const line of text.split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (m) {
      inPage = (parseInt(m[2]!, 16) - parseInt(m[1]!, 16)) / 1024 === 256 && m[3] === '';
      continue;
    }
    if (inPage && line.startsWith('Anonymous:')) {
      const k = Number(line.split(/\s+/)[1]);
      if (k > 0) {
        pages += 1;
        kib += k;
      }
    }
  }
  return { pages, residentMiB: Math.round(kib / 1024) };
}
