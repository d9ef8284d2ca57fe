// The "Secure a cluster" walk-through with the real CLI: `herald certs init|issue`, a one-node
// server on its certificates, the CLI with --ca (and refused without), and the server refusing
// to start with neither certificates nor --insecure.
import { X509Certificate } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../raft-runtime/helpers/cluster.js';
import { CliProcess, runCli } from '../cli/helpers/run-cli.js';

const dirs: string[] = [];
let server: CliProcess | undefined;
afterAll(async () => {
  await server?.stop();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('herald certs and a TLS node', () => {
  it('certs init/issue, a TLS node, the CLI with --ca; plaintext needs --insecure', async () => {
    const root = await mkdtemp(join(tmpdir(), 'herald-certs-cli-'));
    dirs.push(root);
    const certs = join(root, 'certs');
    const init = await runCli(['certs', 'init', '--dir', certs, '--days', '2']);
    expect(init.code, init.stderr).toBe(0);
    expect(statSync(join(certs, 'ca.key')).mode & 0o777).toBe(0o600);
    expect((await runCli(['certs', 'init', '--dir', certs])).stderr).toMatch(/already holds a CA/);
    const issue = await runCli(['certs', 'issue', '--dir', certs, '--name', 'n1', '--member', 'n1', '--host', '127.0.0.1', '--days', '2']);
    expect(issue.code, issue.stderr).toBe(0);
    expect(statSync(join(certs, 'n1.key')).mode & 0o777).toBe(0o600);

    const [peer, client] = [await freePort(), await freePort()];
    const base = ['server', '--id', 'n1', '--peers', `n1=127.0.0.1:${peer}/127.0.0.1:${client}`, '--log-level', 'warn'];
    const bare = await runCli([...base, '--data-dir', join(root, 'bare')]);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/missing --tls-cert.*--insecure/);

    const n1 = (ext: string) => join(certs, `n1.${ext}`);
    server = new CliProcess([...base, '--data-dir', join(root, 'n1'), '--tls-cert', n1('crt'), '--tls-key', n1('key'), '--peer-cert', n1('crt'), '--peer-key', n1('key'), '--peer-ca', join(certs, 'ca.crt'), '--cert-poll-ms', '0']);
    await server.waitFor(/"event":"listening"/, 30_000);
    const endpoints = `127.0.0.1:${client}`;
    const ok = await runCli(['job', 'ls', '--endpoints', endpoints, '--ca', join(certs, 'ca.crt'), '--timeout', '15s']);
    expect(ok.code, ok.stderr).toBe(0);
    const viaEnv = await runCli(['job', 'ls', '--endpoints', endpoints, '--timeout', '15s'], { env: { HERALD_CA: join(certs, 'ca.crt') } });
    expect(viaEnv.code, viaEnv.stderr).toBe(0);
    const plain = await runCli(['job', 'ls', '--endpoints', endpoints, '--timeout', '3s']);
    expect(plain.code).not.toBe(0);

    // Rotation: new files in place, SIGHUP (the file poll is off), and new connections get the new certificate.
    expect(await servedFingerprint(client, join(certs, 'ca.crt'))).toBe(new X509Certificate(readFileSync(n1('crt'))).fingerprint256);
    const next = join(root, 'next');
    const reissue = await runCli(['certs', 'issue', '--dir', certs, '--out', next, '--name', 'n1', '--member', 'n1', '--host', '127.0.0.1', '--days', '2']);
    expect(reissue.code, reissue.stderr).toBe(0);
    await copyFile(join(next, 'n1.key'), n1('key'));
    await copyFile(join(next, 'n1.crt'), n1('crt'));
    const want = new X509Certificate(readFileSync(n1('crt'))).fingerprint256;
    server.proc.kill('SIGHUP');
    const deadline = Date.now() + 10_000;
    let got = '';
    while (Date.now() < deadline && (got = await servedFingerprint(client, join(certs, 'ca.crt'))) !== want) await new Promise((r) => setTimeout(r, 100));
    expect(got).toBe(want);
    expect((await runCli(['job', 'ls', '--endpoints', endpoints, '--ca', join(certs, 'ca.crt'), '--timeout', '15s'])).code).toBe(0);
  }, 90_000);
});

/** The fingerprint of the certificate a new TLS connection to the port is served (chain verified). */
function servedFingerprint(port: number, caFile: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, ca: readFileSync(caFile), ALPNProtocols: ['h2'], checkServerIdentity: () => undefined }, () => {
      const fp = s.getPeerCertificate().fingerprint256;
      s.destroy();
      resolve(fp);
    });
    s.on('error', reject);
  });
}
