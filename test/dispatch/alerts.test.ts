// Alerts end to end on a real 3-node cluster (issue 31): pause_after_dead pauses a failing job
// after N consecutive DEAD runs; an on_dead alert reaches a webhook (a local HTTP server here,
// served by `herald worker --webhook`) exactly once per DEAD run, signed, with the alert run's id
// as Idempotency-Key, retried after a 5xx — across a kill -9 of the leader.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobState, JobSpec } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { sleep, waitFor } from '../raft-runtime/helpers/cluster.js';
import { BIN } from '../cli/helpers/run-cli.js';
import { allRuns, SchedulerCluster } from './helpers/process-cluster.js';

const SECRET = 'test-secret';

interface Hit {
  key: string;
  signature: string;
  expected: string;
  body: { event: string; run_id: string; job_id: string };
  status: number;
}

/** A webhook receiver: the first POST of each Idempotency-Key gets a 503 (a retry must follow), later ones 200. */
function startReceiver(): Promise<{ server: Server; url: string; hits: Hit[] }> {
  const hits: Hit[] = [];
  const seen = new Set<string>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const key = String(req.headers['idempotency-key'] ?? '');
      const status = seen.has(key) ? 200 : 503;
      seen.add(key);
      hits.push({
        key,
        signature: String(req.headers['x-herald-signature'] ?? ''),
        expected: `sha256=${createHmac('sha256', SECRET).update(raw).digest('hex')}`,
        body: JSON.parse(raw.toString('utf8')) as Hit['body'],
        status,
      });
      res.writeHead(status).end();
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, hits })));
}

function failingJob(p: Record<string, unknown>): JobSpec {
  return JobSpec.fromPartial({
    taskType: 'test',
    payload: Buffer.from(JSON.stringify({ fail: true })),
    schedule: { kind: { $case: 'every', every: { intervalMs: 1000, anchorUnixMs: 0 } } },
    retry: { maxAttempts: 1 },
    ...p,
  });
}

describe('alerts (processes)', () => {
  let c: SchedulerCluster | undefined;
  let hook: ChildProcess | undefined;
  let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;

  beforeAll(async () => {
    c = await SchedulerCluster.start({ leaseMs: 3000, heartbeatMs: 300 });
    const w = c.startWorker('failer', { capacity: 8 });
    await c.waitWorkersConnected([w]);
  }, 60_000);

  afterAll(async () => {
    hook?.kill('SIGKILL');
    receiver?.server.close();
    await c?.cleanup();
  });

  it('pause_after_dead: 3 consecutive DEAD runs pause the job with a note; nothing fires after', { timeout: 30_000 }, async () => {
    const client = c!.client;
    await client.createJob(failingJob({ pauseAfterDead: 3 }), { id: 'pauser' });
    const job = await waitFor('job paused', async () => {
      const j = await client.getJob('pauser');
      return j.state === JobState.JOB_STATE_PAUSED ? j : undefined;
    }, 20_000, 100);
    // The third DEAD run paused it (a run already fired then may still die: the count goes on).
    expect(job.pauseNote).toMatch(/^paused after 3 consecutive DEAD runs \(pause_after_dead: 3; last: pauser@\d+\)/);
    expect(job.consecutiveDeadRuns).toBeGreaterThanOrEqual(3);
    await sleep(2_000);
    const runs = (await client.listRuns({ jobId: 'pauser', pageSize: 100 })).items;
    expect(runs.filter((r) => r.state === RunState.RUN_STATE_DEAD).length).toBeGreaterThanOrEqual(3);
    // Nothing fired after the pause.
    expect(runs.filter((r) => r.createdUnixMs > job.updatedUnixMs).map((r) => r.id)).toEqual([]);
  });

  it('an on_dead alert reaches the webhook exactly once per DEAD run, across a kill -9 of the leader', { timeout: 30_000 }, async () => {
    const cl = c!;
    receiver = await startReceiver();
    hook = spawn(process.execPath, [BIN, 'worker', '--task-type', 'alerts', '--webhook', receiver.url, '--webhook-secret', SECRET, '--endpoints', cl.endpoints.join(','), '--json'], { stdio: ['ignore', 'ignore', 'ignore'] });
    await cl.client.createJob(failingJob({ alerts: { onDead: 'alerts' } }), { id: 'hooked' });
    await sleep(3_500);
    const leader = await cl.raft.waitForLeader();
    await cl.raft.kill(leader, 'SIGKILL');
    await sleep(3_500);
    await waitFor('job paused', () => cl.client.pauseJob('hooked', 'test done').then(() => true, () => undefined), 10_000, 200);
    // Every DEAD run's alert delivered (a 200), including those raised around the kill.
    const delivered = () => new Set(receiver!.hits.filter((h) => h.status === 200).map((h) => h.body.run_id));
    const dead = await waitFor('every DEAD run alerted', async () => {
      const runs = (await cl.client.listRuns({ jobId: 'hooked', state: 'dead', pageSize: 1000 })).items;
      const d = delivered();
      return runs.length > 0 && runs.every((r) => d.has(r.id)) ? runs : undefined;
    }, 12_000, 200);
    hook.kill('SIGTERM');

    const { deadIds, alerts } = await cl.stopAndInspect(async (fsm) => ({
      deadIds: (await allRuns(fsm, 'hooked')).filter((r) => r.state === RunState.RUN_STATE_DEAD).map((r) => r.id),
      alerts: await allRuns(fsm, 'herald:alerts:alerts'),
    }));
    expect(deadIds.length).toBeGreaterThanOrEqual(dead.length);
    expect(deadIds.length).toBeGreaterThanOrEqual(4);
    // One alert run per DEAD run: no DEAD run unalerted, none alerted twice.
    const alerted = alerts.map((a) => (JSON.parse(Buffer.from(a.payload).toString('utf8')) as { run_id: string }).run_id).sort();
    expect(alerted).toEqual([...deadIds].sort());
    // Each alert was POSTed until it got a 200 (the first try got a 503), and got exactly one 200.
    const hits = receiver.hits;
    for (const a of alerts.filter((x) => deadIds.includes(JSON.parse(Buffer.from(x.payload).toString()).run_id))) {
      const mine = hits.filter((h) => h.key === a.id);
      expect(mine.filter((h) => h.status === 200).length, a.id).toBe(1);
      expect(mine.filter((h) => h.status === 503).length, a.id).toBe(1);
    }
    expect(hits.every((h) => h.signature === h.expected && h.body.event === 'dead' && h.body.job_id === 'hooked')).toBe(true);
    console.log(JSON.stringify({ test: 'alerts-webhook', deadRuns: deadIds.length, posts: hits.length }));
  });
});
