import { ClassicLevel } from 'classic-level';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { entryKey } from '../../src/raft/storage/storage-codec.js';
import { TestCluster, waitFor } from './helpers/cluster.js';
import { PutLoad } from './helpers/put-load.js';

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.cleanup();
  cluster = undefined;
});

describe('herald server: graceful shutdown and refusing bad data', () => {
  it('SIGTERM on the leader under load hands leadership over first: no failed proposal, clean exit', async () => {
    cluster = await TestCluster.create({ size: 3 });
    await cluster.startAll();
    const leader = await cluster.waitForLeader();
    const followers = ['n1', 'n2', 'n3'].filter((id) => id !== leader);
    // Clients talk to the followers (which forward), so none of them is talking to the node that exits.
    const load = new PutLoad(cluster.kv, () => followers, { concurrency: 32, prefix: 'term' }).start();
    await waitFor('200 acknowledged puts', () => load.acked.size >= 200 || undefined, 20_000);

    const exit = await cluster.kill(leader, 'SIGTERM');
    expect(exit.code).toBe(0);
    expect(cluster.nodes.get(leader)!.stderr).toContain('handed leadership over before shutdown');
    const next = await cluster.waitForLeader(10_000, followers);
    expect(followers).toContain(next);

    const before = load.acked.size;
    await waitFor('puts under the new leader', () => load.acked.size >= before + 200 || undefined, 20_000);
    await load.stop();
    expect(load.failures.map((f) => f.error)).toEqual([]);
  }, 120_000);

  it('refuses to start on another cluster id, and on a corrupted log, with a clear message', async () => {
    cluster = await TestCluster.create({ size: 1 });
    await cluster.start('n1');
    await cluster.waitForLeader();
    for (let i = 0; i < 10; i++) await cluster.kv.forward('n1', { op: 'put', key: `k${i}`, value: Buffer.from('v') });
    expect((await cluster.kill('n1', 'SIGTERM')).code).toBe(0);

    // Another cluster's id.
    await expect(cluster.start('n1', ['--cluster-id', 'some-other-cluster'])).rejects.toThrow(/exited \(4\)/);
    expect(cluster.nodes.get('n1')!.stderr).toMatch(/refusing to start: .*belongs to cluster c-[0-9a-f]+, not some-other-cluster/);

    // A flipped byte in a log entry.
    const db = new ClassicLevel<Buffer, Buffer>(join(cluster.nodes.get('n1')!.dataDir, 'raft'), { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    const v = (await db.get(entryKey(5)))!;
    v[v.length - 1] ^= 0x01;
    await db.put(entryKey(5), v);
    await db.close();
    await expect(cluster.start('n1')).rejects.toThrow(/exited \(3\)/);
    expect(cluster.nodes.get('n1')!.stderr).toMatch(/refusing to start: corrupt Raft storage: entry 5: entry checksum mismatch/);
  }, 120_000);
});
