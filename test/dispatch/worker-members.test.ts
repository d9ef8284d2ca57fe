// Workers follow membership (issue 28): the leader's welcome lists the members' client addresses,
// so a worker configured with one endpoint learns every member and can find the cluster after
// that machine leaves (the rotation itself is covered against fake servers in
// test/client/worker-connection.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from '../../src/client/worker/worker.js';
import { waitFor } from '../raft-runtime/helpers/cluster.js';
import { startInProcessCluster, type InProcessCluster } from './helpers/in-process-cluster.js';

describe('a worker learns the members from the leader', () => {
  let c: InProcessCluster;
  let worker: Worker | undefined;
  beforeAll(async () => {
    c = await startInProcessCluster(3);
  }, 60_000);
  afterAll(async () => {
    await worker?.shutdown({ graceMs: 500 }).catch(() => undefined);
    await c?.stop();
  });

  it('configured with one follower, it is redirected to the leader and told all three members', async () => {
    const status = await c.client.status();
    const follower = status.members.find((m) => m.id !== status.leaderId)!;
    worker = new Worker({ endpoints: [follower.clientAddress], workerId: 'members-w', handlers: { none: () => undefined } });
    expect(worker.knownEndpoints).toEqual([follower.clientAddress]);
    worker.start();
    await waitFor('worker welcomed', () => worker!.connected, 15_000);
    expect([...worker.knownEndpoints].sort()).toEqual([...c.endpoints].sort());
    // The configured endpoint comes first.
    expect(worker.knownEndpoints[0]).toBe(follower.clientAddress);
  }, 30_000);
});
