// Configuration changes in the pure core: learners, promotion, removal (the leader included), the
// one-at-a-time rules, and every quorum (commit, election, check-quorum, ReadIndex) following the
// configuration in force.
import { describe, expect, it } from 'vitest';
import { isHeraldError } from '../../src/herald-error.js';
import type { ConfChange } from '../../src/raft/core/membership.js';
import { MemoryStorage } from '../../src/raft/core/memory-storage.js';
import type { NodeId } from '../../src/raft/types.js';
import { type ConfigOverrides, TestCluster } from './harness.js';

/** Adds a node process with an empty data dir (it knows no configuration) to the harness. */
function join(c: TestCluster, id: NodeId): void {
  c.nodes.set(id, c.makeNode(id, new MemoryStorage({ voters: [] }), c.overrides, 50));
  c.ids.push(id);
}

function change(c: TestCluster, leader: NodeId, cc: ConfChange): number {
  const t = c.node(leader).raft.proposeConfChange(cc);
  c.stabilize();
  return t.index;
}

function cluster(overrides: ConfigOverrides = {}): TestCluster {
  const c = new TestCluster(3, overrides);
  c.campaign('a');
  return c;
}

function expectCode(f: () => unknown, code: string): void {
  let err: unknown;
  try {
    f();
  } catch (e) {
    err = e;
  }
  expect(isHeraldError(err), String(err)).toBe(true);
  expect((err as { code: string }).code).toBe(code);
}

describe('learners', () => {
  it('a learner receives the log but never campaigns and never counts toward the commit quorum', () => {
    const c = cluster();
    c.propose('a', 'x1');
    join(c, 'd');
    change(c, 'a', { kind: 'addLearner', id: 'd' });
    expect(c.appliedData('d')[0]).toBe('x1');
    expect(c.node('d').raft.status()).toMatchObject({ voters: ['a', 'b', 'c'], learners: ['d'] });
    for (let i = 0; i < 100; i++) c.node('d').raft.tick();
    expect(c.node('d').raft.status()).toMatchObject({ term: 1, role: 'follower' });

    // With both voters cut off, the learner's ack does not commit anything.
    c.isolate('b');
    c.isolate('c');
    c.cut.delete('a->b');
    const t = c.propose('a', 'x2');
    expect(c.node('a').raft.status().commit).toBeLessThan(t.index);
    expect(c.node('d').raft.status().lastIndex).toBe(t.index);
  });

  it("a learner's ack does not confirm a ReadIndex and does not keep a leader alive under check-quorum", () => {
    const c = cluster({ checkQuorum: true });
    join(c, 'd');
    change(c, 'a', { kind: 'addLearner', id: 'd' });
    c.isolate('b');
    c.isolate('c');
    c.node('a').raft.readIndex(new Uint8Array([7]));
    c.stabilize();
    expect(c.node('a').readStates).toEqual([]);
    for (let i = 0; i < 25; i++) c.tick('a');
    expect(c.node('a').raft.status().role).toBe('follower');
  });

  it('leadership cannot be transferred to a learner', () => {
    const c = cluster();
    join(c, 'd');
    change(c, 'a', { kind: 'addLearner', id: 'd' });
    expectCode(() => c.node('a').raft.transferLeadership('d'), 'INVALID_ARGUMENT');
  });
});

describe('promote and remove', () => {
  it('a promoted learner counts toward quorum: 4 voters need 3 acks', () => {
    const c = cluster();
    join(c, 'd');
    change(c, 'a', { kind: 'addLearner', id: 'd' });
    change(c, 'a', { kind: 'promote', id: 'd' });
    for (const id of ['a', 'b', 'c', 'd']) expect(c.node(id).raft.status().voters).toEqual(['a', 'b', 'c', 'd']);
    c.isolate('c');
    const one = c.propose('a', 'one-down');
    expect(c.node('a').raft.status().commit).toBe(one.index);
    c.heal();
    c.isolate('b');
    c.isolate('c');
    const two = c.propose('a', 'two-down');
    expect(c.node('a').raft.status().commit).toBeLessThan(two.index);
  });

  it('a promoted learner can be elected', () => {
    const c = cluster();
    join(c, 'd');
    change(c, 'a', { kind: 'addLearner', id: 'd' });
    change(c, 'a', { kind: 'promote', id: 'd' });
    c.campaign('d');
    expect(c.leaders()).toEqual(['d']);
  });

  it('a removed follower no longer counts, and its votes and reads are ignored', () => {
    const c = cluster();
    change(c, 'a', { kind: 'remove', id: 'c' });
    expect(c.node('b').raft.status().voters).toEqual(['a', 'b']);
    // The removed node never learned of anything after its removal; it campaigns in vain.
    const term = c.node('a').raft.status().term;
    c.node('c').raft.campaign();
    c.stabilize();
    expect(c.node('a').raft.status()).toMatchObject({ role: 'leader', term });
    expect(c.node('b').raft.status().term).toBe(term);
    c.isolate('b');
    const t = c.propose('a', 'needs-b');
    expect(c.node('a').raft.status().commit).toBeLessThan(t.index);
  });

  it("a node with no leader takes a removed node's newer term without voting for it; a leader and its followers ignore it", () => {
    const c = cluster();
    change(c, 'a', { kind: 'remove', id: 'c' });
    const term = c.node('a').raft.status().term;
    // The leader is cut off: b campaigns and cannot win, so it has no leader.
    c.isolate('a');
    c.campaign('b');
    expect(c.node('b').raft.status()).toMatchObject({ role: 'candidate', term: term + 1 });
    // The removed node, its clock faster, campaigns in terms ahead of b's. Ignoring them, b would
    // campaign only in terms a lagging voter may already have given to c (seed 302987).
    c.node('c').raft.campaign();
    c.node('c').raft.campaign();
    c.stabilize();
    expect(c.node('c').raft.status().term).toBe(term + 2);
    expect(c.node('b').raft.status()).toMatchObject({ role: 'follower', term: term + 2, vote: '', leader: '' });
    // Healed, a leader emerges among the members; c's later campaigns disturb neither it nor b.
    c.heal();
    c.campaign('b');
    expect(c.leaders()).toEqual(['b']);
    const leaderTerm = c.node('b').raft.status().term;
    c.node('c').raft.campaign();
    c.node('c').raft.campaign();
    c.stabilize();
    expect(c.node('b').raft.status()).toMatchObject({ role: 'leader', term: leaderTerm });
    expect(c.node('a').raft.status()).toMatchObject({ role: 'follower', term: leaderTerm, leader: 'b' });
  });

  it('a voter whose log predates a member\'s addition still votes for it, so that member can win (seed 500417)', () => {
    const c = cluster();
    // c is cut off before d joins: its configuration stays {a, b, c}.
    c.isolate('c');
    join(c, 'd');
    change(c, 'a', { kind: 'addLearner', id: 'd' });
    change(c, 'a', { kind: 'promote', id: 'd' });
    change(c, 'a', { kind: 'remove', id: 'b' });
    expect(c.node('d').raft.status().voters).toEqual(['a', 'c', 'd']);
    expect(c.node('c').raft.status().voters).toEqual(['a', 'b', 'c']);
    // The leader goes; c comes back and, hearing no leader, campaigns in vain (its log is behind).
    c.heal();
    c.isolate('a');
    c.campaign('c');
    expect(c.node('c').raft.status().role).toBe('candidate');
    // d needs c's vote: c lists no d, but a request is judged by the log, not the configuration.
    // (d's first term is the one c just voted itself in; its next one is free.)
    c.campaign('d');
    c.campaign('d');
    expect(c.node('d').raft.status().role).toBe('leader');
    expect(c.node('c').raft.status()).toMatchObject({ leader: 'd', voters: ['a', 'c', 'd'] });
  });

  it('a leader that removes itself keeps leading until the removal commits, then steps down and hands over', () => {
    const c = cluster();
    const idx = change(c, 'a', { kind: 'remove', id: 'a' });
    expect(c.node('a').raft.status().role).not.toBe('leader');
    expect(c.node('b').raft.status().commit).toBeGreaterThanOrEqual(idx);
    // TimeoutNow went to the most caught-up voter: a new leader without waiting for a timeout.
    const leaders = c.leaders();
    expect(leaders).toHaveLength(1);
    expect(['b', 'c']).toContain(leaders[0]);
    for (let i = 0; i < 100; i++) c.node('a').raft.tick();
    c.stabilize();
    expect(c.node('a').raft.status().role).toBe('follower');
    const t = c.propose(leaders[0]!, 'after');
    expect(c.node(leaders[0]!).raft.status().commit).toBe(t.index);
    expect(c.appliedData('a')).not.toContain('after');
  });

  it('an invalid change gets a precise typed error', () => {
    const c = cluster();
    expectCode(() => c.node('a').raft.proposeConfChange({ kind: 'addLearner', id: 'b' }), 'ALREADY_EXISTS');
    expectCode(() => c.node('a').raft.proposeConfChange({ kind: 'promote', id: 'z' }), 'MEMBER_NOT_FOUND');
    expectCode(() => c.node('a').raft.proposeConfChange({ kind: 'remove', id: 'z' }), 'MEMBER_NOT_FOUND');
    expectCode(() => c.node('b').raft.proposeConfChange({ kind: 'remove', id: 'c' }), 'NOT_LEADER');
    const solo = new TestCluster(1);
    solo.campaign('a');
    expectCode(() => solo.node('a').raft.proposeConfChange({ kind: 'remove', id: 'a' }), 'INVALID_STATE');
  });
});

describe('catch-up before promotion', () => {
  it('a learner that trails the leader by more than the bound is refused with how far behind it is, and promoted once it caught up', () => {
    const c = cluster({ promoteMaxLag: 5 });
    join(c, 'd');
    change(c, 'a', { kind: 'addLearner', id: 'd' });
    c.isolate('d');
    for (let i = 0; i < 12; i++) c.propose('a', `x${i}`);
    let err: unknown;
    try {
      c.node('a').raft.proposeConfChange({ kind: 'promote', id: 'd' });
    } catch (e) {
      err = e;
    }
    expect(isHeraldError(err) && err.code).toBe('LEARNER_BEHIND');
    expect((err as Error).message).toMatch(/the learner d is 1[0-9] entries behind the leader \(promotion needs at most 5\)/);
    expect(c.node('a').raft.confState().learners).toEqual(['d']);
    c.heal();
    for (let i = 0; i < 3; i++) c.tick('a');
    change(c, 'a', { kind: 'promote', id: 'd' });
    expect(c.node('d').raft.status().voters).toEqual(['a', 'b', 'c', 'd']);
  });

  it('a learner that has not received the configuration listing the voters is never promoted, however short the log', () => {
    // Promoted before it heard of anyone, it would drop every vote request (they come from
    // non-members of what it knows): with a voter down, no majority could elect a leader.
    const c = cluster();
    join(c, 'd');
    c.isolate('d');
    c.node('a').raft.proposeConfChange({ kind: 'addLearner', id: 'd' });
    c.stabilize();
    expectCode(() => c.node('a').raft.proposeConfChange({ kind: 'promote', id: 'd' }), 'LEARNER_BEHIND');
  });
});

describe('a voter whose removal is pending', () => {
  it('still campaigns when its log alone holds the removal, so the others are not left without a majority', () => {
    const c = cluster({ checkQuorum: true });
    join(c, 'd');
    change(c, 'a', { kind: 'addLearner', id: 'd' });
    change(c, 'a', { kind: 'promote', id: 'd' });
    // Only the leader appends its own removal; then it loses touch and steps down (check-quorum),
    // and d dies: b and c (config {a,b,c,d}) need a's vote, which a's longer log refuses them.
    c.isolate('a');
    const removal = c.node('a').raft.proposeConfChange({ kind: 'remove', id: 'a' }).index;
    c.isolate('d');
    for (let i = 0; i < 40 && c.node('a').raft.status().role === 'leader'; i++) c.tick('a');
    expect(c.node('a').raft.status().role).toBe('follower');
    c.heal();
    c.isolate('d');
    for (let i = 0; i < 200 && c.node('b').raft.status().commit < removal; i++) c.tickAll();
    expect(c.node('b').raft.status().commit).toBeGreaterThanOrEqual(removal);
    expect(c.node('b').raft.status().voters).toEqual(['b', 'c', 'd']);
    for (let i = 0; i < 100 && !c.leaders().some((l) => l === 'b' || l === 'c'); i++) c.tickAll();
    expect(c.leaders().filter((l) => l !== 'd')).toHaveLength(1);
    expect(['b', 'c']).toContain(c.leaders()[0]);
  });
});

describe('one change at a time', () => {
  it('a second change is refused while the first is uncommitted', () => {
    const c = cluster();
    c.isolate('a');
    c.node('a').raft.proposeConfChange({ kind: 'remove', id: 'c' });
    expectCode(() => c.node('a').raft.proposeConfChange({ kind: 'remove', id: 'b' }), 'CONF_CHANGE_PENDING');
    expect(c.node('a').raft.confChangePending()).toBe(true);
    c.heal();
    c.tick('a');
    expect(c.node('a').raft.confChangePending()).toBe(false);
    change(c, 'a', { kind: 'addLearner', id: 'c' });
  });

  it('the two-pending-changes mutation lets the second one through (negative control)', () => {
    const c = cluster({ mutations: new Set(['two-pending-changes']) });
    c.isolate('a');
    c.node('a').raft.proposeConfChange({ kind: 'remove', id: 'c' });
    c.node('a').raft.proposeConfChange({ kind: 'addLearner', id: 'c' });
    expect(c.node('a').raft.status()).toMatchObject({ voters: ['a', 'b'], learners: ['c'] });
  });

  it('a new leader proposes a change only after committing an entry of its own term', () => {
    const c = cluster();
    c.node('b').raft.campaign();
    c.stabilize((m) => m.type !== 'appResp');
    expect(c.leaders()).toEqual(['b']);
    expectCode(() => c.node('b').raft.proposeConfChange({ kind: 'remove', id: 'c' }), 'CONF_CHANGE_PENDING');
    c.tick('b');
    change(c, 'b', { kind: 'remove', id: 'c' });
    expect(c.node('b').raft.status().voters).toEqual(['a', 'b']);
  });
});

describe('configurations in the log and snapshots', () => {
  it('a configuration entry compacted into a snapshot stays in force', () => {
    const c = cluster();
    join(c, 'd');
    change(c, 'a', { kind: 'addLearner', id: 'd' });
    c.propose('a', 'y');
    const a = c.node('a');
    const last = a.storage.lastIndex();
    a.storage.createSnapshot(last, a.raft.confStateAt(last));
    a.storage.compact(last);
    c.propose('a', 'after-compaction');
    expect(a.raft.status()).toMatchObject({ voters: ['a', 'b', 'c'], learners: ['d'] });
  });

  it('a configuration is in force once appended; a truncated one is reverted', () => {
    const c = cluster();
    c.isolate('a');
    c.node('a').raft.proposeConfChange({ kind: 'remove', id: 'c' });
    expect(c.node('a').raft.status().voters).toEqual(['a', 'b']);
    c.campaign('b');
    expect(c.leaders()).toContain('b');
    c.propose('b', 'overwrites');
    c.heal();
    c.tickAll(3);
    expect(c.leaders()).toEqual(['b']);
    expect(c.node('a').raft.status().voters).toEqual(['a', 'b', 'c']);
  });

  it('a restarted node recovers the configuration from its log; a snapshot carries it past compaction', () => {
    const c = cluster();
    join(c, 'd');
    const at = change(c, 'a', { kind: 'addLearner', id: 'd' });
    expect(c.node('b').raft.confStateAt(at - 1)).toEqual({ voters: ['a', 'b', 'c'] });
    const restarted = c.restart('b');
    expect(restarted.raft.status()).toMatchObject({ voters: ['a', 'b', 'c'], learners: ['d'] });

    // Compact the leader past the config entry; a new learner catches up from the snapshot.
    c.propose('a', 'y');
    const a = c.node('a');
    const last = a.storage.lastIndex();
    a.storage.createSnapshot(last, a.raft.confStateAt(last));
    a.storage.compact(last);
    join(c, 'e');
    change(c, 'a', { kind: 'addLearner', id: 'e' });
    c.tickAll(2);
    expect(c.node('e').raft.status()).toMatchObject({ voters: ['a', 'b', 'c'], learners: ['d', 'e'] });
    expect(c.node('e').storage.snapshot().conf).toEqual({ voters: ['a', 'b', 'c'], learners: ['d'] });
  });
});
