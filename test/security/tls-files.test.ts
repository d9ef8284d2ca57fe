// Transport-security building blocks in one process: the plaintext policy of --insecure, the
// server flags' completeness rules, the member name in a certificate, and certificate rotation
// (a reload serves the new certificate to new connections; a bad new file keeps the old one).
import { copyFile, readFile, rm, writeFile } from 'node:fs/promises';
import { connect, type PeerCertificate } from 'node:tls';
import { Server } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueCert } from '../../src/cli/certs/openssl-certs.js';
import { tlsFromFlags, TlsFlagError } from '../../src/cli/commands/server-tls.js';
import { insecureRefusal, isLoopbackHost } from '../../src/server/grpc/tls/insecure-policy.js';
import { memberIdsOf } from '../../src/server/grpc/tls/member-identity.js';
import { NodeTls } from '../../src/server/grpc/tls/node-tls.js';
import { makeTestCerts, type TestCerts } from './helpers/test-certs.js';

let certs: TestCerts;
beforeAll(async () => {
  certs = await makeTestCerts(['n1', 'n2']);
}, 30_000);
afterAll(async () => {
  if (certs) await rm(certs.dir, { recursive: true, force: true });
});

describe('--insecure', () => {
  it('is allowed on loopback only, unless --allow-insecure-network', () => {
    expect(isLoopbackHost('127.0.0.1')).toBe(true);
    expect(isLoopbackHost('127.3.2.1')).toBe(true);
    expect(isLoopbackHost('::1')).toBe(true);
    expect(isLoopbackHost('localhost')).toBe(true);
    expect(isLoopbackHost('0.0.0.0')).toBe(false);
    expect(isLoopbackHost('10.0.0.5')).toBe(false);
    expect(insecureRefusal(['127.0.0.1:7101', '[::1]:7201'], false)).toBeUndefined();
    expect(insecureRefusal(['0.0.0.0:7101', '127.0.0.1:7201'], false)).toMatch(/0\.0\.0\.0:7101 is not a loopback address.*--allow-insecure-network/);
    expect(insecureRefusal(['0.0.0.0:7101'], true)).toBeUndefined();
  });

  it('server flags: plaintext needs --insecure; certificates are all or nothing; contradictions are refused', () => {
    const base = { certPollMs: '0' };
    expect(() => tlsFromFlags(base, ['127.0.0.1:1'])).toThrow(/missing --tls-cert, --tls-key, --peer-cert, --peer-key, --peer-ca.*--insecure/);
    expect(tlsFromFlags({ ...base, insecure: true }, ['127.0.0.1:1'])).toBeUndefined();
    expect(() => tlsFromFlags({ ...base, insecure: true }, ['0.0.0.0:1'])).toThrow(TlsFlagError);
    expect(() => tlsFromFlags({ ...base, insecure: true, tlsCert: 'x' }, ['127.0.0.1:1'])).toThrow(/--insecure contradicts --tls-cert/);
    expect(() => tlsFromFlags({ ...base, allowInsecureNetwork: true }, ['127.0.0.1:1'])).toThrow(/only goes with --insecure/);
    const n1 = certs.member.n1!;
    const missingFile = { ...base, tlsCert: n1.cert, tlsKey: n1.key, peerCert: n1.cert, peerKey: n1.key, peerCa: `${certs.dir}/nope.crt` };
    expect(() => tlsFromFlags(missingFile, ['127.0.0.1:1'])).toThrow(/peer-port mTLS.*cannot read .*nope\.crt \(ENOENT\)/);
    const swapped = { ...base, tlsCert: n1.cert, tlsKey: certs.member.n2!.key, peerCert: n1.cert, peerKey: n1.key, peerCa: certs.ca };
    expect(() => tlsFromFlags(swapped, ['127.0.0.1:1'])).toThrow(/client-port TLS/);
    expect(tlsFromFlags({ ...base, tlsCert: n1.cert, tlsKey: n1.key, peerCert: n1.cert, peerKey: n1.key, peerCa: certs.ca }, ['0.0.0.0:1'])).toBeInstanceOf(NodeTls);
  });
});

describe('member certificates', () => {
  it('name their member in a SAN URI', async () => {
    const cert = await servedCertificate(certs.member.n1!.cert, certs.member.n1!.key);
    expect(memberIdsOf(cert)).toEqual(['n1']);
    expect(memberIdsOf({ subjectaltname: 'DNS:localhost, URI:https://example.com, URI:urn:herald:member:n7' })).toEqual(['n7']);
    expect(memberIdsOf({ subjectaltname: 'URI:urn:herald:member:' })).toEqual([]);
    expect(memberIdsOf(undefined)).toEqual([]);
  }, 20_000);
});

describe('certificate rotation', () => {
  it('a reload serves the new certificate to new connections; a bad file is refused and the old one stays', async () => {
    const live = { cert: `${certs.dir}/live.crt`, key: `${certs.dir}/live.key` };
    await copyFile(certs.member.n1!.cert, live.cert);
    await copyFile(certs.member.n1!.key, live.key);
    const tls = new NodeTls({ certFile: live.cert, keyFile: live.key, peerCertFile: live.cert, peerKeyFile: live.key, peerCaFile: certs.ca });
    const server = new Server();
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', tls.clientServerCredentials(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    try {
      const first = await handshake(port);
      // Rotate: a new certificate for the same member, same CA.
      const next = await issueCert({ caDir: certs.dir, name: 'n1-next', member: 'n1', hosts: ['127.0.0.1', 'localhost'], days: 2 });
      await copyFile(next.cert, live.cert);
      await copyFile(next.key, live.key);
      expect(tls.reload().find((o) => o.label === 'client')).toMatchObject({ changed: true });
      const second = await waitFor(async () => {
        const c = await handshake(port);
        return c.serialNumber !== first.serialNumber ? c : undefined;
      });
      expect(second.serialNumber).toBe((await servedCertificate(next.cert, next.key)).serialNumber);

      // A truncated key mid-rotation: refused with the file's reason; the last good pair keeps serving.
      await writeFile(live.key, (await readFile(live.key, 'utf8')).slice(0, 40));
      const refused = tls.reload().find((o) => o.label === 'client')!;
      expect(refused.changed).toBe(false);
      expect('error' in refused && refused.error).toMatch(/client-port TLS/);
      expect((await handshake(port)).serialNumber).toBe(second.serialNumber);
    } finally {
      tls.stop();
      server.forceShutdown();
    }
  }, 30_000);
});

/** The certificate a TLS server on `port` presents (chain verified against the test CA). */
async function handshake(port: number): Promise<PeerCertificate> {
  const ca = await readFile(certs.ca);
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, ca, servername: 'localhost', ALPNProtocols: ['h2'] }, () => {
      const c = s.getPeerCertificate();
      s.destroy();
      resolve(c);
    });
    s.on('error', reject);
  });
}

/** The parsed form of a certificate file, by serving it once. */
async function servedCertificate(certFile: string, keyFile: string): Promise<PeerCertificate> {
  const tls = new NodeTls({ certFile, keyFile, peerCertFile: certFile, peerKeyFile: keyFile, peerCaFile: certs.ca });
  const server = new Server();
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', tls.clientServerCredentials(), (err, p) => (err ? reject(err) : resolve(p))));
  try {
    return await waitFor(() => handshake(port));
  } finally {
    server.forceShutdown();
  }
}

async function waitFor<T>(fn: () => Promise<T | undefined>, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      if (Date.now() > deadline) throw e;
    }
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}
