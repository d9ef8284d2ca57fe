// The options every client command shares (--endpoints, --timeout, --json) and the HeraldClient
// built from them. Endpoints default to HERALD_ENDPOINTS, else the local dev cluster (on the base
// port recorded in ./.herald/dev.json, if any), so that `npm start` in one terminal and
// `npx herald job ls` in another just work.
import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import type { ClientTls } from '../client/tls-options.js';
import { parseDuration } from '../client/duration.js';
import { HeraldClient } from '../client/herald-client.js';
import { DEFAULT_DEV_DATA_DIR, devClientEndpoints } from './dev/dev-ports.js';
import { nodeCount, readState } from './dev/dev-state.js';
import { devAdminToken, devCaFile } from './dev/dev-certs.js';
import { UsageError } from './usage-error.js';

export interface ClientFlags extends TlsClientFlags {
  endpoints?: string;
  token?: string;
  timeout: string;
  json?: boolean;
}

export interface TlsClientFlags {
  ca?: string;
  cert?: string;
  key?: string;
}

export const DEFAULT_TIMEOUT = '10s';
const ENDPOINT_RE = /^[^\s/,]+:\d{1,5}$/;

export function addClientOptions(cmd: Command): Command {
  return cmd
    .option('--endpoints <list>', 'client addresses host:port,... (default: $HERALD_ENDPOINTS, else the local dev cluster)')
    .option('--timeout <duration>', 'deadline of each call including retries, e.g. 5s', DEFAULT_TIMEOUT)
    .option('--json', 'machine-readable JSON output (errors too, on stderr)')
    .option('--ca <file>', 'TLS: CA bundle (PEM) of the cluster\'s certificates (default: $HERALD_CA); turns TLS on')
    .option('--cert <file>', 'TLS: client certificate (PEM) (default: $HERALD_CERT)')
    .option('--key <file>', 'TLS: client key (PEM) (default: $HERALD_KEY)')
    .option('--token <token>', 'bearer token for a cluster running with auth (default: $HERALD_TOKEN, else the dev cluster\'s admin token)');
}

/**
 * The bearer token: --token, else HERALD_TOKEN, else — talking to the local dev cluster — the
 * admin token `herald dev` wrote; undefined when none (a cluster without auth needs none).
 */
export function resolveToken(flags: Pick<ClientFlags, 'token' | 'endpoints'>, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (flags.token !== undefined) return flags.token.trim();
  if (env.HERALD_TOKEN?.trim()) return env.HERALD_TOKEN.trim();
  const devDefault = flags.endpoints === undefined && !env.HERALD_ENDPOINTS?.trim();
  return devDefault ? devAdminToken(DEFAULT_DEV_DATA_DIR) : undefined;
}

/**
 * TLS from --ca/--cert/--key (else HERALD_CA/HERALD_CERT/HERALD_KEY); undefined (plaintext) when
 * none is given. Throws UsageError naming a file that cannot be read.
 */
export function resolveTls(flags: TlsClientFlags & Pick<ClientFlags, 'endpoints'>, env: NodeJS.ProcessEnv = process.env): ClientTls | undefined {
  const pick = (flag: string | undefined, name: string) => flag ?? (env[name]?.trim() ? env[name] : undefined);
  const files = { ca: pick(flags.ca, 'HERALD_CA'), cert: pick(flags.cert, 'HERALD_CERT'), key: pick(flags.key, 'HERALD_KEY') };
  // Talking to the local dev cluster (no endpoints given): its CA, when `herald dev` made one.
  const devDefault = flags.endpoints === undefined && !env.HERALD_ENDPOINTS?.trim();
  if (files.ca === undefined && devDefault) files.ca = devCaFile(DEFAULT_DEV_DATA_DIR);
  if (files.ca === undefined && files.cert === undefined && files.key === undefined) return undefined;
  if ((files.cert === undefined) !== (files.key === undefined)) throw new UsageError('--cert and --key go together');
  const read = (f: string | undefined, what: string) => {
    if (f === undefined) return undefined;
    try {
      return readFileSync(f);
    } catch (e) {
      throw new UsageError(`${what} ${f}: cannot read it (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
    }
  };
  return { ca: read(files.ca, '--ca'), cert: read(files.cert, '--cert'), key: read(files.key, '--key') };
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
  const dev = readState(DEFAULT_DEV_DATA_DIR);
  return devClientEndpoints(dev?.basePort, '127.0.0.1', dev ? nodeCount(dev) : undefined);
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
    tls: resolveTls(flags),
    token: resolveToken(flags),
    defaultDeadlineMs: deadlineMs,
    // Discovery gets a slice of the deadline so an unreachable cluster fails within --timeout.
    discoveryTimeoutMs: Math.min(1_000, deadlineMs),
  });
}
