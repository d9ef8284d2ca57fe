// Certificates for the security tests, made with `herald certs`' own openssl code: a cluster CA
// with member certificates for n1..n3 on 127.0.0.1, and a second, foreign CA.
import { mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initCa, issueCert } from '../../../src/cli/certs/openssl-certs.js';

export interface TestCerts {
  dir: string;
  ca: string;
  /** Member certificate and key per id. */
  member: Record<string, { cert: string; key: string }>;
  /** A member certificate for n2 from a CA the cluster does not trust. */
  foreign: { ca: string; cert: string; key: string };
}

export async function makeTestCerts(ids: string[]): Promise<TestCerts> {
  const dir = await mkdtemp(join(tmpdir(), 'herald-certs-test-'));
  const ca = await initCa(dir, { days: 2, name: 'test CA' });
  const member: TestCerts['member'] = {};
  for (const id of ids) member[id] = await issueCert({ caDir: dir, name: id, member: id, hosts: ['127.0.0.1', 'localhost'], days: 2 });
  const otherDir = join(dir, 'foreign');
  await mkdir(otherDir);
  const other = await initCa(otherDir, { days: 2, name: 'foreign CA' });
  const f = await issueCert({ caDir: otherDir, name: 'n2', member: 'n2', hosts: ['127.0.0.1'], days: 2 });
  return { dir, ca: ca.cert, member, foreign: { ca: other.cert, ...f } };
}

/** `herald server` flags serving `id` with its member certificate on both ports. */
export function serverTlsFlags(c: TestCerts, id: string): string[] {
  const m = c.member[id]!;
  return ['--tls-cert', m.cert, '--tls-key', m.key, '--peer-cert', m.cert, '--peer-key', m.key, '--peer-ca', c.ca, '--cert-poll-ms', '500'];
}
