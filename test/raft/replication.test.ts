import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../../src/raft/core/memory-storage.js';
import type { Entry, Message, NodeId } from '../../src/raft/types.js';
import { TestCluster } from './harness.js';

const ent = (index: number, term: number): Entry => ({ index, term, type: 'normal', data: new TextEncoder().encode(`e${index}@${term}`) });

/** A storage holding entries with the given terms at 1..n, at hard-state term `term`. */
function logOf(voters: NodeId[], terms: number[], term: number): MemoryStorage {
  const s = new MemoryStorage(voters);
  s.append(terms.map((t, i) => ent(i + 1, t)));
  s.setHardState({ term, vote: '', commit: 0 });
  return s;
}

function terms(s: MemoryStorage): number[] {
  const out: number[] = [];
  for (let i = s.firstIndex(); i <= s.lastIndex(); i++) out.push(s.term(i));
  return out;
}

describe('log replication', () => {
  it('a new leader appends a no-op of its term and commits it with the entries before it', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    c.propose('a', 'x');
    c.isolate('a');
    c.campaign('b');
    c.heal();
    c.tickAll(2);
    const b = c.node('b').storage;
    expect(terms(b)).toEqual([1, 1, 2]);
    expect(b.entries(3, 4)[0]!.data.length).toBe(0);
    expect(c.appliedData('c')).toEqual(['x']);
    expect(c.node('a').raft.status()).toMatchObject({ role: 'follower', term: 2, commit: 3 });
  });

  it('proposeAll appends its commands as adjacent entries in order, and every replica applies them so', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    c.propose('a', 'before');
    const enc = (t: string) => new TextEncoder().encode(t);
    const tickets = c.node('a').raft.proposeAll([enc('fire'), enc('claim')]);
    c.propose('a', 'after');
    c.stabilize();
    expect(tickets.map((t) => t.index)).toEqual([tickets[0]!.index, tickets[0]!.index + 1]);
    for (const id of ['a', 'b', 'c']) expect(c.appliedData(id)).toEqual(['before', 'fire', 'claim', 'after']);
    // A follower refuses the whole group: nothing of it is appended.
    const last = c.node('b').storage.lastIndex();
    expect(() => c.node('b').raft.proposeAll([enc('x'), enc('y')])).toThrow(/not the leader/);
    expect(c.node('b').storage.lastIndex()).toBe(last);
  });

  // The paper's Figure 7: whatever a follower's log looks like, the leader of term 8 makes it
  // identical to its own (missing entries, extra uncommitted entries, conflicting terms).
  const leaderLog = [1, 1, 1, 4, 4, 5, 5, 6, 6, 6];
  const followers: Record<string, number[]> = {
    a: [1, 1, 1, 4, 4, 5, 5, 6, 6],
    b: [1, 1, 1, 4],
    c: [1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 6],
    d: [1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 7, 7],
    e: [1, 1, 1, 4, 4, 4, 4],
    f: [1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3],
  };
  for (const [name, flog] of Object.entries(followers)) {
    it(`Figure 7 (${name}): the follower converges to the term-8 leader's log`, () => {
      const ids = ['a', 'b', 'c'];
      const storages = new Map([
        ['a', logOf(ids, leaderLog, 7)],
        ['b', logOf(ids, flog, 7)],
        ['c', logOf(ids, leaderLog, 7)],
      ]);
      const c = new TestCluster(3, {}, storages);
      c.campaign('a');
      expect(c.node('a').raft.status()).toMatchObject({ role: 'leader', term: 8 });
      expect(terms(c.node('b').storage)).toEqual([...leaderLog, 8]);
      expect(c.node('b').raft.status().commit).toBe(11);
      // Fast backtracking: one rejection per conflicting term at most, not one per entry.
      const rejections = c.delivered.filter((m) => m.type === 'appResp' && m.reject && m.from === 'b').length;
      expect(rejections).toBeLessThanOrEqual(3);
    });
  }

  it('fast backtracking skips a whole conflicting term per round trip', () => {
    const ids = ['a', 'b', 'c'];
    const long = Array.from({ length: 30 }, () => 2);
    const storages = new Map([
      ['a', logOf(ids, [1, ...Array.from({ length: 30 }, () => 3)], 3)],
      ['b', logOf(ids, [1, ...long], 3)],
      ['c', logOf(ids, [1, ...Array.from({ length: 30 }, () => 3)], 3)],
    ]);
    const c = new TestCluster(3, {}, storages);
    c.campaign('a');
    expect(terms(c.node('b').storage)).toEqual(terms(c.node('a').storage));
    const rejections = c.delivered.filter((m) => m.type === 'appResp' && m.reject && m.from === 'b');
    expect(rejections.length).toBeLessThanOrEqual(2);
  });

  it('batches entries up to maxSizePerMsg per append', () => {
    const c = new TestCluster(3, { maxSizePerMsg: 10 });
    c.campaign('a');
    c.isolate('b');
    for (let i = 0; i < 6; i++) c.propose('a', `12345`); // 5 bytes each
    c.heal();
    c.delivered.length = 0;
    c.tickAll(3);
    const appsToB = c.delivered.filter((m) => m.type === 'app' && m.to === 'b' && m.entries.length > 0);
    expect(appsToB.length).toBeGreaterThanOrEqual(3);
    for (const m of appsToB) expect(m.entries.reduce((n, e) => n + e.data.length, 0)).toBeLessThanOrEqual(10);
    expect(c.appliedData('b')).toHaveLength(6);
  });

  it('pipelines up to maxInflightMsgs unacknowledged appends to a replicating follower, then pauses', () => {
    const c = new TestCluster(3, { maxInflightMsgs: 2 });
    c.campaign('a');
    const a = c.node('a').raft;
    // b acknowledges nothing: its appResps are dropped.
    const sent: Message[] = [];
    for (let i = 0; i < 5; i++) {
      a.propose(new TextEncoder().encode(`p${i}`));
      const rd = a.ready();
      c.node('a').storage.append(rd.entries);
      sent.push(...rd.messages.filter((m) => m.to === 'b' && m.type === 'app'));
      a.advance(rd);
    }
    expect(sent).toHaveLength(2);
    expect(a.status().progress['b']).toMatchObject({ state: 'replicate', inflight: 2 });
    // A heartbeat reply frees one slot (the link works; an append may have been lost).
    a.step({ ...sent[0]!, type: 'heartbeatResp', from: 'b', to: 'a', entries: [], context: undefined });
    const rd = a.ready();
    expect(rd.messages.filter((m) => m.to === 'b' && m.type === 'app')).toHaveLength(1);
    a.advance(rd);
  });

  it('a probing follower gets one append at a time until it answers', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    const a = c.node('a').raft;
    a.reportUnreachable('b');
    expect(a.status().progress['b']!.state).toBe('probe');
    const toB: Message[] = [];
    for (let i = 0; i < 3; i++) {
      a.propose(new TextEncoder().encode(`p${i}`));
      const rd = a.ready();
      c.node('a').storage.append(rd.entries);
      toB.push(...rd.messages.filter((m) => m.to === 'b' && m.type === 'app'));
      a.advance(rd);
    }
    expect(toB).toHaveLength(1);
  });

  it('a follower rejects an append whose previous entry does not match (log matching)', () => {
    const c = new TestCluster(3);
    c.campaign('a');
    const b = c.node('b').raft;
    b.step({
      type: 'app', from: 'a', to: 'b', term: 1, logTerm: 5, index: 1, entries: [ent(2, 1)],
      commit: 0, reject: false, rejectHint: 0, rejectHintTerm: 0,
    });
    const rd = b.ready();
    expect(rd.entries).toHaveLength(0);
    expect(rd.messages[0]).toMatchObject({ type: 'appResp', reject: true, index: 1 });
  });
});

describe('commit broadcast', () => {
  const commits = (c: TestCluster) => c.ids.map((id) => c.node(id).raft.status().commit);
  const appsAfter = (c: TestCluster, from: number) => c.delivered.slice(from).filter((m) => m.type === 'app').length;

  it("eager (etcd's): a write's commit reaches the followers with an append of its own", () => {
    const c = new TestCluster(3);
    c.campaign('a');
    const before = c.delivered.length;
    const { index } = c.propose('a', 'x');
    expect(commits(c)).toEqual([index, index, index]);
    // One append with the entry and one with the new commit index, to each follower.
    expect(appsAfter(c, before)).toBe(4);
  });

  it('lazy: followers learn it from the next heartbeat, and a write costs one append per follower', () => {
    const c = new TestCluster(3, { commitBroadcast: 'lazy' });
    c.campaign('a');
    c.tick('a'); // the no-op's commit reaches the followers with a heartbeat
    const before = c.delivered.length;
    const { index } = c.propose('a', 'x');
    expect(appsAfter(c, before)).toBe(2);
    expect(c.node('a').raft.status().commit).toBe(index);
    expect(commits(c).slice(1).every((n) => n < index)).toBe(true);
    expect(c.appliedData('b')).toEqual([]);
    c.tick('a'); // heartbeatTicks 1: the next tick's heartbeat carries the commit index
    expect(commits(c)).toEqual([index, index, index]);
    expect(c.appliedData('b')).toEqual(['x']);
    // Entries still go out at once: a second write while the first is in flight is not held back.
    const two = c.propose('a', 'y');
    expect(c.node('b').raft.status().lastIndex).toBe(two.index);
    expect(c.node('a').raft.status().commit).toBe(two.index);
  });
});
