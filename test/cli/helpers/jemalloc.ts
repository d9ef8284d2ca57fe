// jemalloc's shared library (Debian's libjemalloc2), installed with apt-get when missing: CI runs
// as root on a fresh machine with nothing installed by hand.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { JEMALLOC_PATHS } from '../../../src/cli/server-allocator.js';

export function ensureJemalloc(): string {
  const found = () => JEMALLOC_PATHS.find((p) => existsSync(p));
  if (found()) return found()!;
  const apt = (args: string[]) => execFileSync('apt-get', args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, timeout: 280_000 });
  try {
    apt(['install', '-y', '--no-install-recommends', 'libjemalloc2']);
  } catch {
    // The package lists may be missing or stale on a fresh machine.
    apt(['update']);
    apt(['install', '-y', '--no-install-recommends', 'libjemalloc2']);
  }
  const lib = found();
  if (!lib) throw new Error(`apt-get install libjemalloc2 finished but none of ${JEMALLOC_PATHS.join(', ')} exists`);
  return lib;
}
