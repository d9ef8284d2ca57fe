// Runs a bench or a peer script as a child process and takes the JSON on its last stdout line.
// Each child gets its own process group, so an interrupted compare can stop it together with the
// servers it started (our clusters, etcd, Redis) by that one group id — nothing is left running.
import { spawn, type ChildProcess } from 'node:child_process';

const live = new Set<ChildProcess>();

function killGroup(p: ChildProcess, sig: NodeJS.Signals): void {
  try {
    if (p.pid) process.kill(-p.pid, sig);
  } catch {
    // already gone
  }
}

/** SIGTERM every running child's group (peers stop their servers on it), SIGKILL after 5 s. */
export async function stopChildren(): Promise<void> {
  const ps = [...live];
  for (const p of ps) killGroup(p, 'SIGTERM');
  await Promise.race([Promise.all(ps.map((p) => new Promise((r) => (p.exitCode !== null || p.signalCode !== null ? r(0) : p.once('exit', r))))), new Promise((r) => setTimeout(r, 5000))]);
  for (const p of ps) killGroup(p, 'SIGKILL');
}

export interface JsonRun {
  json?: Record<string, unknown>;
  error?: string;
  wallMs: number;
}

/** Runs `cmd args`, streaming its stderr to ours with a prefix; resolves with the last JSON line. */
export function runJson(label: string, cmd: string, args: string[], opts: { timeoutMs: number; env?: NodeJS.ProcessEnv }): Promise<JsonRun> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: opts.env ?? process.env });
    live.add(p);
    let out = '';
    let errTail = '';
    p.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr!.on('data', (d: Buffer) => {
      const s = d.toString();
      errTail = (errTail + s).slice(-2000);
      for (const l of s.split('\n')) if (l.trim()) process.stderr.write(`  [${label}] ${l}\n`);
    });
    const timer = setTimeout(() => {
      errTail += `\n(timed out after ${opts.timeoutMs} ms)`;
      killGroup(p, 'SIGTERM');
      setTimeout(() => killGroup(p, 'SIGKILL'), 5000).unref();
    }, opts.timeoutMs);
    p.once('error', (e) => errTail += `\n${e.message}`);
    p.once('close', (code, signal) => {
      clearTimeout(timer);
      live.delete(p);
      const wallMs = Date.now() - t0;
      const last = out.trim().split('\n').pop() ?? '';
      try {
        if (code !== 0) throw new Error(`exit ${code ?? signal}`);
        resolve({ json: JSON.parse(last) as Record<string, unknown>, wallMs });
      } catch (e) {
        resolve({ error: `${label}: ${(e as Error).message}; stderr tail: ${errTail.trim().split('\n').slice(-5).join(' | ')}`, wallMs });
      }
    });
  });
}
