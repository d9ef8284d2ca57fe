// Certificates for a Herald cluster, made by the openssl command. Node's crypto reads X.509
// (X509Certificate) but cannot sign one, and no X.509 library is a dependency: openssl is on
// nearly every machine that runs servers, is what operators already trust for keys, and keeps
// Herald free of a large crypto dependency. Keys are EC P-256, written 0600.

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { memberUri } from '../../server/grpc/tls/member-identity.js';

export class CertsError extends Error {}

function openssl(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('openssl', args, { timeout: 30_000 }, (err, _stdout, stderr) => {
      if (!err) return resolve();
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        return reject(new CertsError('herald certs needs the openssl command (install OpenSSL, or make certificates with your own CA: see README "Secure a cluster")'));
      }
      reject(new CertsError(`openssl ${args[0]} failed: ${String(stderr).trim() || err.message}`));
    });
  });
}

export interface CaFiles {
  cert: string;
  key: string;
}

export function caFiles(dir: string): CaFiles {
  return { cert: join(dir, 'ca.crt'), key: join(dir, 'ca.key') };
}

/** A new CA in `dir` (ca.crt, ca.key); refuses to overwrite one. */
export async function initCa(dir: string, o: { days: number; name: string }): Promise<CaFiles> {
  const f = caFiles(dir);
  if (existsSync(f.cert) || existsSync(f.key)) throw new CertsError(`${dir} already holds a CA (${f.cert}); refusing to overwrite it`);
  await openssl([
    'req', '-x509', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', f.key, '-out', f.cert, '-days', String(o.days), '-subj', `/CN=${o.name}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  await chmod(f.key, 0o600);
  return f;
}

export interface IssueOptions {
  /** Directory of the CA (ca.crt, ca.key); the new files go there too unless `outDir`. */
  caDir: string;
  outDir?: string;
  /** File name stem and certificate CN. */
  name: string;
  /** A cluster member's certificate: names the member (SAN URI urn:herald:member:<id>), for both ports. */
  member?: string;
  /** Host names and IP addresses clients dial this node at (SANs). */
  hosts: string[];
  days: number;
  /**
   * A client certificate that authenticates as a principal (README "Secure a cluster"): SAN URIs
   * urn:herald:role:<role> and urn:herald:principal:<name>, and for a worker one
   * urn:herald:task-type:<type> per task type.
   */
  role?: string;
  taskTypes?: string[];
}

/** Issues `<name>.crt` / `<name>.key` signed by the CA. */
export async function issueCert(o: IssueOptions): Promise<{ cert: string; key: string }> {
  const ca = caFiles(o.caDir);
  if (!existsSync(ca.cert) || !existsSync(ca.key)) throw new CertsError(`no CA in ${o.caDir} (run \`herald certs init --dir ${o.caDir}\` first)`);
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(o.name)) throw new CertsError(`--name "${o.name}": use letters, digits, '.', '_' or '-' (it names the files)`);
  const out = o.outDir ?? o.caDir;
  const cert = join(out, `${o.name}.crt`);
  const key = join(out, `${o.name}.key`);
  const sans = [
    ...(o.member !== undefined ? [`URI:${memberUri(o.member)}`] : []),
    ...(o.role !== undefined ? [`URI:urn:herald:role:${o.role}`, `URI:urn:herald:principal:${o.name}`, ...(o.taskTypes ?? []).map((t) => `URI:urn:herald:task-type:${t}`)] : []),
    ...o.hosts.map((h) => (isIP(h) ? `IP:${h}` : `DNS:${h}`)),
  ];
  const ext = [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    // A member's certificate serves its ports and dials its peers; a client's only dials.
    `extendedKeyUsage=${o.member !== undefined || o.hosts.length > 0 ? 'serverAuth,clientAuth' : 'clientAuth'}`,
    ...(sans.length > 0 ? [`subjectAltName=${sans.join(',')}`] : []),
  ].join('\n');
  const tmp = await mkdtemp(join(tmpdir(), 'herald-certs-'));
  try {
    const csr = join(tmp, 'req.csr');
    const extFile = join(tmp, 'ext.cnf');
    await writeFile(extFile, ext + '\n');
    await openssl(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', csr, '-subj', `/CN=${o.name}`]);
    await chmod(key, 0o600);
    await openssl([
      'x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-set_serial', '0x' + randomBytes(16).toString('hex').replace(/^[89a-f]/, '7'),
      '-days', String(o.days), '-extfile', extFile, '-out', cert,
    ]);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  return { cert, key };
}
