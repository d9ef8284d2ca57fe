// A proposal given as a function (ProposalData) is encoded when it is appended — on the leader by
// its driver, on a follower before it is forwarded — and what it returned then is what applies.
import { afterEach, describe, expect, it } from 'vitest';
import { decodeKvResult, encodeKvCommand } from '../../src/raft/kv/kv-command.js';
import { waitFor } from './helpers/cluster.js';
import { startInProcessKv, type InProcessKv } from './helpers/in-process-kv.js';

let kv: InProcessKv | undefined;
afterEach(async () => {
  await kv?.stop();
  kv = undefined;
});

describe('proposal data', () => {
  it('encodes a function proposal at append, on the leader and through a follower', async () => {
    kv = await startInProcessKv('proposal-data');
    const nodes = kv.nodes;
    const leader = await waitFor('a leader', () => nodes.find((n) => n.driver.isLeader()));
    const follower = nodes.find((n) => n !== leader)!;
    let stamp = 0;
    const calls: string[] = [];
    // The value is taken when the function is called: what the "stamp" is then, not when proposed.
    const lazy = (key: string) => () => {
      calls.push(key);
      return encodeKvCommand({ op: 'put', key, value: Buffer.from(String(stamp)) });
    };
    const onLeader = leader.propose(lazy('a'), { forward: false, timeoutMs: 10_000 });
    stamp = 7;
    await onLeader;
    await follower.propose(lazy('b'), { timeoutMs: 10_000 });
    expect(calls).toEqual(['a', 'b']);
    const read = async (key: string) => decodeKvResult((await leader.propose(encodeKvCommand({ op: 'get', key }), { forward: false, timeoutMs: 10_000 })).result).value;
    // 'a' was appended in the same turn it was proposed, before the stamp moved.
    expect(Buffer.from((await read('a'))!).toString()).toBe('0');
    expect(Buffer.from((await read('b'))!).toString()).toBe('7');
  }, 60_000);
});
