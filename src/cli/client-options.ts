// The options every client command shares (--endpoints, --timeout, --json) and the HeraldClient
// built from them. Endpoints default to HERALD_ENDPOINTS, else the local dev cluster (on the base
// port recorded in ./.herald/dev.json, if any), so that `npm start` in one terminal and
// `npx herald job ls` in another just work.
import type { Command } from 'commander';
import { parseDuration } from '../client/duration.js';
import { HeraldClient } from '../client/herald-client.js';
import { DEFAULT_DEV_DATA_DIR, devClientEndpoints } from './dev/dev-ports.js';
import { readState } from './dev/dev-state.js';
import { UsageError } from './usage-error.js';

export interface ClientFlags {
  endpoints?: string;
  timeout: string;
  json?: boolean;
}

export const DEFAULT_TIMEOUT = '10s';
const ENDPOINT_RE = /^[^\s/,]+:\d{1,5}$/;

export function addClientOptions(cmd: Command): Command {
  return cmd
    .option('--endpoints <list>', 'client addresses host:port,... (default: $HERALD_ENDPOINTS, else the local dev cluster)')
    .option('--timeout <duration>', 'deadline of each call including retries, e.g. 5s', DEFAULT_TIMEOUT)
    .option('--json', 'machine-readable JSON output (errors too, on stderr)');
}

/** Parses an endpoint list; throws UsageError naming the bad item. */
export function parseEndpoints(list: string, source: string): string[] {
  const items = list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length === 0) throw new UsageError(`${source}: no endpoints in "${list}"`);
  for (const item of items) {
    if (!ENDPOINT_RE.test(item)) throw new UsageError(`${source}: "${item}" is not host:port`);
    const port = Number(item.slice(item.lastIndexOf(':') + 1));
    if (port < 1 || port > 65535) throw new UsageError(`${source}: port out of range in "${item}"`);
  }
  return items;
}

export function resolveEndpoints(flags: Pick<ClientFlags, 'endpoints'>, env: NodeJS.ProcessEnv = process.env): string[] {
  if (flags.endpoints !== undefined) return parseEndpoints(flags.endpoints, '--endpoints');
  const fromEnv = env.HERALD_ENDPOINTS;
  if (fromEnv !== undefined && fromEnv.trim() !== '') return parseEndpoints(fromEnv, 'HERALD_ENDPOINTS');
  return devClientEndpoints(readState(DEFAULT_DEV_DATA_DIR)?.basePort);
}

export function resolveTimeoutMs(flags: Pick<ClientFlags, 'timeout'>): number {
  const ms = parseDuration(flags.timeout, '--timeout');
  if (ms <= 0) throw new UsageError('--timeout: must be greater than 0');
  return ms;
}

export function clientFromFlags(flags: ClientFlags): HeraldClient {
  const deadlineMs = resolveTimeoutMs(flags);
  return new HeraldClient({
    endpoints: resolveEndpoints(flags),
    defaultDeadlineMs: deadlineMs,
    // Discovery gets a slice of the deadline so an unreachable cluster fails within --timeout.
    discoveryTimeoutMs: Math.min(1_000, deadlineMs),
  });
}
