// A follower that comes back with an empty log (data dir wiped, or a disk that lost synced
// writes) although the leader's progress says it matched far ahead. The leader must believe its
// rejection and backtrack below the old match — with entries while the log is whole, with a
// snapshot once it is compacted — instead of probing at the old match forever.
import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../../src/raft/core/memory-storage.js';
import { TestCluster } from './harness.js';

function wipe(c: TestCluster, id: string): void {
  const fresh = c.makeNode(id, new MemoryStorage(c.ids), c.overrides, 200);
  c.nodes.set(id, fresh);
  c.queue = c.queue.filter((m) => m.to !== id);
}

describe('a wiped follower', () => {
  it('is caught up with entries when the leader still holds the whole log', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    for (let i = 0; i < 6; i++) c.propose('a', `x${i}`);
    c.stabilize();
    const before = c.node('a').raft.status().progress['c']!.match;
    expect(before).toBeGreaterThan(5);
    wipe(c, 'c');
    c.propose('a', 'after');
    c.tickAll(3);
    c.stabilize();
    expect(c.appliedData('c')).toEqual(['x0', 'x1', 'x2', 'x3', 'x4', 'x5', 'after']);
    expect(c.node('a').raft.status().progress['c']).toMatchObject({ state: 'replicate', match: before + 1 });
  });

  it('gets a snapshot when the log was compacted past its (now empty) log', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    for (let i = 0; i < 6; i++) c.propose('a', `x${i}`);
    c.stabilize();
    const a = c.node('a');
    const applied = a.applied[a.applied.length - 1]!.index;
    a.storage.createSnapshot(applied);
    a.storage.compact(applied);
    wipe(c, 'c');
    c.propose('a', 'after');
    c.tickAll(3);
    c.stabilize();
    expect(c.delivered.filter((m) => m.type === 'snap' && m.to === 'c')).toHaveLength(1);
    expect(c.node('c').storage.snapshot().index).toBe(applied);
    expect(c.appliedData('c')).toEqual(['after']);
  });

  it('does not count toward a commit for entries it lost', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    c.propose('a', 'x0');
    c.stabilize();
    wipe(c, 'c');
    c.isolate('b');
    c.propose('a', 'x1');
    c.tickAll(2);
    c.stabilize();
    // Only c answers, and it had to be sent the whole log first: x1 commits with a and c.
    expect(c.node('a').raft.status().progress['c']!.match).toBe(c.node('a').raft.status().commit);
    expect(c.appliedData('c')).toEqual(['x0', 'x1']);
  });
});
