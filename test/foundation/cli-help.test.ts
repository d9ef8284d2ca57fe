import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const bin = join(import.meta.dirname, '..', '..', 'bin', 'herald.mjs');

function herald(...args: string[]) {
  return spawnSync('node', [bin, ...args], { encoding: 'utf8' });
}

describe('herald CLI', () => {
  it('lists every command group in --help', () => {
    const res = herald('--help');
    expect(res.status).toBe(0);
    for (const cmd of ['server', 'dev', 'job', 'run', 'cluster', 'worker']) {
      expect(res.stdout).toMatch(new RegExp(`^\\s+${cmd}\\b`, 'm'));
    }
  });

  it.each([
    ['job', ['create', 'get', 'ls', 'update', 'pause', 'resume', 'trigger', 'backfill', 'rm']],
    ['run', ['ls', 'get', 'cancel']],
    ['cluster', ['status', 'transfer']],
  ])('%s --help lists its subcommands', (group, subs) => {
    const res = herald(group, '--help');
    expect(res.status).toBe(0);
    for (const s of subs) expect(res.stdout).toMatch(new RegExp(`^\\s+${s}\\b`, 'm'));
  });

  it('rejects an unknown command with a non-zero exit and a hint', () => {
    const res = herald('frobnicate');
    expect(res.status).not.toBe(0);
    expect(res.stderr).toContain("unknown command 'frobnicate'");
  });
});
