// Issue 29: client certificates as the second credential, on a live 3-node in-process cluster
// with TLS on the client port and mTLS on the peer port. A certificate's SAN URIs carry its role;
// a certificate principal's write through a follower reaches the leader as a forwarded principal,
// which the leader accepts only because the follower's certificate names a member; the same
// header from a client is refused.
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credentials, status, type Client } from '@grpc/grpc-js';
import { HeraldClient } from '../../src/client/herald-client.js';
import { issueCert } from '../../src/cli/certs/openssl-certs.js';
import { fetchCluster } from '../../src/server/node/join-cluster.js';
import { PauseJobRequest } from '../../src/gen/herald/v1/job_service.js';
import { Role } from '../../src/gen/herald/v1/auth_service.js';
import { NodeTls } from '../../src/server/grpc/tls/node-tls.js';
import { encodeForwardedPrincipal, FORWARDED_PRINCIPAL_KEY } from '../../src/server/auth/authenticator.js';
import { newTokenSecret } from '../../src/server/auth/token-secret.js';
import { startInProcessCluster, type InProcessCluster } from '../dispatch/helpers/in-process-cluster.js';
import { makeTestCerts, type TestCerts } from './helpers/test-certs.js';
import { rawClient, rawUnary } from './helpers/raw-calls.js';

describe('auth: client certificates carry a role', () => {
  let certs: TestCerts;
  let cluster: InProcessCluster;
  let ops: { cert: string; key: string };
  let plain: { cert: string; key: string };
  let followerAddr: string;
  const clients: Array<{ close(): void }> = [];

  beforeAll(async () => {
    certs = await makeTestCerts(['n1', 'n2', 'n3']);
    ops = await issueCert({ caDir: certs.dir, name: 'ops-alice', hosts: [], days: 2, role: 'operator' });
    plain = await issueCert({ caDir: certs.dir, name: 'nobody', hosts: [], days: 2 });
    const tls = (id: string) =>
      new NodeTls({
        certFile: certs.member[id]!.cert,
        keyFile: certs.member[id]!.key,
        clientCaFile: certs.ca,
        peerCertFile: certs.member[id]!.cert,
        peerKeyFile: certs.member[id]!.key,
        peerCaFile: certs.ca,
      });
    const bootstrap = newTokenSecret().token;
    cluster = await startInProcessCluster(3, {}, { auth: { bootstrapToken: bootstrap }, tls }, bootstrap, { ca: readFileSync(certs.ca) });
    const leader = await cluster.leader();
    followerAddr = `127.0.0.1:${cluster.nodes.find((n) => n !== leader)!.node.clientPort}`;
  }, 90_000);

  afterAll(async () => {
    for (const c of clients) c.close();
    await cluster?.stop();
    if (certs) await rm(certs.dir, { recursive: true, force: true });
  });

  function sdk(files: { cert: string; key: string }): HeraldClient {
    const c = new HeraldClient({ endpoints: cluster.endpoints, tls: { ca: readFileSync(certs.ca), cert: readFileSync(files.cert), key: readFileSync(files.key) } });
    clients.push(c);
    return c;
  }

  function raw(addr: string, files: { cert: string; key: string }): Client {
    const c = rawClient(addr, credentials.createSsl(readFileSync(certs.ca), readFileSync(files.key), readFileSync(files.cert)));
    clients.push(c);
    return c;
  }

  it('authenticates a certificate with a role URI as that principal, and enforces the role', async () => {
    const alice = sdk(ops);
    expect((await alice.listJobs({})).items).toEqual([]);
    await expect(alice.createToken('x', 'viewer')).rejects.toMatchObject({ grpcCode: status.PERMISSION_DENIED, message: expect.stringMatching(/needs the admin role; certificate "ops-alice" has the operator role/) });
    await expect(sdk(plain).listJobs({})).rejects.toMatchObject({ grpcCode: status.UNAUTHENTICATED });
  }, 30_000);

  it('a certificate principal writes through a follower (forwarded principal from a member); a client forging that header is refused', async () => {
    const pause = Buffer.from(PauseJobRequest.encode({ jobId: 'no-such-job', note: '' }).finish());
    expect(await rawUnary(raw(followerAddr, ops), '/herald.v1.JobService/PauseJob', {}, pause)).toMatchObject({ code: status.NOT_FOUND });
    const forged = encodeForwardedPrincipal({ name: 'mallory', role: Role.ROLE_ADMIN, taskTypes: new Set(), via: 'certificate' });
    for (const addr of cluster.endpoints) {
      expect(await rawUnary(raw(addr, ops), '/herald.v1.AuthService/ListTokens', { metadata: { [FORWARDED_PRINCIPAL_KEY]: forged } })).toMatchObject({
        code: status.PERMISSION_DENIED,
        details: expect.stringMatching(/only from a cluster member/),
      });
    }
  }, 30_000);

  it('a member certificate without a role reads as a viewer (a node joining with --join asks for the members), and writes nothing', async () => {
    const member = { cert: certs.member.n2!.cert, key: certs.member.n2!.key };
    const joined = await fetchCluster([followerAddr], credentials.createSsl(readFileSync(certs.ca), readFileSync(member.key), readFileSync(member.cert)));
    expect(joined.members.map((m) => m.id).sort()).toEqual(['n1', 'n2', 'n3']);
    const pause = Buffer.from(PauseJobRequest.encode({ jobId: 'no-such-job', note: '' }).finish());
    expect(await rawUnary(raw(followerAddr, member), '/herald.v1.JobService/PauseJob', {}, pause)).toMatchObject({
      code: status.PERMISSION_DENIED,
      details: expect.stringMatching(/member:n2/),
    });
  }, 30_000);

  it('AddMember without an incarnation: the leader reads it from the new node with its member certificate (a token could not)', async () => {
    // The bootstrap admin token is put by the first leader shortly after the election.
    for (const end = Date.now() + 15_000; ; ) {
      try {
        await cluster.client.listTokens();
        break;
      } catch (e) {
        if (Date.now() > end) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    // Pointed at n2's client port under another id: the leader got n2's status (as a member, on
    // this TLS + auth cluster) and refuses the mismatch rather than failing to read it.
    await expect(cluster.client.addMember({ id: 'n9', peerAddress: '127.0.0.1:1', clientAddress: followerAddr, incarnation: '' })).rejects.toMatchObject({
      grpcCode: status.INVALID_ARGUMENT,
      message: expect.stringMatching(/the node at 127\.0\.0\.1:\d+ is n\d, not n9/),
    });
    // Nobody there: a precondition, saying what to do.
    await expect(cluster.client.addMember({ id: 'n9', peerAddress: '127.0.0.1:1', clientAddress: '127.0.0.1:1', incarnation: '' })).rejects.toMatchObject({
      grpcCode: status.FAILED_PRECONDITION,
      message: expect.stringMatching(/cannot read n9's incarnation at 127\.0\.0\.1:1 .*herald server --join/),
    });
  }, 30_000);
});
