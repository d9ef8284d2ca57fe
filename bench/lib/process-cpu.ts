// CPU time a process has used so far (user + system, every thread), from /proc on Linux: how
// benches tell which process a scenario's cost lands on.
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';

const TICKS_PER_SECOND = 100; // USER_HZ: 100 on every Linux this runs on

/** Milliseconds of CPU used by `pid` so far; NaN where /proc is not readable. */
export async function processCpuMs(pid: number): Promise<number> {
  try {
    return cpuMsOfStat(await readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return NaN;
  }
}

/** User + system time in a /proc stat line (a process's or a thread's: the same layout). */
function cpuMsOfStat(stat: string): number {
  // Fields after the command name (which may contain spaces) start after its closing paren.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / TICKS_PER_SECOND;
}

/**
 * CPU of `pid` split by thread: the main (JavaScript) thread, and the rest — libuv's pool (where
 * LevelDB batches are written), LevelDB's compaction thread, V8's GC helpers. NaN where /proc is
 * not readable.
 */
export async function processThreadCpuMs(pid: number): Promise<{ main: number; other: number; byThread: Map<string, { name: string; ms: number }> }> {
  const byThread = new Map<string, { name: string; ms: number }>();
  try {
    const tids = await readdir(`/proc/${pid}/task`);
    let main = 0;
    let other = 0;
    for (const tid of tids) {
      const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => undefined);
      if (stat === undefined) continue; // the thread ended meanwhile
      const ms = cpuMsOfStat(stat);
      byThread.set(tid, { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), ms });
      if (tid === String(pid)) main += ms;
      else other += ms;
    }
    return { main, other, byThread };
  } catch {
    return { main: NaN, other: NaN, byThread };
  }
}

/**
 * CPU per thread between two readings of one process, busiest first, as "name#tid" -> ms. Thread
 * names say whose it is: MainThread (JavaScript), libuv-worker (the pool: LevelDB reads and
 * batches, fsyncs — LevelDB's own compaction thread inherits the name of the pool thread that
 * opened the store), V8Worker (GC helpers).
 */
export function threadCpuDelta(
  before: Map<string, { name: string; ms: number }>,
  after: Map<string, { name: string; ms: number }>,
): Array<{ thread: string; ms: number }> {
  const out: Array<{ thread: string; ms: number }> = [];
  for (const [tid, a] of after) out.push({ thread: `${a.name}#${tid}`, ms: a.ms - (before.get(tid)?.ms ?? 0) });
  return out.filter((t) => t.ms > 0).sort((x, y) => y.ms - x.ms);
}

/**
 * Nanoseconds this process's main thread has run (Linux schedstat), read synchronously: what an
 * in-process bench times, without the helpers' share (LevelDB compaction, V8's concurrent GC),
 * which comes and goes with timing. NaN where it is not readable.
 */
export function mainThreadCpuNs(): number {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return NaN;
  }
}
