import { describe, expect, it } from 'vitest';
import type { Message } from '../../src/raft/types.js';
import { TestCluster } from './harness.js';

const ctx = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe('ReadIndex', () => {
  it('the leader answers after a heartbeat round confirms it still leads', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    c.propose('a', 'x');
    c.delivered.length = 0;
    c.node('a').raft.readIndex(ctx('r1'));
    c.stabilize();
    const hbs = c.delivered.filter((m) => m.type === 'heartbeat' && m.context && text(m.context) === 'r1');
    expect(hbs).toHaveLength(2);
    expect(c.node('a').readStates.map((r) => [r.index, text(r.context)])).toEqual([[2, 'r1']]);
  });

  it('a follower forwards the read to the leader and gets the read index back', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    c.propose('a', 'x');
    c.node('b').raft.readIndex(ctx('r2'));
    c.stabilize();
    expect(c.node('b').readStates.map((r) => [r.index, text(r.context)])).toEqual([[2, 'r2']]);
    expect(c.node('a').readStates).toHaveLength(0);
  });

  it('a new leader holds reads until an entry of its own term is committed', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    c.propose('a', 'x');
    c.isolate('a');
    // b wins term 2 but its no-op does not reach c yet.
    const noApps = (m: Message) => m.type !== 'app';
    c.node('b').raft.campaign();
    c.stabilize(noApps);
    expect(c.node('b').raft.status().role).toBe('leader');
    c.node('b').raft.readIndex(ctx('r3'));
    c.stabilize(noApps);
    expect(c.node('b').readStates).toHaveLength(0);
    c.stabilize(); // the no-op commits; the held read is confirmed and answered
    c.tick('b');
    expect(c.node('b').readStates.map((r) => [r.index, text(r.context)])).toEqual([[3, 'r3']]);
  });

  it('a partitioned old leader can never confirm a read (no stale reads)', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    c.isolate('a');
    c.campaign('b');
    c.propose('b', 'new');
    c.node('a').raft.readIndex(ctx('stale?'));
    for (let i = 0; i < 30; i++) c.tick('a');
    expect(c.node('a').readStates).toHaveLength(0);
  });

  it('with read-index-no-confirm the partitioned old leader serves a stale read', () => {
    const c = new TestCluster(3, { mutations: new Set(['read-index-no-confirm']) });
    c.campaign('a');
    c.isolate('a');
    c.campaign('b');
    c.propose('b', 'new');
    c.node('a').raft.readIndex(ctx('stale!'));
    c.stabilize();
    expect(c.node('a').readStates.map((r) => r.index)).toEqual([1]); // b has committed 3
    expect(c.node('b').raft.status().commit).toBe(3);
  });

  it('a follower with no known leader refuses a read at once', () => {
    const c = new TestCluster(3);
    expect(() => c.node('a').raft.readIndex(ctx('x'))).toThrow(/no leader/);
  });
});
