// <data-dir>/dev.json remembers the base port a dev data directory was created with: the nodes'
// cluster identity includes their addresses, so restarting on other ports would be refused by
// the servers. Dev reuses the recorded port by default and explains a conflicting --base-port.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from '../usage-error.js';
import { DEFAULT_DEV_BASE_PORT, MAX_DEV_BASE_PORT } from './dev-ports.js';

export interface DevState {
  basePort: number;
}

export function readState(dataDir: string): DevState | undefined {
  try {
    const j = JSON.parse(readFileSync(join(dataDir, 'dev.json'), 'utf8')) as Partial<DevState>;
    return typeof j.basePort === 'number' ? { basePort: j.basePort } : undefined;
  } catch {
    return undefined;
  }
}

export function parseBasePort(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1024 || n > MAX_DEV_BASE_PORT) {
    throw new UsageError(`--base-port: expected a port 1024..${MAX_DEV_BASE_PORT}, got "${text}"`);
  }
  return n;
}

/** The base port to use, recorded in the data dir; throws UsageError on a conflict. */
export function resolveBasePort(dataDir: string, requested: number | undefined): number {
  const existing = readState(dataDir);
  if (existing && requested !== undefined && requested !== existing.basePort) {
    throw new UsageError(
      `${dataDir} holds a dev cluster created with --base-port ${existing.basePort}; use that port, another --data-dir, or delete ${dataDir} to start fresh`,
    );
  }
  const basePort = existing?.basePort ?? requested ?? DEFAULT_DEV_BASE_PORT;
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(join(dataDir, 'dev.json'), JSON.stringify({ basePort }) + '\n');
  return basePort;
}
