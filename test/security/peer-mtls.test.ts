// The peer port with mutual TLS (issue 29): a 3-node cluster of real `herald server` processes
// with member certificates elects and serves TLS clients; a caller without a certificate from the
// peer CA, or with a valid one for another member, cannot vote or append: its connection or
// stream is refused and the cluster's term does not move.
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { credentials, Metadata, status, type ChannelCredentials, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterServiceClient } from '../../src/gen/herald/v1/cluster_service.js';
import { MessageType, type StreamRequest } from '../../src/gen/herald/raft/v1/raft.js';
import { PeerRaftClient, peerChannelOptions } from '../../src/server/peer/peer-transport.js';
import { expectMember } from '../../src/server/grpc/tls/member-identity.js';
import { TestCluster } from '../raft-runtime/helpers/cluster.js';
import { makeTestCerts, serverTlsFlags, type TestCerts } from './helpers/test-certs.js';

let certs: TestCerts;
let cluster: TestCluster;

beforeAll(async () => {
  certs = await makeTestCerts(['n1', 'n2', 'n3']);
  cluster = await TestCluster.create({
    size: 3,
    security: (id) => serverTlsFlags(certs, id),
    clientCredentials: credentials.createSsl(readFileSync(certs.ca)),
    extraArgs: ['--log-level', 'warn'],
  });
  await cluster.startAll();
}, 60_000);

afterAll(async () => {
  await cluster?.cleanup();
  if (certs) await rm(certs.dir, { recursive: true, force: true });
});

/** One Raft stream to `target`'s peer port carrying a vote request from `from` at a high term. */
function sendVote(target: string, from: string, creds: ChannelCredentials, clusterId: string, term: number): Promise<ServiceError | null> {
  const n = cluster.nodes.get(target)!;
  const client = new PeerRaftClient(`127.0.0.1:${n.peerPort}`, creds, peerChannelOptions(1 << 20));
  return new Promise((resolve) => {
    const call = client.stream(new Metadata(), { deadline: Date.now() + 5_000 }, (err) => {
      client.close();
      resolve(err);
    });
    const req: StreamRequest = {
      clusterId,
      messages: [
        { type: MessageType.MESSAGE_TYPE_VOTE, from, to: target, term, logTerm: 1_000, index: 1_000_000, entries: [], commit: 0, reject: false, rejectHint: 0, rejectHintTerm: 0, context: new Uint8Array(), senderWallUnixMs: 0 } as unknown as StreamRequest['messages'][number],
      ],
      effects: [],
      effectsFrom: '',
      senderIncarnation: '',
      targetIncarnation: '', featureLevel: 0,
    };
    call.on('error', () => undefined);
    call.write(req);
    // Leave the stream open long enough for the server to refuse it; a refused stream ends with its status.
    setTimeout(() => call.end(), 1_000);
  });
}

describe('peer port: mutual TLS naming the member', () => {
  it('a TLS cluster elects a leader and serves TLS clients; a plaintext client is refused', async () => {
    const leader = await cluster.waitForLeader(20_000);
    expect(['n1', 'n2', 'n3']).toContain(leader);
    const plain = new ClusterServiceClient(`127.0.0.1:${cluster.nodes.get('n1')!.clientPort}`, credentials.createInsecure());
    const err = await new Promise<ServiceError | null>((resolve) => plain.getStatus({}, new Metadata(), { deadline: Date.now() + 3_000 }, (e) => resolve(e)));
    plain.close();
    expect(err?.code).toBe(status.UNAVAILABLE);
  }, 30_000);

  it('no certificate, a foreign CA, or a certificate for another member: refused, and the term does not move', async () => {
    const leader = await cluster.waitForLeader(20_000);
    const target = ['n1', 'n2', 'n3'].find((id) => id !== leader && id !== 'n2')!;
    const before = await cluster.status(target);
    const term = before.term;
    const ca = readFileSync(certs.ca);
    const n2 = certs.member.n2!;
    const verify = { checkServerIdentity: expectMember(target) };

    // A valid certificate for n2 speaking as n3 (or as n1): its stream is refused by name.
    const impostor = target === 'n3' ? 'n1' : 'n3';
    const asOther = await sendVote(target, impostor, credentials.createSsl(ca, readFileSync(n2.key), readFileSync(n2.cert), verify), before.clusterId, term + 50);
    expect(asOther?.code).toBe(status.PERMISSION_DENIED);
    expect(asOther?.details).toContain(`a certificate for member n2 cannot speak as member ${impostor}`);

    // No client certificate, or one from another CA: the TLS handshake fails.
    const none = await sendVote(target, 'n2', credentials.createSsl(ca, null, null, verify), before.clusterId, term + 50);
    expect(none?.code).toBe(status.UNAVAILABLE);
    const f = certs.foreign;
    const foreign = await sendVote(target, 'n2', credentials.createSsl(ca, readFileSync(f.key), readFileSync(f.cert), verify), before.clusterId, term + 50);
    expect(foreign?.code).toBe(status.UNAVAILABLE);

    // Nothing reached the Raft core: same leader, same term everywhere.
    await new Promise((r) => setTimeout(r, 1_500));
    for (const id of ['n1', 'n2', 'n3']) {
      const s = await cluster.status(id);
      expect(s.term, id).toBe(term);
      expect(s.leaderId, id).toBe(leader);
    }
  }, 30_000);

  it('a node refuses to dial a peer whose certificate names another member', async () => {
    // Dialling n1's peer port while expecting n3 there: the client-side member check fails it.
    const ca = readFileSync(certs.ca);
    const n2 = certs.member.n2!;
    const s = await cluster.status('n1');
    const err = await sendVote('n1', 'n2', credentials.createSsl(ca, readFileSync(n2.key), readFileSync(n2.cert), { checkServerIdentity: expectMember('n3') }), s.clusterId, s.term + 50);
    expect(err?.code).toBe(status.UNAVAILABLE);
    expect((await cluster.status('n1')).term).toBe(s.term);
  }, 30_000);
});
