import { describe, expect, it } from 'vitest';
import { TestCluster } from './harness.js';

/** The leader snapshots at its applied index and compacts its log behind it. */
function compactLeader(c: TestCluster, id: string) {
  const n = c.node(id);
  const applied = n.applied[n.applied.length - 1]!.index;
  n.storage.createSnapshot(applied);
  n.storage.compact(applied);
  return applied;
}

describe('snapshots and log compaction', () => {
  it('a follower behind the compacted log gets the snapshot, installs it and then catches up', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    c.isolate('c');
    for (let i = 0; i < 8; i++) c.propose('a', `x${i}`);
    const snapIndex = compactLeader(c, 'a');
    expect(c.node('a').storage.firstIndex()).toBe(snapIndex + 1);
    c.propose('a', 'after');
    c.heal();
    c.tickAll(3);
    const snaps = c.delivered.filter((m) => m.type === 'snap' && m.to === 'c');
    expect(snaps).toHaveLength(1);
    expect(snaps[0]!.snapshot).toMatchObject({ index: snapIndex, term: 1, conf: { voters: ['a', 'b', 'c'] } });
    // The runtime installed it; c then received the entry after it through normal appends.
    expect(c.node('c').storage.snapshot().index).toBe(snapIndex);
    expect(c.node('c').raft.status()).toMatchObject({ commit: snapIndex + 1, applied: snapIndex + 1 });
    expect(c.appliedData('c')).toEqual(['after']);
    expect(c.node('a').raft.status().progress['c']).toMatchObject({ state: 'replicate', match: snapIndex + 1 });
  });

  it('the Ready surfacing a snapshot asks for a sync and carries no committed entries to apply', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    c.isolate('c');
    for (let i = 0; i < 3; i++) c.propose('a', `x${i}`);
    compactLeader(c, 'a');
    c.heal();
    c.tick('a'); // heartbeat -> c answers -> a sends the snapshot
    const snap = c.delivered.find((m) => m.type === 'snap');
    expect(snap).toBeDefined();
    // Replay the snapshot on a fresh copy of c's situation: step it and inspect the Ready.
    const c2 = new TestCluster(3);
    const node = c2.node('c').raft;
    node.step({ ...snap!, to: 'c' });
    const rd = node.ready();
    expect(rd.snapshot).toMatchObject({ index: snap!.snapshot!.index });
    expect(rd.mustSync).toBe(true);
    expect(rd.committedEntries).toHaveLength(0);
    expect(rd.messages).toEqual([expect.objectContaining({ type: 'appResp', index: snap!.snapshot!.index, reject: false })]);
  });

  it('a failed snapshot send (reportSnapshot false) returns the follower to probing and retries', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    c.isolate('c');
    for (let i = 0; i < 3; i++) c.propose('a', `x${i}`);
    compactLeader(c, 'a');
    c.heal();
    // Lose the first snapshot in transit.
    let dropped = false;
    c.node('a').raft.tick();
    c.stabilize((m) => {
      if (m.type === 'snap' && !dropped) return !(dropped = true);
      return true;
    });
    expect(dropped).toBe(true);
    expect(c.node('a').raft.status().progress['c']!.state).toBe('snapshot');
    c.node('a').raft.reportSnapshot('c', false);
    expect(c.node('a').raft.status().progress['c']!.state).toBe('probe');
    c.tickAll(2);
    expect(c.node('c').raft.status().commit).toBe(c.node('a').raft.status().commit);
  });

  it('a restarted node resumes from its snapshot and log', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    for (let i = 0; i < 5; i++) c.propose('a', `x${i}`);
    const snapIndex = compactLeader(c, 'b');
    c.restart('b');
    expect(c.node('b').raft.status()).toMatchObject({ term: 1, applied: snapIndex, commit: snapIndex });
    c.propose('a', 'y');
    expect(c.appliedData('b').slice(-1)).toEqual(['y']);
  });
});
