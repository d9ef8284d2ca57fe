// An I/O error in one follower's state machine store, in real `herald server` processes (issue 26
// item 2): the node must not turn it into a result (a 'rejected' entry the others applied) but
// stop — log it, exit 1 for its supervisor — and, restarted, apply again from the last applied
// index its store holds, so that every replica ends with the same state. The fault comes from
// chaos/preload/node-faults.mjs (armIoError), which makes the nth read or batch write of the
// node's <data-dir>/sm store fail as LevelDB reports an I/O error.
//
// Followers evaluate every entry here (--no-replicate-effects): a follower writing the leader's
// effects reads nothing, and a read that fails midway through an entry is exactly the failure an
// apply once answered with 'rejected' on that replica alone.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ClusterProcesses } from '../../chaos/orchestrator/cluster-processes.js';
import { liveManaged } from '../../chaos/orchestrator/managed-process.js';
import { collectNodeStates } from '../../chaos/orchestrator/state-hash.js';
import { checkConvergence } from '../../chaos/checkers/convergence-checker.js';
import { sleep, waitFor } from '../../chaos/orchestrator/free-port.js';
import { HeraldClient, Worker, every, jobSpec } from '../../src/client/index.js';
import { EXIT_SERVER } from '../../src/cli/commands/server.js';
import type { ExitInfo } from '../../chaos/orchestrator/managed-process.js';

const TASK = 'io';

function jobs(prefix: string, n: number) {
  return Array.from({ length: n }, (_, i) => ({ id: `${prefix}-${i}`, spec: jobSpec({ taskType: TASK, schedule: every('1s') }) }));
}

async function exitWithin(p: Promise<ExitInfo>, ms: number, what: string): Promise<ExitInfo> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not exit within ${ms} ms`)), ms)));
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describe('an I/O error in a follower\'s state machine store (real processes)', () => {
  let root: string | undefined;
  let cluster: ClusterProcesses | undefined;
  let client: HeraldClient | undefined;
  let worker: Worker | undefined;

  afterAll(async () => {
    await worker?.shutdown({ graceMs: 500 }).catch(() => undefined);
    client?.close();
    await cluster?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('stops that node (exit 1); restarted, it applies again and every replica ends with the same state', { timeout: 120_000 }, async () => {
    root = await mkdtemp(join(tmpdir(), 'herald-io-error-'));
    const c = (cluster = await ClusterProcesses.create({
      nodes: 3,
      root,
      clusterId: 'io-error-test',
      stateMachine: 'scheduler',
      seed: 26,
      tickMs: 50,
      electionTicks: 10,
      extraArgs: ['--no-replicate-effects', '--lease-ms', '3000', '--heartbeat-interval-ms', '300', '--log-level', 'warn'],
    }));
    await c.startAll();
    const { leader } = await c.waitLeader(20_000);
    const [readVictim, writeVictim] = c.ids.filter((id) => id !== leader) as [string, string];
    client = new HeraldClient({ endpoints: c.clientEndpoints(), defaultDeadlineMs: 20_000 });
    let settled = 0;
    worker = new Worker({ endpoints: c.clientEndpoints(), concurrency: 8, handlers: { [TASK]: async () => ({ ok: true }) } });
    worker.on('settled', (s) => void (s.accepted && settled++));
    worker.start();
    await worker.waitUntilConnected();

    // Jobs running: fires, claims and finishes apply on every node all along.
    const created = await client.createJobs(jobs('steady', 20));
    expect(created.filter((r) => r.error)).toEqual([]);
    await waitFor('runs finishing', () => settled >= 20 || undefined, 20_000);

    // 1. A read of the first follower fails while it applies the next entries (a bulk create
    //    reads its idempotency keys and jobs from inside the entry's apply).
    const victim1 = c.node(readVictim);
    victim1.control.armIoError({ id: 'read-1', op: 'read', nth: 1 });
    await sleep(100); // the preload reads its control file every 25 ms
    const more = await client.createJobs(jobs('more', 10));
    expect(more.filter((r) => r.error)).toEqual([]);
    const exit1 = await exitWithin(victim1.process.exited(), 15_000, `node ${readVictim}`);
    expect(exit1).toEqual({ code: EXIT_SERVER.failed, signal: null });
    expect(victim1.process.tail).toContain('chaos: injected I/O error (read)');
    expect(victim1.process.tail).toContain('herald server: fatal: IO error: chaos: injected read failure');
    victim1.control.armIoError(undefined);
    await c.start(readVictim); // as a supervisor would

    // 2. A batch write of the other follower fails, jobs still running.
    const victim2 = c.node(writeVictim);
    victim2.control.armIoError({ id: 'write-1', op: 'write', nth: 3 });
    const exit2 = await exitWithin(victim2.process.exited(), 15_000, `node ${writeVictim}`);
    expect(exit2).toEqual({ code: EXIT_SERVER.failed, signal: null });
    expect(victim2.process.tail).toContain('herald server: fatal: IO error: chaos: injected write failure');
    victim2.control.armIoError(undefined);
    await c.start(writeVictim);
    const before = settled;
    await waitFor('runs finishing after both restarts', () => settled >= before + 20 || undefined, 20_000);

    // Quiet: no more fires (pause every job), the worker drains and leaves.
    for (const { id } of [...jobs('steady', 20), ...jobs('more', 10)]) await client.pauseJob(id);
    await worker.shutdown({ graceMs: 3_000 });
    worker = undefined;

    const states = await collectNodeStates(c, root);
    const convergence = checkConvergence(states, 3);
    // Same applied index and same hash over every key of each store: no entry was rejected on
    // one node that the others applied, and nothing of a failed apply was left behind.
    expect(convergence.problems).toEqual([]);
    expect(states.every((s) => s.appliedIndex > 0)).toBe(true);
    expect(victim1.process.starts).toBe(2);
    expect(victim2.process.starts).toBe(2);

    await c.close();
    expect(liveManaged()).toEqual([]);
  });
});
