import { describe, expect, it } from 'vitest';
import { TestCluster } from './harness.js';

describe('leader election', () => {
  it('a campaigning node of a fresh 3-node cluster wins term 1 and commits its no-op everywhere', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    expect(c.leaders()).toEqual(['a']);
    for (const id of c.ids) {
      const st = c.node(id).raft.status();
      expect(st.term).toBe(1);
      expect(st.leader).toBe('a');
      expect(st.commit).toBe(1);
    }
    expect(c.node('b').applied.map((e) => [e.index, e.term, e.data.length])).toEqual([[1, 1, 0]]);
  });

  it('election timeouts alone elect exactly one leader', () => {
    const c = new TestCluster(5);
    c.tickAll(25);
    expect(c.leaders()).toHaveLength(1);
  });

  it('a candidate with a stale log is refused (§5.4.1)', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    c.isolate('c');
    c.propose('a', 'x');
    c.heal();
    // c missed entry 2; b refuses it, a (the leader) refuses it: c cannot win.
    c.node('c').raft.campaign();
    c.stabilize();
    expect(c.node('c').raft.status().role).not.toBe('leader');
    expect(c.node('b').raft.status().vote).not.toBe('c');
  });

  it('a node grants at most one vote per term', () => {
    const c = new TestCluster(3);
    c.node('a').raft.campaign();
    c.node('b').raft.campaign(); // both at term 1, each voted for itself
    c.stabilize();
    const leaders = c.leaders();
    expect(leaders.length).toBeLessThanOrEqual(1);
    expect(c.node('c').raft.status().vote).toMatch(/^[ab]$/);
  });
});
