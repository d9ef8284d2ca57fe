import { Server, ServerCredentials, credentials, loadPackageDefinition, type Client } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { afterEach, describe, expect, it } from 'vitest';
import { addServerConventions, raftReadiness } from '../../src/server/grpc/server-conventions.js';

type Unary = (req: object, cb: (err: Error | null, res: { status: string }) => void) => void;

async function startServer(ready: { value: boolean }) {
  const server = new Server();
  const conv = addServerConventions(server, { isReady: () => ready.value }, 20);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return { server, conv, port };
}

function healthClient(port: number): Client & { check: Unary } {
  const def = loadPackageDefinition(loadSync(healthProtoPath, { enums: String })) as unknown as { grpc: { health: { v1: { Health: new (a: string, c: unknown) => Client & { check: Unary } } } } };
  return new def.grpc.health.v1.Health(`127.0.0.1:${port}`, credentials.createInsecure());
}

const check = (c: { check: Unary }, service: string) =>
  new Promise<string>((resolve, reject) => c.check({ service }, (err, res) => (err ? reject(err) : resolve(res.status))));

describe('server conventions', () => {
  const cleanup: Array<() => void> = [];
  afterEach(() => {
    while (cleanup.length) cleanup.pop()!();
  });

  it('reports NOT_SERVING until ready, then SERVING, for the server and each service', async () => {
    const ready = { value: false };
    const { server, conv, port } = await startServer(ready);
    const client = healthClient(port);
    cleanup.push(() => client.close(), () => conv.stop(), () => server.forceShutdown());
    expect(await check(client, '')).toBe('NOT_SERVING');
    expect(await check(client, 'herald.v1.JobService')).toBe('NOT_SERVING');
    ready.value = true;
    const deadline = Date.now() + 2000;
    while ((await check(client, 'herald.v1.WorkerService')) !== 'SERVING') {
      if (Date.now() > deadline) throw new Error('health never flipped to SERVING');
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(await check(client, '')).toBe('SERVING');
  });

  it('serves reflection listing the public services', async () => {
    const { server, conv, port } = await startServer({ value: true });
    cleanup.push(() => conv.stop(), () => server.forceShutdown());
    const def = loadPackageDefinition(
      loadSync('grpc/reflection/v1alpha/reflection.proto', { includeDirs: [new URL('../../node_modules/@grpc/reflection/build/proto', import.meta.url).pathname] }),
    ) as unknown as { grpc: { reflection: { v1alpha: { ServerReflection: new (a: string, c: unknown) => Client & { serverReflectionInfo(): NodeJS.ReadWriteStream & { write(m: object): void; end(): void } } } } } };
    const client = new def.grpc.reflection.v1alpha.ServerReflection(`127.0.0.1:${port}`, credentials.createInsecure());
    cleanup.push(() => client.close());
    const stream = client.serverReflectionInfo();
    const names = await new Promise<string[]>((resolve, reject) => {
      stream.on('data', (m: { listServicesResponse?: { service: { name: string }[] } }) => resolve((m.listServicesResponse?.service ?? []).map((s) => s.name)));
      stream.on('error', reject);
      stream.write({ listServices: '*' });
    });
    stream.end();
    expect(names).toEqual(expect.arrayContaining(['herald.v1.JobService', 'herald.v1.WorkerService', 'herald.v1.ClusterService']));
  });

  it('a Raft node is ready once it knows a leader and applied all it knows committed, and never again once its driver failed', () => {
    const node = { leader: '', commit: 5, applied: 4, failed: undefined as Error | undefined };
    const r = raftReadiness({ status: () => node, appliedIndex: () => node.applied, failure: () => node.failed });
    expect(r.isReady()).toBe(false);
    node.leader = 'n1';
    expect(r.isReady()).toBe(false);
    node.applied = 5;
    expect(r.isReady()).toBe(true);
    // An I/O error stopped its applying: caught up or not, it does not serve.
    node.failed = new Error('IO error');
    expect(r.isReady()).toBe(false);
  });
});
