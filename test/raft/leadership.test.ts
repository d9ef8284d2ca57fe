import { describe, expect, it } from 'vitest';
import { isHeraldError } from '../../src/herald-error.js';
import { MemoryStorage } from '../../src/raft/core/memory-storage.js';
import type { Message } from '../../src/raft/types.js';
import { TestCluster } from './harness.js';

const voteMsg = (from: string, to: string, term: number, index: number, logTerm: number): Message => ({
  type: 'vote', from, to, term, logTerm, index, entries: [], commit: 0, reject: false, rejectHint: 0, rejectHintTerm: 0,
});

describe('pre-vote, check-quorum and leases', () => {
  it('check-quorum: a leader that hears from no quorum for an election timeout steps down', () => {
    const c = new TestCluster(3, { checkQuorum: true });
    c.campaign('a');
    c.isolate('a');
    for (let i = 0; i < 9; i++) c.tick('a');
    expect(c.node('a').raft.status().role).toBe('leader');
    for (let i = 0; i < 11; i++) c.tick('a');
    expect(c.node('a').raft.status()).toMatchObject({ role: 'follower', leader: '', term: 1 });
  });

  it('pre-vote: an isolated node keeps its term, so its return does not depose the leader', () => {
    const c = new TestCluster(3, { preVote: true, checkQuorum: true });
    c.campaign('a');
    c.isolate('c');
    for (let i = 0; i < 100; i++) c.tick('c');
    expect(c.node('c').raft.status()).toMatchObject({ term: 1, role: 'preCandidate' });
    c.heal();
    c.tickAll(5);
    expect(c.leaders()).toEqual(['a']);
    expect(c.node('a').raft.status().term).toBe(1);
    expect(c.node('c').raft.status()).toMatchObject({ role: 'follower', leader: 'a' });
  });

  it('without pre-vote the same isolated node inflates its term and forces a new election', () => {
    const c = new TestCluster(3, { preVote: false, checkQuorum: false });
    c.campaign('a');
    c.isolate('c');
    for (let i = 0; i < 100; i++) c.tick('c');
    const inflated = c.node('c').raft.status().term;
    expect(inflated).toBeGreaterThan(3);
    c.heal();
    c.tickAll(30);
    expect(c.leaders()).toHaveLength(1);
    expect(c.node(c.leaders()[0]!).raft.status().term).toBeGreaterThanOrEqual(inflated);
  });

  it('a disruptive rejoining node: a follower that heard the leader recently ignores its higher-term vote request', () => {
    const c = new TestCluster(3, { checkQuorum: true });
    c.campaign('a');
    const b = c.node('b').raft;
    b.step(voteMsg('c', 'b', 9, 1, 1));
    expect(b.status()).toMatchObject({ term: 1, vote: 'a', leader: 'a' });
    expect(b.hasReady()).toBe(false); // not even a rejection: the request is dropped
    // After an election timeout without the leader, the same request is considered.
    for (let i = 0; i < 10; i++) b.tick();
    b.step(voteMsg('c', 'b', 9, 1, 1));
    expect(b.status()).toMatchObject({ term: 9, vote: 'c' });
  });

  it('a partitioned old leader cannot commit; on rejoining it steps down and its entries are replaced', () => {
    const c = new TestCluster(5);
    c.campaign('a');
    c.isolate('a');
    const stale = c.node('a').raft.propose(new TextEncoder().encode('lost'));
    c.stabilize();
    expect(c.node('a').raft.status().commit).toBe(1);
    c.campaign('b');
    c.propose('b', 'kept');
    c.heal();
    c.tickAll(3);
    expect(c.node('a').raft.status()).toMatchObject({ role: 'follower', leader: 'b', term: 2 });
    expect(c.node('a').storage.term(stale.index)).toBe(2); // the stale entry was overwritten
    for (const id of c.ids) expect(c.appliedData(id)).toEqual(['kept']);
  });

  it('messages from outside the configuration are ignored: no vote, and no disruption of a leader or its followers', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    const term = c.node('a').raft.status().term;
    for (const id of ['a', 'b']) {
      const n = c.node(id).raft;
      n.step(voteMsg('z', id, term + 5, 9, 9));
      n.step(voteMsg('c', 'someone-else', term + 5, 9, 9));
      expect(n.status()).toMatchObject({ term, leader: 'a' });
    }
    c.flushReady();
    expect(c.queue).toEqual([]);
    // A node with no leader handles a non-member's vote request as Raft does, whatever its
    // configuration: the candidate's own configuration decides whether the vote counts (see
    // membership.test.ts). A node that knows no configuration never votes.
    const fresh = new TestCluster(3).node('a').raft;
    fresh.step(voteMsg('z', 'a', 5, 9, 9));
    expect(fresh.status()).toMatchObject({ term: 5, vote: 'z', role: 'follower' });
    expect(fresh.ready().messages).toEqual([expect.objectContaining({ type: 'voteResp', to: 'z', term: 5, reject: false })]);
    const joining = c.makeNode('j', new MemoryStorage({ voters: [] }), {}, 0).raft;
    joining.step(voteMsg('z', 'j', 5, 9, 9));
    expect(joining.status()).toMatchObject({ term: 0, vote: '' });
    expect(joining.hasReady()).toBe(false);
  });

  it('a node grants one vote per term, also across a restart', () => {
    const c = new TestCluster(3);
    const a = c.node('a');
    a.raft.step(voteMsg('b', 'a', 1, 0, 0));
    c.flushReady();
    expect(a.storage.initialState().hardState).toMatchObject({ term: 1, vote: 'b' });
    c.queue.length = 0;
    const restarted = c.restart('a');
    restarted.raft.step(voteMsg('c', 'a', 1, 0, 0));
    const rd = restarted.raft.ready();
    expect(rd.messages).toEqual([expect.objectContaining({ type: 'voteResp', to: 'c', reject: true })]);
  });
});

describe('leadership transfer', () => {
  it('the leader catches the target up, sends TimeoutNow, and the target wins the next term', () => {
    const c = new TestCluster(3, { preVote: true, checkQuorum: true });
    c.campaign('a');
    c.isolate('c');
    c.propose('a', 'x');
    c.heal();
    c.node('a').raft.transferLeadership('c');
    expect(() => c.node('a').raft.propose(new Uint8Array([1]))).toThrow(/transfer/);
    c.stabilize();
    expect(c.delivered.some((m) => m.type === 'timeoutNow' && m.to === 'c')).toBe(true);
    expect(c.leaders()).toEqual(['c']);
    expect(c.node('c').raft.status().term).toBe(2);
    c.propose('c', 'y');
    expect(c.appliedData('a')).toEqual(['x', 'y']);
  });

  it('an unreachable target: the transfer is abandoned after an election timeout and proposals resume', () => {
    const c = new TestCluster(3, { checkQuorum: true });
    c.campaign('a');
    c.isolate('c');
    c.node('a').raft.transferLeadership('c');
    expect(c.node('a').raft.status().leadTransferee).toBe('c');
    for (let i = 0; i < 10; i++) c.tick('a');
    expect(c.node('a').raft.status()).toMatchObject({ role: 'leader', leadTransferee: '' });
    expect(c.propose('a', 'z').index).toBe(2);
  });

  it('proposals to a follower fail with NOT_LEADER naming the leader', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    try {
      c.node('b').raft.propose(new Uint8Array([1]));
      expect.unreachable();
    } catch (e) {
      expect(isHeraldError(e, 'NOT_LEADER')).toBe(true);
      expect((e as { details: { leaderId?: string } }).details.leaderId).toBe('a');
    }
  });
});

describe('ready / advance: durable state before replies', () => {
  it('a vote is in the same Ready as the hard state recording it, which must be synced first', () => {
    const c = new TestCluster(3);
    const b = c.node('b').raft;
    b.step(voteMsg('a', 'b', 1, 0, 0));
    const rd = b.ready();
    expect(rd.hardState).toEqual({ term: 1, vote: 'a', commit: 0 });
    expect(rd.mustSync).toBe(true);
    expect(rd.messages).toEqual([expect.objectContaining({ type: 'voteResp', reject: false, term: 1 })]);
  });

  it('appended entries come with their acknowledgement in one Ready that must be synced', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    const a = c.node('a').raft;
    a.propose(new TextEncoder().encode('x'));
    const rd = a.ready();
    expect(rd.entries.map((e) => e.index)).toEqual([2]);
    expect(rd.mustSync).toBe(true);
    a.advance(rd);
    expect(a.hasReady()).toBe(false);
  });

  it('a commit-only change does not force a sync', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    c.node('a').raft.propose(new TextEncoder().encode('x'));
    c.flushReady();
    const a = c.node('a').raft;
    const app = c.queue.find((m) => m.to === 'b' && m.type === 'app')!;
    c.queue.length = 0;
    c.node('b').raft.step(app);
    c.flushReady();
    const ack = c.queue.find((m) => m.type === 'appResp')!;
    a.step(ack);
    const rd = a.ready();
    expect(rd.hardState?.commit).toBe(2);
    expect(rd.entries).toHaveLength(0);
    expect(rd.mustSync).toBe(false);
    expect(rd.committedEntries.map((e) => e.index)).toEqual([2]);
  });

  it('the reply-before-sync mutation marks a vote as not needing a sync', () => {
    const c = new TestCluster(3, { mutations: new Set(['reply-before-sync']) });
    const b = c.node('b').raft;
    b.step(voteMsg('a', 'b', 1, 0, 0));
    expect(b.ready().mustSync).toBe(false);
  });
});
