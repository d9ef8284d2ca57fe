// The server's memory allocator. Under glibc's malloc a busy leader's RSS keeps climbing while its
// V8 heap, buffers and LevelDB's own memory stay flat (allocator fragmentation); preloaded
// jemalloc levels it off (bench/README.md, "Leader RSS and the allocator"). A preload must be in
// place when the process starts, so `herald server` re-executes itself once, as the same process
// (process.execve keeps the pid, so supervisors see no change), with jemalloc preloaded — when the
// library is installed and --allocator allows it.

export type AllocatorChoice = 'auto' | 'jemalloc' | 'system';

/** Where Debian, Ubuntu, Fedora and Alpine-style systems install jemalloc's shared library. */
export const JEMALLOC_PATHS: readonly string[] = [
  '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2',
  '/usr/lib/aarch64-linux-gnu/libjemalloc.so.2',
  '/usr/lib64/libjemalloc.so.2',
  '/usr/lib/libjemalloc.so.2',
  '/usr/local/lib/libjemalloc.so.2',
];

/** Set in the re-executed process: the allocator it was started with (so it never loops). */
export const ALLOCATOR_ENV = 'HERALD_ALLOCATOR';

export type AllocatorPlan =
  | { kind: 'exec'; library: string; env: Record<string, string> }
  | { kind: 'stay'; allocator: 'jemalloc' | 'system'; why: string }
  | { kind: 'refuse'; message: string };

export interface AllocatorFacts {
  env: Readonly<Record<string, string | undefined>>;
  platform: string;
  exists(path: string): boolean;
  canExec: boolean;
}

export function planAllocator(choice: string, f: AllocatorFacts): AllocatorPlan {
  if (choice !== 'auto' && choice !== 'jemalloc' && choice !== 'system') {
    return { kind: 'refuse', message: `--allocator must be auto, jemalloc or system (got "${choice}")` };
  }
  const already = f.env[ALLOCATOR_ENV];
  if (already === 'jemalloc' || already === 'system') return { kind: 'stay', allocator: already, why: 'chosen at start' };
  if (choice === 'system') return { kind: 'stay', allocator: 'system', why: '--allocator system' };
  if ((f.env.LD_PRELOAD ?? '').includes('libjemalloc')) return { kind: 'stay', allocator: 'jemalloc', why: 'LD_PRELOAD names it' };
  const library = f.platform === 'linux' ? JEMALLOC_PATHS.find((p) => f.exists(p)) : undefined;
  const missing = f.platform !== 'linux' ? `not on Linux (${f.platform})` : !library ? 'libjemalloc.so.2 not installed (Debian/Ubuntu: apt-get install libjemalloc2)' : !f.canExec ? 'this Node has no process.execve (Node >= 22.15)' : undefined;
  if (missing) {
    return choice === 'jemalloc' ? { kind: 'refuse', message: `--allocator jemalloc: ${missing}` } : { kind: 'stay', allocator: 'system', why: missing };
  }
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(f.env)) if (v !== undefined) env[k] = v;
  env.LD_PRELOAD = [library!, f.env.LD_PRELOAD].filter((p) => p).join(':');
  env[ALLOCATOR_ENV] = 'jemalloc';
  return { kind: 'exec', library: library!, env };
}
