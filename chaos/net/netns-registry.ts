// Network labs (netns.ts) must never outlive the process that made them: a namespace, veth,
// bridge or nft table left behind keeps a /24 and names taken and can swallow the next run's
// traffic. Every live lab is registered here and removed synchronously from the 'exit' hook —
// a normal end, an uncaught failure, SIGINT / SIGTERM / SIGHUP (which we turn into an exit). A
// process killed with SIGKILL runs no hook: its names carry its pid, and the next lab made on the
// machine sweeps what belongs to a pid that is gone.
import { execFileSync } from 'node:child_process';

export interface SyncTeardown {
  destroySync(): void;
}

const live = new Set<SyncTeardown>();
let hooked = false;
let labsMade = 0;

/** Names start with `hx<pid base 36>_<n base 36>`: at most 9 characters for any real pid. */
export function nextLabPrefix(pid = process.pid): string {
  return `hx${pid.toString(36)}_${(labsMade++).toString(36)}`;
}

const OWNED = /^hx([0-9a-z]+)_[0-9a-z]+(?:-|$)/;

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function ownerGone(name: string): boolean {
  const m = OWNED.exec(name);
  return !!m && !pidAlive(parseInt(m[1]!, 36));
}

export function registerLab(lab: SyncTeardown): void {
  if (!hooked) {
    hooked = true;
    process.on('exit', destroyAllSync);
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      process.once(sig, () => {
        destroyAllSync();
        process.exit(sig === 'SIGINT' ? 130 : 143);
      });
    }
  }
  live.add(lab);
}

export function unregisterLab(lab: SyncTeardown): void {
  live.delete(lab);
}

/** Removes every live lab now (synchronous: usable from an 'exit' hook). */
export function destroyAllSync(): void {
  for (const lab of [...live]) {
    try {
      lab.destroySync();
    } catch {
      // best effort: the others still go
    }
  }
}

function sh(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return '';
  }
}

/**
 * Removes namespaces, links and nft tables made by labs whose process is gone (killed with
 * SIGKILL, so no hook ran). Names of the older `hx<pid>-` form (no underscore) are not ours to
 * judge and are left alone.
 */
export function sweepOrphans(): string[] {
  const removed: string[] = [];
  for (const line of sh('ip', ['netns', 'list']).split('\n')) {
    const ns = line.split(' ')[0] ?? '';
    if (ownerGone(ns)) {
      sh('ip', ['netns', 'delete', ns]);
      removed.push(ns);
    }
  }
  for (const line of sh('ip', ['-o', 'link', 'show']).split('\n')) {
    const name = /^\d+:\s+([^:@\s]+)/.exec(line)?.[1] ?? '';
    if (ownerGone(name)) {
      sh('ip', ['link', 'delete', name]);
      removed.push(name);
    }
  }
  for (const line of sh('nft', ['list', 'tables']).split('\n')) {
    const m = /^table (\w+) (\S+)/.exec(line);
    if (m && ownerGone(m[2]!)) {
      sh('nft', ['delete', 'table', m[1]!, m[2]!]);
      removed.push(`nft ${m[1]} ${m[2]}`);
    }
  }
  return removed;
}
