// Issue 28's acceptance on real `herald server` processes: 3 nodes firing 1 s jobs with a worker;
// n4 joins (`herald server --join`), is added as a learner with `herald cluster add`, promoted;
// n1 is removed while it leads; n5 joins and is promoted; n3's disk dies and it comes back as a new
// incarnation (removed, re-joined, added, promoted); the cluster shrinks back to 3 voters. Every
// slot fires exactly once throughout, `cluster status` shows the voters, and an SDK client given
// only n1's endpoint and one survivor still works.
import { rm } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { HeraldClient } from '../../src/client/herald-client.js';
import { isHeraldError } from '../../src/herald-error.js';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { sleep, waitFor } from '../raft-runtime/helpers/cluster.js';
import { allRuns, SchedulerCluster } from '../dispatch/helpers/process-cluster.js';
import { runCli } from '../cli/helpers/run-cli.js';

const JOBS = 2;

describe('membership changes on real processes', () => {
  let c: SchedulerCluster | undefined;
  afterAll(async () => c?.cleanup());

  it('add, promote, remove the leader, replace a wiped node, grow and shrink: every slot fires once', { timeout: 120_000 }, async () => {
    const t0 = Date.now();
    c = await SchedulerCluster.start({ leaseMs: 4000, heartbeatMs: 300 });
    const raft = c.raft;
    const addr = (id: string) => `127.0.0.1:${raft.nodes.get(id)!.clientPort}`;
    const peer = (id: string) => `127.0.0.1:${raft.nodes.get(id)!.peerPort}`;
    const client = c.client;
    const worker = c.startWorker('mw', { capacity: 8, sleepMs: 50 });
    await c.waitWorkersConnected([worker]);
    for (let i = 0; i < JOBS; i++) {
      await client.createJob(JobSpec.fromPartial({ taskType: 'test', schedule: { kind: { $case: 'every', every: { intervalMs: 1000, anchorUnixMs: 0 } } } }), { id: `mc-${i}` });
    }
    const voters = async () => (await client.status()).members.filter((m) => m.memberRole === 1).map((m) => m.id).sort();
    const promote = (id: string) =>
      waitFor(`${id} promoted`, async () => {
        try {
          await client.promoteMember(id);
          return true;
        } catch (e) {
          if (isHeraldError(e, 'LEARNER_BEHIND') || isHeraldError(e, 'CONF_CHANGE_PENDING')) return undefined;
          throw e;
        }
      }, 20_000, 200);
    const join = async (id: string) => {
      const n = raft.nodes.get(id) ?? (await raft.addJoiner(id, [addr('n2')]));
      n.join = addr('n2');
      try {
        await raft.start(id);
      } catch (e) {
        // Which node went away, and why (the join endpoint n2 is never stopped on purpose).
        const n2 = raft.nodes.get('n2')!;
        throw new Error(`${String(e)}\nn2 running: ${raft.isRunning('n2')} exit ${JSON.stringify(await Promise.race([n2.exit, sleep(10).then(() => 'running')]))}\n${n2.stderr.slice(-4000)}`);
      }
      return n;
    };

    // n4 joins and is added with the CLI (which reads its incarnation from it).
    await join('n4');
    const added = await runCli(['cluster', 'add', 'n4', '--peer-addr', peer('n4'), '--client-addr', addr('n4'), '--endpoints', addr('n2'), '--json']);
    expect(added.stderr).toBe('');
    expect(added.code).toBe(0);
    const inc4 = (await raft.status('n4')).incarnation;
    expect(JSON.parse(added.stdout)).toMatchObject({ added: 'n4', incarnation: inc4 });
    await promote('n4');
    expect(await voters()).toEqual(['n1', 'n2', 'n3', 'n4']);

    // n1 is removed while it leads: it hands over once the removal commits.
    await raft.transfer('n2', 'n1');
    await raft.waitForLeader(15_000, ['n1', 'n2', 'n3', 'n4']);
    expect((await raft.status('n1')).role).toBe(4);
    await client.removeMember('n1');
    await raft.kill('n1', 'SIGKILL');

    // n5 joins; then n3's disk dies: it comes back empty, a new incarnation, and is replaced.
    await join('n5');
    await client.addMember({ id: 'n5', peerAddress: peer('n5'), clientAddress: addr('n5'), incarnation: (await raft.status('n5')).incarnation });
    await promote('n5');
    const oldInc3 = (await client.status()).members.find((m) => m.id === 'n3')!.incarnation;
    await raft.kill('n3', 'SIGKILL');
    await rm(raft.nodes.get('n3')!.dataDir, { recursive: true, force: true });
    await client.removeMember('n3');
    await join('n3');
    const inc3 = (await raft.status('n3')).incarnation;
    expect(inc3).not.toBe(oldInc3);
    await client.addMember({ id: 'n3', peerAddress: peer('n3'), clientAddress: addr('n3'), incarnation: inc3 });
    await promote('n3');
    expect(await voters()).toEqual(['n2', 'n3', 'n4', 'n5']);

    // The status command shows the voters and their roles.
    const st = await runCli(['cluster', 'status', '--endpoints', addr('n4'), '--json']);
    const members = (JSON.parse(st.stdout) as { members: Array<{ id: string; member: string; incarnation: string }> }).members;
    expect(members.map((m) => `${m.id}:${m.member}`).sort()).toEqual(['n2:voter', 'n3:voter', 'n4:voter', 'n5:voter']);
    expect(members.find((m) => m.id === 'n3')!.incarnation).toBe(inc3);

    // An SDK client given only n1's endpoint (gone) and one survivor still works, and learns the rest.
    const old = new HeraldClient({ endpoints: [addr('n1'), addr('n2')], defaultDeadlineMs: 10_000 });
    try {
      expect((await old.getJob('mc-0')).id).toBe('mc-0');
      expect((await old.status()).members.map((m) => m.id).sort()).toEqual(['n2', 'n3', 'n4', 'n5']);
    } finally {
      old.close();
    }

    // Shrink back to three voters.
    await client.removeMember('n5');
    await raft.kill('n5', 'SIGKILL');
    expect(await voters()).toEqual(['n2', 'n3', 'n4']);
    const changesDoneAt = Date.now();
    await sleep(1_500);
    worker.signal('SIGTERM');
    await worker.exit;

    const jobs = await c.stopAndInspect(async (fsm) => Promise.all(Array.from({ length: JOBS }, (_, i) => allRuns(fsm, `mc-${i}`))));
    for (const runs of jobs) {
      // One run per slot, consecutive slots, none missed: nothing doubled, nothing lost.
      expect(runs.length).toBeGreaterThanOrEqual(10);
      for (let k = 1; k < runs.length; k++) expect(runs[k]!.slotUnixMs - runs[k - 1]!.slotUnixMs).toBe(1000);
      expect(runs.filter((r) => r.state === RunState.RUN_STATE_MISSED || r.state === RunState.RUN_STATE_SKIPPED).map((r) => r.id)).toEqual([]);
      expect(runs.some((r) => r.slotUnixMs > changesDoneAt - 1000)).toBe(true);
    }
    console.log(JSON.stringify({ test: 'membership-change', seconds: (Date.now() - t0) / 1000, runs: jobs.map((r) => r.length) }));
  });
});
