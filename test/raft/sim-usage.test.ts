// `npm run sim`: --help prints the usage; a bad flag is one line plus the usage, exit 2 (never a
// stack trace), for both simulators.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const CLI = join(import.meta.dirname, '..', '..', 'src', 'server', 'sim', 'sim-cli.ts');
const sim = (...args: string[]) => spawnSync(process.execPath, ['--import', 'tsx', CLI, ...args], { encoding: 'utf8', timeout: 60_000 });

describe('npm run sim: usage', () => {
  it('--help prints the usage of both simulators and exits 0', () => {
    const r = sim('--help');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/--system scheduler --seeds N/);
    expect(r.stdout).toMatch(/--list-mutations/);
  });

  it('a bad flag or value exits 2 with what is wrong and the usage, for either system', () => {
    for (const [args, msg] of [
      [['--bogus'], /^sim: unknown flag --bogus\nusage:/],
      [['--nodes', '4'], /^sim: --nodes must be 3 or 5\nusage:/],
      [['--system', 'scheduler', '--faults', 'v9'], /^sim: --faults is v1 /],
    ] as const) {
      const r = sim(...args);
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toMatch(msg);
      expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    }
  });
});
