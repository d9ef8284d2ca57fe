// The scheduler's sizing flags on `herald server`: a value the state machine would refuse (a batch
// larger than one command may carry) stops the node at start with a message, rather than letting
// every fire or claim command of that size fail later.
import { afterEach, describe, expect, it } from 'vitest';
import { TestCluster } from '../raft-runtime/helpers/cluster.js';

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.cleanup();
  cluster = undefined;
});

describe('herald server scheduler flags', () => {
  it('refuses batch sizes above what one command may carry, and non-positive ones; takes a valid one', async () => {
    cluster = await TestCluster.create({ size: 1, extraArgs: ['--state-machine', 'scheduler', '--log-level', 'warn'] });
    await expect(cluster.start('n1', ['--fire-batch', '100001'])).rejects.toThrow(/exited \(2\)/);
    expect(cluster.nodes.get('n1')!.stderr).toContain('--fire-batch must be at most 100000');
    await expect(cluster.start('n1', ['--claim-batch', '0'])).rejects.toThrow(/exited \(2\)/);
    expect(cluster.nodes.get('n1')!.stderr).toContain('--claim-batch must be a positive integer (got "0")');
    await cluster.start('n1', ['--fire-batch', '2000']);
    await cluster.waitForLeader();
  }, 60_000);

  it('takes --dispatch-lead-ms 0 (off), refuses a lead above 1000 ms or below 0', async () => {
    cluster = await TestCluster.create({ size: 1, extraArgs: ['--state-machine', 'scheduler', '--log-level', 'warn'] });
    await expect(cluster.start('n1', ['--dispatch-lead-ms', '1001'])).rejects.toThrow(/exited \(2\)/);
    expect(cluster.nodes.get('n1')!.stderr).toContain('--dispatch-lead-ms must be at most 1000 (got 1001)');
    await expect(cluster.start('n1', ['--dispatch-lead-ms', '-5'])).rejects.toThrow(/exited \(2\)/);
    expect(cluster.nodes.get('n1')!.stderr).toContain('--dispatch-lead-ms must be a non-negative integer (got "-5")');
    await cluster.start('n1', ['--dispatch-lead-ms', '0']);
    await cluster.waitForLeader();
  }, 60_000);
});
