import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import pino from 'pino';
import { JobServiceClient } from '../../../src/gen/herald/v1/job_service.js';
import { JobServiceService } from '../../../src/gen/herald/v1/job_service.js';
import { SchedulerStateMachine } from '../../../src/fsm/index.js';
import { createJobService, type JobServiceHandle } from '../../../src/server/api/job-service.js';
import { createNode } from '../../../src/server/node/create-node.js';
import type { HeraldNode } from '../../../src/server/node/herald-node.js';
import { freePort } from './free-port.js';

export interface ApiCluster {
  nodes: HeraldNode[];
  clients: JobServiceClient[];
  leader(): Promise<HeraldNode>;
  stop(): Promise<void>;
}

/** An in-process cluster of scheduler nodes serving JobService, for API tests. */
/** `electionTicks` (of 50 ms): longer for tests whose large applies block the one event loop all nodes share. */
export async function startApiCluster(size = 3, o: { electionTicks?: number } = {}): Promise<ApiCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'herald-api-'));
  const ports = await Promise.all(Array.from({ length: size * 2 }, () => freePort()));
  const members = Array.from({ length: size }, (_, i) => ({
    id: `n${i + 1}`,
    peerAddress: `127.0.0.1:${ports[i * 2]}`,
    clientAddress: `127.0.0.1:${ports[i * 2 + 1]}`,
  }));
  const logger = pino({ level: process.env.HERALD_TEST_LOG ?? 'silent' });
  const services: JobServiceHandle[] = [];
  const nodes: HeraldNode[] = [];
  for (const m of members) {
    nodes.push(
      await createNode({
        id: m.id,
        members,
        dataDir: join(dir, m.id),
        stateMachine: (smDir) => SchedulerStateMachine.open(smDir),
        logger: logger.child({ node: m.id }),
        // 0.5–1 s election timeouts: shorter ones churn leaders on a loaded 2-core machine and
        // the tests here are about the API, not elections.
        tickMs: 50,
        electionTicks: o.electionTicks ?? 10,
        heartbeatTicks: 1,
        registerClientServices: (server, node) => {
          const svc = createJobService({
            node,
            fsm: node.stateMachine as SchedulerStateMachine,
            logger,
            maxPayloadBytes: 256 * 1024,
            proposalTimeoutMs: 5000,
          });
          services.push(svc);
          server.addService(JobServiceService, svc.implementation);
        },
      }),
    );
  }
  // Answers of a large CreateJobs exceed grpc-js's 4 MiB default receive limit.
  const clients = members.map((m) => new JobServiceClient(m.clientAddress, credentials.createInsecure(), { 'grpc.max_receive_message_length': 64 * 1024 * 1024 }));
  return {
    nodes,
    clients,
    async leader() {
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline) {
        const l = nodes.find((n) => n.driver.isLeader() && n.clusterClock.nowMs() !== undefined);
        if (l) return l;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error('no leader with cluster time within 10 s');
    },
    async stop() {
      for (const c of clients) c.close();
      for (const s of services) s.close();
      await Promise.all(nodes.map((n) => n.stop({ transfer: false, graceMs: 500 }).catch(() => undefined)));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
