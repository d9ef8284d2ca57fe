// chaos/preload/node-faults.mjs inside a real process: the wall-clock offset moves Date.now()
// (and only it), and an armed crash point SIGKILLs the process before or after a synced write.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FAULT_PRELOAD, REPO_ROOT } from '../../chaos/orchestrator/cluster-processes.js';
import { NodeControl } from '../../chaos/orchestrator/node-control.js';

function run(code: string, controlFile: string): Promise<{ stdout: string; code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['--import', FAULT_PRELOAD, '-e', code], {
      cwd: REPO_ROOT,
      env: { ...process.env, CHAOS_CONTROL_FILE: controlFile },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.once('exit', (code, signal) => resolve({ stdout, code, signal }));
  });
}

const dbScript = (dir: string) => `
const { ClassicLevel } = require('classic-level');
(async () => {
  const db = new ClassicLevel(${JSON.stringify(dir)});
  await db.open();
  const before = await db.get('k');
  console.log(JSON.stringify({ before: before ?? null }));
  await db.put('k', 'v', { sync: true });
  console.log(JSON.stringify({ wrote: true }));
  await db.close();
})();
`;

describe('chaos node-faults preload', () => {
  let root: string | undefined;
  afterEach(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('offsets Date.now() but not performance.now()', async () => {
    root = await mkdtemp(join(tmpdir(), 'herald-chaos-preload-'));
    const control = new NodeControl(join(root, 'c.json'));
    control.setClock({ offsetMs: 90_000 });
    const r = await run('console.log(JSON.stringify({ now: Date.now(), mono: performance.timeOrigin + performance.now() }))', control.file);
    const j = JSON.parse(r.stdout) as { now: number; mono: number };
    expect(j.now - Date.now()).toBeGreaterThan(85_000);
    expect(Math.abs(j.mono - Date.now())).toBeLessThan(5_000);
  });

  it('kills the process before a synced write (nothing written) and after one (written)', async () => {
    root = await mkdtemp(join(tmpdir(), 'herald-chaos-preload-'));
    const control = new NodeControl(join(root, 'c.json'));
    const dir = join(root, 'db');
    control.armCrash({ id: 'a', point: 'sync', phase: 'before', nth: 1 });
    const first = await run(dbScript(dir), control.file);
    expect(first.signal).toBe('SIGKILL');
    expect(first.stdout).not.toContain('wrote');

    control.armCrash({ id: 'b', point: 'sync', phase: 'after', nth: 1 });
    const second = await run(dbScript(dir), control.file);
    expect(second.signal).toBe('SIGKILL');
    expect(second.stdout).toContain('"before":null');
    expect(second.stdout).not.toContain('wrote');

    control.armCrash(undefined);
    const third = await run(dbScript(dir), control.file);
    expect(third.code).toBe(0);
    expect(third.stdout).toContain('"before":"v"');
  });
});

const ioScript = (dir: string) => `
const { ClassicLevel } = require('classic-level');
(async () => {
  const attempt = async (what, fn) => {
    try {
      await fn();
      console.log(JSON.stringify({ what, ok: true }));
    } catch (e) {
      console.log(JSON.stringify({ what, ok: false, code: e.code }));
    }
  };
  for (const name of ['sm', 'log']) {
    const db = new ClassicLevel(${JSON.stringify(dir)} + '/' + name);
    await db.open();
    for (const k of ['a', 'b']) {
      await attempt(name + ':write:' + k, () => db.batch().put(k, 'v').write());
      await attempt(name + ':read:' + k, () => db.getMany([k]));
    }
    console.log(JSON.stringify({ what: name + ':keys', keys: await db.keys().all() }));
    await db.close();
  }
})();
`;

describe('chaos node-faults preload: I/O errors', () => {
  it('fails the nth write, and the nth read, of the state machine store only, once', async () => {
    const root = await mkdtemp(join(tmpdir(), 'herald-chaos-io-'));
    try {
      const control = new NodeControl(join(root, 'c.json'));
      control.armIoError({ id: 'w', op: 'write', nth: 2 });
      const writes = await run(ioScript(root), control.file);
      expect(writes.code).toBe(0);
      const lines = writes.stdout.trim().split('\n').map((l) => JSON.parse(l) as { what: string; ok?: boolean; code?: string; keys?: string[] });
      const failed = lines.filter((l) => l.ok === false);
      // The second batch write of <dir>/sm fails as LevelDB reports an I/O error, without writing;
      // the other store is untouched.
      expect(failed).toEqual([{ what: 'sm:write:b', ok: false, code: 'LEVEL_IO_ERROR' }]);
      expect(lines.find((l) => l.what === 'sm:keys')!.keys).toEqual(['a']);
      expect(lines.find((l) => l.what === 'log:keys')!.keys).toEqual(['a', 'b']);

      control.armIoError({ id: 'r', op: 'read', nth: 1 });
      const reads = await run(ioScript(join(root, 'again')), control.file);
      expect(reads.stdout.trim().split('\n').map((l) => JSON.parse(l) as { what: string; ok?: boolean }).filter((l) => l.ok === false).map((l) => l.what)).toEqual(['sm:read:a']);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('chaos node-faults preload: orphans', () => {
  it('a node process exits once its orchestrator is gone, even after SIGKILL', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'herald-chaos-orphan-'));
    try {
      const control = new NodeControl(join(dir, 'c.json'));
      // A stand-in orchestrator: spawns a detached "node" with the preload, prints its pid, idles.
      const parentCode = `
        const { spawn } = require('node:child_process');
        const c = spawn(process.execPath, ['--import', ${JSON.stringify(FAULT_PRELOAD)}, '-e', 'setInterval(() => {}, 1000)'], {
          detached: true, stdio: 'ignore', env: { ...process.env, CHAOS_CONTROL_FILE: ${JSON.stringify(control.file)} },
        });
        console.log(c.pid);
        setInterval(() => {}, 1000);`;
      const parent = spawn(process.execPath, ['-e', parentCode], { stdio: ['ignore', 'pipe', 'ignore'] });
      const childPid = await new Promise<number>((resolve) => parent.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
      const alive = (pid: number) => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      };
      await new Promise((r) => setTimeout(r, 600));
      expect(alive(childPid)).toBe(true);
      parent.kill('SIGKILL');
      const end = Date.now() + 5_000;
      while (alive(childPid) && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
      expect(alive(childPid)).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
