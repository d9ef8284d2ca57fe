// Rolling upgrade in process: one node of a 3-node cluster plays an older build (it reports
// supporting feature level 1 on its peer streams). The leader does not raise the cluster level and
// writes level-1 job commands (no principal: created_by stays empty) until that node reports 2;
// then it raises the level and job commands carry the caller's principal. Once it reports 3 the
// level is raised again and commands carry the call's request id (runs a person acts on, the caller);
// once it reports 4 the level reaches 4 (the trim horizon: an apply rule, no new command bytes).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HeraldClient } from '../../src/client/herald-client.js';
import { every } from '../../src/client/index.js';
import { newTokenSecret } from '../../src/server/auth/token-secret.js';
import { createSchedulerNode, type SchedulerNode } from '../../src/server/scheduler-node.js';
import { SUPPORTED_FEATURE_LEVEL } from '../../src/fsm/commands/feature-levels.js';
import { freePort, waitFor } from '../raft-runtime/helpers/cluster.js';
import { PauseJobRequest } from '../../src/gen/herald/v1/job_service.js';
import { rawClient, rawUnary } from '../security/helpers/raw-calls.js';

describe('cluster feature level across a rolling upgrade (in process)', () => {
  const admin = newTokenSecret().token;
  let root = '';
  const nodes: SchedulerNode[] = [];
  let client: HeraldClient;
  /** What n3 reports supporting: 1 plays a node not upgraded yet. */
  let n3Level = 1;
  const clientAddress: Record<string, string> = {};

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'herald-feature-level-'));
    const ports = await Promise.all(Array.from({ length: 6 }, () => freePort()));
    const members = [0, 1, 2].map((i) => ({ id: `n${i + 1}`, peerAddress: `127.0.0.1:${ports[i * 2]}`, clientAddress: `127.0.0.1:${ports[i * 2 + 1]}` }));
    for (const m of members) clientAddress[m.id] = m.clientAddress;
    const logger = pino({ level: process.env.HERALD_TEST_LOG ?? 'silent' });
    for (const m of members) {
      nodes.push(
        await createSchedulerNode({
          id: m.id,
          members,
          dataDir: join(root, m.id),
          logger: logger.child({ node: m.id }),
          tickMs: 20,
          electionTicks: 10,
          auth: { bootstrapToken: admin },
          featureLevelCheckMs: 100,
          ...(m.id === 'n3' ? { supportedFeatureLevel: () => n3Level } : {}),
        }),
      );
    }
    client = new HeraldClient({ endpoints: members.map((m) => m.clientAddress), token: admin });
    await waitFor('the bootstrap admin token', async () => client.listJobs({}).then(() => true, () => undefined), 20_000, 50);
  }, 60_000);

  afterAll(async () => {
    client?.close();
    await Promise.all(nodes.map((n) => n.stop({ transfer: false, graceMs: 500 }).catch(() => undefined)));
    await rm(root, { recursive: true, force: true });
  });

  it('stays at level 1 with level-1 job commands while a voter reports 1, raises to 2 once it reports 2, to 3 (request ids) once it reports 3, to 4 once it reports 4, to 5 (index values) once it reports 5', async () => {
    // Every node has heard from the others (the reports travel on every peer batch).
    // The leader has heard from every follower (reports travel on every peer batch).
    await waitFor('reports from every follower at the leader', () => {
      const l = nodes.find((n) => n.node.driver.isLeader());
      return (l && ['n1', 'n2', 'n3'].every((id) => id === l.node.id || l.node.reportedFeatureLevels.get(id) !== undefined)) || undefined;
    }, 10_000, 20);
    // Several raise checks pass.
    await new Promise((r) => setTimeout(r, 600));
    for (const n of nodes) expect(n.fsm.appliedFeatureLevel).toBe(1);
    const { job } = await client.createJob({ taskType: 'upgrade', schedule: every('1h') }, { id: 'before' });
    expect(job.createdBy).toBe('');
    const status = await client.status();
    expect(status.featureLevel).toBe(1);
    const byId = Object.fromEntries(status.members.map((m) => [m.id, m.supportedFeatureLevel]));
    expect(byId.n3).toBe(1);

    n3Level = 2; // n3 restarted on the new build
    await waitFor('cluster feature level 2 on every node', () => nodes.every((n) => n.fsm.appliedFeatureLevel === 2) || undefined, 10_000, 20);
    const after = await client.createJob({ taskType: 'upgrade', schedule: every('1h') }, { id: 'after' });
    expect(after.job.createdBy).toBe('bootstrap-admin');
    expect((await client.getJob('before')).createdBy).toBe('');
    expect(after.job.createdRequestId).toBe('');
    const st = await client.status();
    expect(st.featureLevel).toBe(2);
    expect(Object.fromEntries(st.members.map((m) => [m.id, m.supportedFeatureLevel]))).toEqual({ n1: SUPPORTED_FEATURE_LEVEL, n2: SUPPORTED_FEATURE_LEVEL, n3: 2 });

    n3Level = 3;
    await waitFor('cluster feature level 3 on every node', () => nodes.every((n) => n.fsm.appliedFeatureLevel === 3) || undefined, 10_000, 20);
    const at3 = await client.createJob({ taskType: 'upgrade', schedule: every('1h') }, { id: 'at3' });
    expect(at3.job.createdBy).toBe('bootstrap-admin');
    expect(at3.job.createdRequestId).not.toBe('');
    // A caller's own request id (x-request-id) is the one recorded, also through a follower.
    const leader = nodes.find((n) => n.node.driver.isLeader())!;
    const follower = nodes.find((n) => n !== leader)!;
    const raw = rawClient(clientAddress[follower.node.id]!);
    try {
      const body = Buffer.from(PauseJobRequest.encode(PauseJobRequest.fromPartial({ jobId: 'at3', note: 'audit' })).finish());
      const got = await rawUnary(raw, '/herald.v1.JobService/PauseJob', { token: admin, metadata: { 'x-request-id': 'audit-req-29' } }, body);
      expect(got.code).toBe(0);
    } finally {
      raw.close();
    }
    expect(await client.getJob('at3')).toMatchObject({ createdRequestId: at3.job.createdRequestId, updatedBy: 'bootstrap-admin', updatedRequestId: 'audit-req-29' });
    const run = await client.triggerJob('at3', { ignoreOverlap: true });
    expect(run).toMatchObject({ requestedBy: 'bootstrap-admin' });
    expect(run.requestId).not.toBe('');
    // Jobs written at the lower levels keep what they had.
    expect(await client.getJob('before')).toMatchObject({ createdBy: '', createdRequestId: '' });
    expect(await client.getJob('after')).toMatchObject({ createdBy: 'bootstrap-admin', createdRequestId: '' });
    // n3 at 3 holds the cluster at 3 however long the leader checks.
    await new Promise((r) => setTimeout(r, 300));
    expect((await client.status()).featureLevel).toBe(3);

    n3Level = 4;
    await waitFor('cluster feature level 4 on every node', () => nodes.every((n) => n.fsm.appliedFeatureLevel === 4) || undefined, 10_000, 20);
    expect((await client.status()).featureLevel).toBe(4);

    n3Level = 5;
    await waitFor('cluster feature level 5 on every node', () => nodes.every((n) => n.fsm.appliedFeatureLevel === 5) || undefined, 10_000, 20);
    expect((await client.status()).featureLevel).toBe(5);
  }, 60_000);
});
