// ProposeStream against a real 3-node cluster of `herald server` processes (KV state machine):
// every proposal on the stream is its own log entry, committed and applied on every replica,
// whether the stream goes to the leader or to a follower (which forwards to the leader); a
// leader killed under load fails what was in flight with OUTCOME_UNKNOWN, never silently.
import { afterEach, describe, expect, it } from 'vitest';
import { decodeKvResult, encodeKvCommand } from '../../src/raft/kv/kv-command.js';
import { isHeraldError } from '../../src/herald-error.js';
import { raftClient } from '../../src/server/node/create-node.js';
import { ProposeStreamClient } from '../../src/server/peer/propose-stream-client.js';
import { TestCluster } from './helpers/cluster.js';

let cluster: TestCluster | undefined;
const closers: Array<() => void> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) c();
  await cluster?.cleanup();
  cluster = undefined;
});

function streamTo(id: string): ProposeStreamClient {
  const raw = raftClient(`127.0.0.1:${cluster!.nodes.get(id)!.peerPort}`);
  const c = new ProposeStreamClient(raw, { clusterId: cluster!.clusterId });
  closers.push(() => {
    c.close();
    raw.close();
  });
  return c;
}

const put = (key: string, value: string) => encodeKvCommand({ op: 'put', key, value: Buffer.from(value) });

describe('ProposeStream on a 3-node cluster', () => {
  it('commits each proposal as its own entry, on the leader and through a follower, with fewer messages than proposals', async () => {
    cluster = await TestCluster.create({ size: 3 });
    await cluster.startAll();
    const leader = await cluster.waitForLeader();
    const follower = ['n1', 'n2', 'n3'].find((id) => id !== leader)!;

    const toLeader = streamTo(leader);
    const viaFollower = streamTo(follower);
    const N = 200;
    const [a, b] = await Promise.all([
      Promise.all(Array.from({ length: N }, (_, i) => toLeader.propose(put(`l-${i}`, `L${i}`)))),
      Promise.all(Array.from({ length: N }, (_, i) => viaFollower.propose(put(`f-${i}`, `F${i}`)))),
    ]);
    const indexes = [...a, ...b].map((o) => o.index);
    expect(new Set(indexes).size).toBe(2 * N);
    for (const o of [...a, ...b]) expect(decodeKvResult(o.result).ok).toBe(true);
    expect(toLeader.stats.messagesSent).toBeLessThan(N / 10);
    expect(viaFollower.stats.messagesSent).toBeLessThan(N / 10);

    // Every acknowledged put reads back through the log from any node.
    for (const id of ['n1', 'n2', 'n3']) {
      expect(Buffer.from((await cluster.kv.forward(id, { op: 'get', key: 'l-17' })).value!).toString()).toBe('L17');
      expect(Buffer.from((await cluster.kv.forward(id, { op: 'get', key: `f-${N - 1}` })).value!).toString()).toBe(`F${N - 1}`);
    }
    await toLeader.end();
    await viaFollower.end();
    await cluster.waitConverged();
    await cluster.stopAll();
    const hashes = await Promise.all(['n1', 'n2', 'n3'].map((id) => cluster!.withStateMachine(id, (sm) => sm.stateHash())));
    expect(new Set(hashes).size).toBe(1);
  }, 120_000);

  it('a killed leader fails the proposals in flight on its stream with OUTCOME_UNKNOWN; acknowledged ones survive', async () => {
    cluster = await TestCluster.create({ size: 3 });
    await cluster.startAll();
    const leader = await cluster.waitForLeader();
    const s = streamTo(leader);
    const acked: string[] = [];
    const unknown: string[] = [];
    const others: unknown[] = [];
    let stop = false;
    let n = 0;
    const loop = async () => {
      while (!stop) {
        const key = `k-${n++}`;
        try {
          await s.propose(put(key, key), 3000);
          acked.push(key);
        } catch (e) {
          if (isHeraldError(e, 'OUTCOME_UNKNOWN')) unknown.push(key);
          else others.push(e);
          return;
        }
      }
    };
    const loops = Array.from({ length: 16 }, () => loop());
    while (acked.length < 300) await new Promise((r) => setTimeout(r, 10));
    await cluster.kill(leader);
    stop = true;
    await Promise.all(loops);
    expect(others).toEqual([]);
    expect(unknown.length).toBeGreaterThan(0);

    const survivors = ['n1', 'n2', 'n3'].filter((id) => id !== leader);
    const next = await cluster.waitForLeader(15_000, survivors);
    for (const key of [acked[0]!, acked[acked.length - 1]!]) {
      const r = await cluster.kv.forward(next, { op: 'get', key });
      expect(r.ok).toBe(true);
      expect(Buffer.from(r.value!).toString()).toBe(key);
    }
  }, 120_000);
});
