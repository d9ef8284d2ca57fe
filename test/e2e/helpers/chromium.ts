// Debian's chromium, driven by playwright-core (no browser download). Installed with apt-get when
// missing: CI runs as root on a fresh machine with nothing installed by hand.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const CHROMIUM = '/usr/bin/chromium';

export function ensureChromium(): string {
  if (existsSync(CHROMIUM)) return CHROMIUM;
  const apt = (args: string[]) => execFileSync('apt-get', args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, timeout: 280_000 });
  try {
    apt(['install', '-y', '--no-install-recommends', 'chromium']);
  } catch {
    // The package lists may be missing or stale on a fresh machine.
    apt(['update']);
    apt(['install', '-y', '--no-install-recommends', 'chromium']);
  }
  if (!existsSync(CHROMIUM)) throw new Error(`apt-get install chromium finished but ${CHROMIUM} is missing`);
  return CHROMIUM;
}
