// TLS for `herald dev` at no cost to the user: a CA and one member certificate per node in
// <data dir>/certs (keys 0600), made once and reused. The dev nodes run TLS on the client port
// and mutual TLS on the peer port like a real cluster; the CLI finds the CA there. Without the
// openssl command the dev cluster falls back to plaintext on 127.0.0.1 and says so.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { newTokenSecret } from '../../server/auth/token-secret.js';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { CertsError, caFiles, initCa, issueCert } from '../certs/openssl-certs.js';

export interface DevCerts {
  ca: string;
  member: Record<string, { cert: string; key: string }>;
}

export function devCertsDir(dataDir: string): string {
  return join(dataDir, 'certs');
}

/** The dev CA certificate when `herald dev` made one in `dataDir`. */
export function devCaFile(dataDir: string): string | undefined {
  const f = caFiles(devCertsDir(dataDir)).cert;
  return existsSync(f) ? f : undefined;
}

/** Where `herald dev` keeps its admin token (0600): the bootstrap file its nodes start with. */
export function devTokenFile(dataDir: string): string {
  return join(devCertsDir(dataDir), 'admin.token');
}

/** The dev cluster's admin token, when `herald dev` made one in `dataDir`. */
export function devAdminToken(dataDir: string): string | undefined {
  try {
    return readFileSync(devTokenFile(dataDir), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Makes (or reuses) the dev admin token; returns the file's path. */
export function ensureDevToken(dataDir: string): string {
  const f = devTokenFile(dataDir);
  if (!existsSync(f)) writeFileSync(f, newTokenSecret().token + '\n', { mode: 0o600 });
  return f;
}

/**
 * Makes (or reuses) the dev certificates; a string says why there are none (no openssl).
 * `extraHosts`: addresses a member is dialled at besides loopback (the chaos suite's network
 * namespaces put nodes on a bridge).
 */
export async function ensureDevCerts(dataDir: string, ids: readonly string[], extraHosts: (id: string) => string[] = () => []): Promise<DevCerts | string> {
  const dir = devCertsDir(dataDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  try {
    const ca = caFiles(dir);
    if (!existsSync(ca.cert)) await initCa(dir, { days: 3650, name: 'herald dev CA' });
    const member: DevCerts['member'] = {};
    for (const id of ids) {
      const files = { cert: join(dir, `${id}.crt`), key: join(dir, `${id}.key`) };
      member[id] = existsSync(files.cert) && existsSync(files.key) ? files : await issueCert({ caDir: dir, name: id, member: id, hosts: ['127.0.0.1', 'localhost', ...extraHosts(id)], days: 3650 });
    }
    return { ca: ca.cert, member };
  } catch (e) {
    if (e instanceof CertsError) return e.message;
    throw e;
  }
}

/**
 * `herald server` flags serving member `id` with its dev certificate on both ports. The client
 * port checks client certificates against the dev CA (asked for, not required): a node started
 * by `herald dev add-node` proves it is a member with its certificate when it asks for the members.
 */
export function devTlsFlags(c: DevCerts, id: string): string[] {
  const m = c.member[id]!;
  return ['--tls-cert', m.cert, '--tls-key', m.key, '--tls-client-ca', c.ca, '--peer-cert', m.cert, '--peer-key', m.key, '--peer-ca', c.ca];
}
