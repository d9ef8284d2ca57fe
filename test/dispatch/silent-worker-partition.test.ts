// A worker cut off from the leader alone, silently (no RST, no FIN), while the cluster stays
// healthy and the worker still reaches the followers: its runs are re-offered to another worker
// within the lease bound, and no run executes on two workers at once — the cut worker presumes
// its leases lost (from its last acknowledged heartbeat) before the leader can expire them.
// Nodes and the cut worker run in network namespaces of their own (chaos/net/netns.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NetnsLab, netnsUnavailable } from '../../chaos/net/netns.js';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { waitFor } from '../raft-runtime/helpers/cluster.js';
import { SchedulerCluster } from './helpers/process-cluster.js';

const unavailable = await netnsUnavailable();
const SCRIPT = join(import.meta.dirname, 'fixtures', 'sdk-worker-process.ts');
const LEASE_MS = 3_000;

interface WorkerEvent {
  type: 'started' | 'finished' | 'aborted' | 'connected' | 'disconnected';
  runId?: string;
  token?: number;
  reason?: string;
  at: number;
}

class SdkWorker {
  readonly events: WorkerEvent[] = [];
  readonly exit: Promise<unknown>;
  private buf = '';
  constructor(readonly proc: ChildProcess) {
    this.exit = new Promise((r) => proc.once('exit', r));
    proc.stdout!.on('data', (d: Buffer) => {
      this.buf += d.toString();
      const lines = this.buf.split('\n');
      this.buf = lines.pop()!;
      for (const l of lines) if (l.startsWith('{')) this.events.push(JSON.parse(l) as WorkerEvent);
    });
    proc.stderr!.on('data', () => undefined);
  }
  of(type: WorkerEvent['type']): WorkerEvent[] {
    return this.events.filter((e) => e.type === type);
  }
}

function startWorker(prefix: string[], args: string[]): SdkWorker {
  const argv = [process.execPath, '--import', 'tsx', SCRIPT, ...args];
  const [cmd, ...rest] = [...prefix, ...argv];
  return new SdkWorker(spawn(cmd!, rest, { stdio: ['ignore', 'pipe', 'pipe'] }));
}

describe('a worker silently cut from the leader only', () => {
  let lab: NetnsLab | undefined;
  let c: SchedulerCluster | undefined;
  const workers: SdkWorker[] = [];
  afterEach(async () => {
    for (const w of workers) w.proc.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.exit));
    workers.length = 0;
    await c?.cleanup();
    await lab?.destroy();
    c = undefined;
    lab = undefined;
  });

  it.skipIf(unavailable !== undefined)(
    `re-offers its runs within the lease bound, and no run executes on two workers at once${unavailable ? ` (skipped: ${unavailable})` : ''}`,
    { timeout: 60_000 },
    async () => {
      const l = (lab = await NetnsLab.create(4)); // n1..n3 in namespaces 0..2, the cut worker in 3
      const indexOf = (id: string) => Number(id.slice(1)) - 1;
      c = await SchedulerCluster.start({ leaseMs: LEASE_MS, heartbeatMs: 300, host: (id) => l.address(indexOf(id)), spawnPrefix: (id) => l.exec(indexOf(id)) });
      const endpoints = c.endpoints.join(',');
      const cut = startWorker(l.exec(3), ['--endpoints', endpoints, '--id', 'cut', '--capacity', '2', '--types', 'slow', '--hold-ms', '30000']);
      workers.push(cut);
      await waitFor('the worker connected', () => cut.of('connected').length > 0, 30_000);

      const at = Date.now() + 300;
      for (const id of ['s1', 's2']) {
        await c.client.createJob(JobSpec.fromPartial({ taskType: 'slow', schedule: { kind: { $case: 'at', at: { atUnixMs: at } } } }), { id });
      }
      await waitFor('both runs executing on the cut worker', () => cut.of('started').length === 2, 15_000);
      // A healthy worker joins only now, so the runs can only reach it by being re-offered.
      const healthy = startWorker([], ['--endpoints', endpoints, '--id', 'healthy', '--capacity', '2', '--types', 'slow', '--hold-ms', '200']);
      workers.push(healthy);
      await waitFor('the healthy worker connected', () => healthy.of('connected').length > 0, 30_000);

      const leader = await c.raft.waitForLeader();
      const cutAt = Date.now();
      await l.block(3, indexOf(leader));

      await waitFor('both runs re-executed by the healthy worker', () => healthy.of('finished').length === 2, 20_000);
      const aborted = cut.of('aborted');
      expect(aborted.map((e) => e.reason)).toEqual(['lease-lost', 'lease-lost']);
      expect(cut.of('finished')).toEqual([]);
      for (const first of cut.of('started')) {
        const again = healthy.of('started').find((e) => e.runId === first.runId)!;
        const abort = aborted.find((e) => e.runId === first.runId)!;
        expect(again.token).toBeGreaterThan(first.token!);
        // Never on two workers at once: the cut worker let go before the run was offered again.
        expect(abort.at).toBeLessThanOrEqual(again.at);
        // Re-offered within the lease bound (plus the lease sweep, a commit and a dispatch).
        expect(again.at - cutAt).toBeLessThan(LEASE_MS + 2_000);
      }
      // The cut worker kept trying the nodes it can reach (followers), not only the silent leader.
      expect(cut.of('disconnected').length).toBeGreaterThan(0);

      await l.unblock(3, indexOf(leader));
      for (const id of ['s1', 's2']) {
        const runs = await waitFor(`job ${id} succeeded`, async () => {
          const r = (await c!.client.listRuns({ jobId: id })).items;
          return r.length === 1 && r[0]!.state === RunState.RUN_STATE_SUCCEEDED ? r : undefined;
        }, 10_000);
        expect(runs[0]!.attempt).toBe(2);
      }
    },
  );
});
