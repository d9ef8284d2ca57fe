// The chaos command refuses what it does not know before starting anything: a mistyped flag (or
// --help) used to be ignored and start a run of all faults.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const tsx = 'node_modules/.bin/tsx';

describe('npm run chaos usage', () => {
  it('--help prints the usage and exits 0; an unknown flag or a flag without its value exits 2 naming it, before any cluster starts', () => {
    const help = spawnSync(tsx, ['chaos/cli.ts', '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('usage: npm run chaos --');
    const bad = spawnSync(tsx, ['chaos/cli.ts', '--nodes', '3', '--durration', '10m'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('unknown argument --durration');
    expect(bad.stderr).not.toContain('[chaos] cluster');
    const missing = spawnSync(tsx, ['chaos/cli.ts', '--seed'], { encoding: 'utf8' });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('--seed needs a value');
  }, 60_000);
});
