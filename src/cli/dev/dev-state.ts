// <data-dir>/dev.json remembers the base port and node count a dev data directory was created
// with: the nodes' cluster identity includes their addresses and the bootstrap members, so
// restarting on other ports or with another count would be refused by the servers. Dev reuses the
// recorded layout by default and explains a conflicting --base-port or --nodes.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from '../usage-error.js';
import { DEFAULT_DEV_BASE_PORT, DEV_NODE_COUNT, DEV_NODE_COUNTS, MAX_DEV_BASE_PORT } from './dev-ports.js';

export interface DevState {
  basePort: number;
  /** Nodes the cluster was bootstrapped with (3 for data dirs from before --nodes). */
  nodes: number;
  /** Nodes added since (`herald dev add-node`), in order: n<nodes+1>, n<nodes+2>, … */
  joined: number;
}

/** Every node of the dev cluster, bootstrapped and joined. */
export function nodeCount(s: DevState): number {
  return s.nodes + s.joined;
}

/** Records one more joined node. */
export function recordJoined(dataDir: string, s: DevState): DevState {
  const next = { ...s, joined: s.joined + 1 };
  writeFileSync(join(dataDir, 'dev.json'), JSON.stringify(next) + '\n');
  return next;
}

export function readState(dataDir: string): DevState | undefined {
  try {
    const j = JSON.parse(readFileSync(join(dataDir, 'dev.json'), 'utf8')) as Partial<DevState>;
    if (typeof j.basePort !== 'number') return undefined;
    return { basePort: j.basePort, nodes: typeof j.nodes === 'number' ? j.nodes : DEV_NODE_COUNT, joined: typeof j.joined === 'number' ? j.joined : 0 };
  } catch {
    return undefined;
  }
}

export function parseNodeCount(text: string): number {
  const n = Number(text);
  if (!(DEV_NODE_COUNTS as readonly number[]).includes(n) || !/^\d+$/.test(text)) {
    throw new UsageError(`--nodes: expected ${DEV_NODE_COUNTS.join(' or ')}, got "${text}"`);
  }
  return n;
}

export function parseBasePort(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1024 || n > MAX_DEV_BASE_PORT) {
    throw new UsageError(`--base-port: expected a port 1024..${MAX_DEV_BASE_PORT}, got "${text}"`);
  }
  return n;
}

/** The base port and node count to use, recorded in the data dir; throws UsageError on a conflict. */
export function resolveLayout(dataDir: string, requested: { basePort?: number; nodes?: number }): DevState {
  const existing = readState(dataDir);
  if (existing && requested.basePort !== undefined && requested.basePort !== existing.basePort) {
    throw new UsageError(
      `${dataDir} holds a dev cluster created with --base-port ${existing.basePort}; use that port, another --data-dir, or delete ${dataDir} to start fresh`,
    );
  }
  if (existing && requested.nodes !== undefined && requested.nodes !== existing.nodes) {
    throw new UsageError(
      `${dataDir} holds a ${existing.nodes}-node dev cluster; use --nodes ${existing.nodes}, another --data-dir, or delete ${dataDir} to start fresh`,
    );
  }
  const state = { basePort: existing?.basePort ?? requested.basePort ?? DEFAULT_DEV_BASE_PORT, nodes: existing?.nodes ?? requested.nodes ?? DEV_NODE_COUNT, joined: existing?.joined ?? 0 };
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(join(dataDir, 'dev.json'), JSON.stringify(state) + '\n');
  return state;
}
