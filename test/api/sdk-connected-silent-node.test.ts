// A node whose connection is up but which never answers (its network went silent after the TCP
// connection was made): the SDK's reads and keyed writes must leave it after the first-byte bound
// and reach the real leader, while a plain write is never repeated after an unknown outcome.
// The silent node is a fake gRPC server that claims leadership in GetStatus (so the router
// targets it) and holds every JobService call open.
import { createServer, connect, type Server as NetServer, type Socket } from 'node:net';
import { Metadata, status, type sendUnaryData, type ServerUnaryCall, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { DeadlineExceededError } from '../../src/client/errors.js';
import { HeraldClient } from '../../src/client/herald-client.js';
import { every } from '../../src/client/job-spec-builders.js';
import { ClusterServiceService, GetStatusResponse, NodeRole } from '../../src/gen/herald/v1/cluster_service.js';
import { JobServiceService } from '../../src/gen/herald/v1/job_service.js';
import { startTestServer, type TestServer } from '../client/fakes/grpc-test-server.js';
import { startInProcessCluster, type InProcessCluster } from '../dispatch/helpers/in-process-cluster.js';

interface SilentNode {
  server: TestServer;
  /** JobService methods called on it, in order. */
  calls: string[];
  /** Answers every held call (UNAVAILABLE) so the server can stop. */
  release(): void;
}

async function startSilentNode(): Promise<SilentNode> {
  const calls: string[] = [];
  const held: Array<sendUnaryData<unknown>> = [];
  const jobs: UntypedServiceImplementation = {};
  for (const [name, def] of Object.entries(JobServiceService)) {
    if (def.requestStream || def.responseStream) continue;
    jobs[name] = (_call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
      calls.push(name);
      held.push(callback); // never answered while the test runs
    };
  }
  let address = '';
  const cluster: UntypedServiceImplementation = {
    getStatus: (_call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<GetStatusResponse>) =>
      callback(null, GetStatusResponse.fromPartial({ nodeId: 'silent', role: NodeRole.NODE_ROLE_LEADER, term: 99, leaderId: 'silent', leaderAddress: address })),
  };
  const server = await startTestServer([
    [JobServiceService, jobs],
    [ClusterServiceService, cluster],
  ]);
  address = server.address;
  return {
    server,
    calls,
    release: () => {
      for (const cb of held.splice(0)) cb({ code: status.UNAVAILABLE, details: 'test over', metadata: new Metadata() });
    },
  };
}

// Forwards to `target`, delaying every chunk both ways, so that the silent node's GetStatus
// answer reaches the client first and the router targets it (the case under test).
async function startDelayProxy(target: string, delayMs: number): Promise<{ address: string; close(): void }> {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const sockets = new Set<Socket>();
  const delay = (from: Socket, to: Socket): void => {
    from.on('data', (chunk) => setTimeout(() => to.destroyed || to.write(chunk), delayMs));
    from.on('close', () => setTimeout(() => to.destroy(), delayMs));
    from.on('error', () => to.destroy());
  };
  const server: NetServer = createServer((down) => {
    const up = connect(port, host);
    sockets.add(down).add(up);
    delay(down, up);
    delay(up, down);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address() as { port: number };
  return {
    address: `127.0.0.1:${addr.port}`,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

const BOUND_MS = 500;
const DISCOVERY_MS = 500;

describe('SDK: a connected but silent node', () => {
  let c: InProcessCluster | undefined;
  let silent: SilentNode | undefined;
  let proxy: { close(): void } | undefined;
  const clients: HeraldClient[] = [];
  afterEach(async () => {
    for (const cl of clients.splice(0)) cl.close();
    silent?.release();
    await silent?.server.stop();
    proxy?.close();
    await c?.stop();
    c = silent = proxy = undefined;
  });

  it('reads and keyed writes move to the real leader after the first-byte bound', { timeout: 20_000 }, async () => {
    c = await startInProcessCluster(1);
    silent = await startSilentNode();
    const p = await startDelayProxy(c.endpoints[0]!, 100);
    proxy = p;
    const make = (): HeraldClient => {
      const cl = new HeraldClient({
        endpoints: [silent!.server.address, p.address],
        firstByteTimeoutMs: BOUND_MS,
        discoveryTimeoutMs: DISCOVERY_MS,
        defaultDeadlineMs: 8_000,
      });
      clients.push(cl);
      return cl;
    };

    let started = Date.now();
    const page = await make().listJobs();
    const listMs = Date.now() - started;
    expect(page.items).toEqual([]);
    expect(silent.calls).toEqual(['listJobs']); // it was tried first, and only once
    // The bound plus a discovery round (and scheduling slack), far below the 8 s deadline.
    expect(listMs).toBeGreaterThanOrEqual(BOUND_MS - 50);
    expect(listMs).toBeLessThan(BOUND_MS + DISCOVERY_MS + 1_000);

    started = Date.now();
    const created = await make().createJob({ taskType: 'silent-probe', schedule: every('1h') }, { idempotencyKey: 'silent-node-1' });
    const createMs = Date.now() - started;
    expect(created.created).toBe(true);
    expect(silent.calls).toEqual(['listJobs', 'createJob']);
    expect(createMs).toBeLessThan(BOUND_MS + DISCOVERY_MS + 1_000);
    // The abandoned attempt never reached the cluster; the one that did created exactly one job.
    expect((await c.client.listJobs()).items.map((j) => j.id)).toEqual([created.job.id]);
  });

  it('a plain write to the silent node is not repeated and fails at its deadline', { timeout: 20_000 }, async () => {
    silent = await startSilentNode();
    const client = new HeraldClient({ endpoints: [silent.server.address], firstByteTimeoutMs: BOUND_MS, discoveryTimeoutMs: DISCOVERY_MS });
    clients.push(client);
    const deadlineMs = 2_500;
    const started = Date.now();
    const err = await client.pauseJob('some-job', 'note', { deadlineMs }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const elapsed = Date.now() - started;
    expect(err).toBeInstanceOf(DeadlineExceededError);
    // Sent once (its outcome is unknown, so it must not be repeated) and waited out to the deadline.
    expect(silent.calls).toEqual(['pauseJob']);
    expect(elapsed).toBeGreaterThanOrEqual(deadlineMs - 50);
    expect(elapsed).toBeLessThan(deadlineMs + 1_500);
  });
});
