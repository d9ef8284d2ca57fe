import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, loadPackageDefinition, type Client } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HeraldClient } from '../../src/client/herald-client.js';
import { every } from '../../src/client/job-spec-builders.js';
import { createSchedulerNode, type SchedulerNode } from '../../src/server/scheduler-node.js';
import { freePort } from './helpers/free-port.js';

type HealthClient = Client & { check(req: object, cb: (err: Error | null, res: { status: string }) => void): void };

async function until<T>(what: string, fn: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// A real scheduler node: the health check says SERVING once it leads and applied its log, and
// /metrics reflects what happened (proposals, their latency, fsyncs, term, runs by state).
describe('a scheduler node observed from outside', () => {
  let dir: string;
  let sn: SchedulerNode;
  let client: HeraldClient;
  let health: HealthClient;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'herald-observe-'));
    const [peer, api] = [await freePort(), await freePort()];
    sn = await createSchedulerNode({
      id: 'n1',
      members: [{ id: 'n1', peerAddress: `127.0.0.1:${peer}`, clientAddress: `127.0.0.1:${api}` }],
      dataDir: join(dir, 'n1'),
      logger: pino({ level: 'silent' }),
      tickMs: 20,
      metricsListen: '127.0.0.1:0',
    });
    client = new HeraldClient({ endpoints: [`127.0.0.1:${api}`] });
    const def = loadPackageDefinition(loadSync(healthProtoPath, { enums: String })) as unknown as {
      grpc: { health: { v1: { Health: new (a: string, c: unknown) => HealthClient } } };
    };
    health = new def.grpc.health.v1.Health(`127.0.0.1:${api}`, credentials.createInsecure());
  }, 60_000);

  afterAll(async () => {
    health?.close();
    client?.close();
    await sn?.stop({ transfer: false, graceMs: 1000 });
    await rm(dir, { recursive: true, force: true });
  });

  it('reports SERVING once ready and exports the Raft, proposal and run metrics', async () => {
    await until('SERVING', () => new Promise<string | undefined>((resolve) => health.check({ service: 'herald.v1.JobService' }, (err, res) => resolve(!err && res.status === 'SERVING' ? res.status : undefined))));
    await client.createJob({ taskType: 'observe', schedule: every('1h') }, { id: 'observed' });
    await client.triggerJob('observed');
    const body = await until('metrics to reflect the writes', async () => {
      const text = await (await fetch(`http://127.0.0.1:${sn.metricsPort}/metrics`)).text();
      return /herald_runs\{state="RUN_STATE_PENDING",node="n1"\} [1-9]/.test(text) ? text : undefined;
    });
    expect(body).toMatch(/herald_raft_proposals_total\{outcome="ok",node="n1"\} [1-9]/);
    expect(body).toMatch(/herald_raft_proposal_latency_seconds_count\{node="n1"\} [1-9]/);
    expect(body).toMatch(/herald_raft_fsyncs_total\{node="n1"\} [1-9]/);
    expect(body).toMatch(/herald_raft_term\{node="n1"\} [1-9]/);
    expect(body).toMatch(/herald_raft_is_leader\{node="n1"\} 1/);
    expect(body).toMatch(/herald_raft_applied_index\{node="n1"\} [1-9]/);
    // A lone node is its own leader: everything it applied it evaluated.
    expect(body).toMatch(/herald_raft_entries_applied_total\{path="evaluated",node="n1"\} [1-9]/);
  }, 60_000);
});
