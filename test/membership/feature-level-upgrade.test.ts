// A rolling upgrade's failure case on real `herald server` processes: n3 joins a cluster already at
// feature level ≥ 2 running an older build (`--unsafe-feature-level 1`, which reports and applies
// level 1 only). Learners do not block the raise, so its log holds the setFeatureLevel entry:
// it halts apply there and stays up NOT_SERVING, saying which level it needs; promoting it is
// refused, naming it, both levels and what to do. Restarted on the current build (same data dir)
// it resumes from where it stopped, catches up, is promoted, and converges with the others.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SUPPORTED_FEATURE_LEVEL } from '../../src/fsm/commands/feature-levels.js';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { isHeraldError } from '../../src/herald-error.js';
import { SchedulerCluster } from '../dispatch/helpers/process-cluster.js';
import { waitFor } from '../raft-runtime/helpers/cluster.js';
import { runCli } from '../cli/helpers/run-cli.js';

describe('a learner of an older build halts at a newer entry and resumes once upgraded', () => {
  let c: SchedulerCluster | undefined;
  const optIn = process.env.HERALD_UNSAFE_TEST_SWITCHES;
  afterAll(async () => {
    await c?.cleanup();
    if (optIn === undefined) delete process.env.HERALD_UNSAFE_TEST_SWITCHES;
    else process.env.HERALD_UNSAFE_TEST_SWITCHES = optIn;
  });

  it('the "older build" switch is refused without the test-only opt-in', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'herald-unsafe-level-'));
    try {
      const r = await runCli(['server', '--id', 'n1', '--peers', 'n1=127.0.0.1:1', '--data-dir', join(dir, 'n1'), '--insecure', '--unsafe-feature-level', '1'], { env: { HERALD_UNSAFE_TEST_SWITCHES: '' } });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/--unsafe-feature-level: a test-only switch .*refusing to start/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('halts, is refused promotion by name, resumes after a restart on the new build, converges', { timeout: 120_000 }, async () => {
    const L = SUPPORTED_FEATURE_LEVEL; // what this build raises the cluster to (≥ 2)
    expect(L).toBeGreaterThanOrEqual(2);
    c = await SchedulerCluster.start({ size: 2 });
    const raft = c.raft;
    const client = c.client;
    const addr = (id: string) => `127.0.0.1:${raft.nodes.get(id)!.clientPort}`;
    await waitFor(`cluster feature level ${L}`, async () => ((await client.status()).featureLevel === L ? true : undefined), 20_000, 100);
    await client.createJob(JobSpec.fromPartial({ taskType: 'test', schedule: { kind: { $case: 'every', every: { intervalMs: 1000, anchorUnixMs: 0 } } } }), { id: 'up-0' });

    // n3, an "older build", joins and is added as a learner by the operator.
    const n3 = await raft.addJoiner('n3', [addr('n1')]);
    process.env.HERALD_UNSAFE_TEST_SWITCHES = '1';
    await raft.start('n3', ['--unsafe-feature-level', '1']);
    const added = await runCli(['cluster', 'add', 'n3', '--peer-addr', `127.0.0.1:${n3.peerPort}`, '--client-addr', addr('n3'), '--endpoints', addr('n1'), '--json']);
    expect(added.stderr).toBe('');
    expect(added.code).toBe(0);

    // It receives the log and stops at the raise: up, not applying, saying why.
    await waitFor('n3 halts at the raise entry', () => (/fatal: entry \d+ needs feature level [2-9]\d*; this node supports 1: upgrade this node/.test(n3.stderr) ? true : undefined), 30_000, 100);
    expect(raft.isRunning('n3')).toBe(true);
    const halted = await raft.status('n3');
    const leaderStatus = await client.status();
    expect(halted.appliedIndex).toBeLessThan(leaderStatus.commitIndex);
    expect(leaderStatus.members.find((m) => m.id === 'n3')?.supportedFeatureLevel).toBe(1);

    // Promoting it is refused, by name, with both levels and the remedy (FAILED_PRECONDITION: exit 4).
    const refused = await runCli(['cluster', 'promote', 'n3', '--endpoints', addr('n2'), '--json']);
    expect(refused.code).toBe(4);
    const err = (JSON.parse(refused.stderr) as { error: { code: string; heraldCode: string; message: string } }).error;
    expect(err).toMatchObject({ code: 'FAILED_PRECONDITION', heraldCode: 'LEARNER_FEATURE_LEVEL' });
    expect(err.message).toMatch(new RegExp(`^the learner n3 supports feature level 1, below the cluster's level ${L}: .*upgrade n3 to a build that supports level ${L}`));
    expect((await client.status()).members.find((m) => m.id === 'n3')?.memberRole).toBe(2);

    // The upgrade: the same data dir, the current build. It resumes, catches up and is promoted.
    await raft.kill('n3', 'SIGTERM');
    await raft.start('n3');
    await waitFor('n3 promoted', async () => {
      try {
        await client.promoteMember('n3');
        return true;
      } catch (e) {
        if (isHeraldError(e, 'LEARNER_BEHIND') || isHeraldError(e, 'LEARNER_FEATURE_LEVEL') || isHeraldError(e, 'CONF_CHANGE_PENDING')) return undefined;
        throw e;
      }
    }, 30_000, 200);
    const voters = (await client.status()).members.filter((m) => m.memberRole === 1).map((m) => m.id).sort();
    expect(voters).toEqual(['n1', 'n2', 'n3']);
    // Promotion needs n3's log caught up, not applied: it reaches the raise entry's level as it applies.
    await waitFor(`n3 applies feature level ${L}`, async () => ((await raft.status('n3')).featureLevel === L ? true : undefined), 20_000, 100);
    await raft.waitConverged(20_000);

    // Converged: the same state on every replica (killed together once quiet — a graceful stop
    // would hand leadership over, a new term's entry racing the stops — and hashed offline).
    await client.pauseJob('up-0', 'quiesce');
    await raft.waitConverged(20_000);
    await raft.stopAll('SIGKILL');
    const states = await Promise.all(['n1', 'n2', 'n3'].map((id) => c!.withFsm(id, async (f) => ({ applied: await f.appliedIndex(), level: f.appliedFeatureLevel, hash: await f.stateHash(), job: (await f.getJob('up-0'))?.id }))));
    expect(new Set(states.map((s) => s.applied)).size, JSON.stringify(states)).toBe(1);
    expect(new Set(states.map((s) => s.hash)).size, JSON.stringify(states)).toBe(1);
    expect(states.map((s) => [s.level, s.job])).toEqual([
      [L, 'up-0'],
      [L, 'up-0'],
      [L, 'up-0'],
    ]);
  });
});
