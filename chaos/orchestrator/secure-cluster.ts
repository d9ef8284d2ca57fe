// Credentials of a cluster run with TLS and auth (`npm run chaos -- --secure`, the benches'
// `--secure`), made the way `herald dev` makes its own (src/cli/dev/dev-certs.ts): a CA, member
// certificates for both ports and a bootstrap admin token in <dir>/certs (keys and token 0600).
// Besides, one client certificate with the viewer role for the harness's status reads: a
// certificate principal needs no read barrier, so a node in a minority or without a leader still
// answers them (a token's check would wait for a leader and fail there).
import { readFileSync } from 'node:fs';
import { credentials, type ChannelCredentials } from '@grpc/grpc-js';
import { devCertsDir, devTlsFlags, ensureDevCerts, ensureDevToken, type DevCerts } from '../../src/cli/dev/dev-certs.js';
import { issueCert } from '../../src/cli/certs/openssl-certs.js';
import { HeraldClient } from '../../src/client/herald-client.js';
import { HeraldClientError } from '../../src/client/errors.js';
import type { ClientTls } from '../../src/client/tls-options.js';
import { sleep } from './free-port.js';

export type RoleName = 'admin' | 'operator' | 'viewer' | 'worker';

export interface SecureCluster {
  /** The CA every node's certificates chain to (PEM file). */
  caFile: string;
  /** What the SDK and the Worker take (`tls` option). */
  clientTls: ClientTls;
  /** The bootstrap admin token (the nodes put it once the first leader is elected). */
  adminToken: string;
  /** `herald server` flags of member `id`: TLS client port, mTLS peer port, auth on. */
  serverFlags(id: string): string[];
  /** Channel credentials of the viewer client certificate (status reads). */
  observerCredentials: ChannelCredentials;
}

/** Makes the CA, member certificates for `ids`, the observer certificate and the admin token in `dir`. */
export async function makeSecureCluster(dir: string, ids: readonly string[], extraHosts: (id: string) => string[] = () => []): Promise<SecureCluster> {
  const certs: DevCerts | string = await ensureDevCerts(dir, ids, extraHosts);
  if (typeof certs === 'string') throw new Error(`a secure cluster needs certificates: ${certs}`);
  const tokenFile = ensureDevToken(dir);
  const observer = await issueCert({ caDir: devCertsDir(dir), name: 'observer', role: 'viewer', hosts: [], days: 2 });
  const ca = readFileSync(certs.ca);
  return {
    caFile: certs.ca,
    clientTls: { ca },
    adminToken: readFileSync(tokenFile, 'utf8').trim(),
    serverFlags: (id) => [...devTlsFlags(certs, id), '--auth-bootstrap-file', tokenFile],
    observerCredentials: credentials.createSsl(ca, readFileSync(observer.key), readFileSync(observer.cert)),
  };
}

export interface TokenWanted {
  name: string;
  role: RoleName;
  taskTypes?: string[];
}

/**
 * Waits until the bootstrap admin token is accepted (the first leader puts it), then creates one
 * token per `wanted` entry; returns the secrets by name.
 */
export async function createRoleTokens(endpoints: string[], s: SecureCluster, wanted: readonly TokenWanted[], timeoutMs = 30_000): Promise<Record<string, string>> {
  const admin = new HeraldClient({ endpoints, tls: s.clientTls, token: s.adminToken, defaultDeadlineMs: 5_000 });
  try {
    const end = Date.now() + timeoutMs;
    for (;;) {
      try {
        await admin.listTokens();
        break;
      } catch (e) {
        if (Date.now() > end) throw new Error(`the bootstrap admin token was not accepted within ${timeoutMs} ms: ${e instanceof Error ? e.message : String(e)}`);
        await sleep(200);
      }
    }
    const out: Record<string, string> = {};
    for (const w of wanted) out[w.name] = (await admin.createToken(w.name, w.role, w.taskTypes ?? [], { deadlineMs: 15_000 })).secret;
    return out;
  } finally {
    admin.close();
  }
}

/** What a secure cluster answered a call without a token and a write with the viewer's (gRPC code names). */
export interface AuthProbe {
  noToken: string;
  viewerWrite: string;
}

/** Checks auth is really on: a call without a token and a write with a viewer token must be refused. */
export async function probeAuth(endpoints: string[], s: SecureCluster, viewerToken: string): Promise<AuthProbe> {
  const outcome = async (token: string | undefined, call: (c: HeraldClient) => Promise<unknown>): Promise<string> => {
    const c = new HeraldClient({ endpoints, tls: s.clientTls, ...(token ? { token } : {}), defaultDeadlineMs: 10_000 });
    try {
      await call(c);
      return 'OK';
    } catch (e) {
      return e instanceof HeraldClientError ? e.code : String(e);
    } finally {
      c.close();
    }
  };
  return {
    noToken: await outcome(undefined, (c) => c.listJobs({})),
    viewerWrite: await outcome(viewerToken, (c) => c.pauseJob('auth-probe', 'a viewer may not write')),
  };
}
