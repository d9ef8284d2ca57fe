import { describe, expect, it } from 'vitest';
import { Inflights } from '../../src/raft/core/inflights.js';
import { MemoryStorage } from '../../src/raft/core/memory-storage.js';
import { Progress } from '../../src/raft/core/progress.js';
import { committedIndex, voteResult } from '../../src/raft/core/quorum.js';
import { RaftLog } from '../../src/raft/core/raft-log.js';
import { ReadOnly } from '../../src/raft/core/read-only.js';
import type { Entry } from '../../src/raft/types.js';

const ent = (index: number, term: number): Entry => ({ index, term, type: 'normal', data: new Uint8Array([index]) });

describe('quorum', () => {
  it('the committed index is the highest index a majority has matched', () => {
    const m: Record<string, number> = { a: 9, b: 5, c: 7, d: 1, e: 5 };
    expect(committedIndex(['a', 'b', 'c', 'd', 'e'], (id) => m[id]!)).toBe(5);
    expect(committedIndex(['a', 'b', 'c'], (id) => m[id]!)).toBe(7);
  });

  it('a vote is won with a majority, lost when a majority is out of reach, else pending', () => {
    const voters = ['a', 'b', 'c', 'd', 'e'];
    expect(voteResult(voters, new Map([['a', true], ['b', true]]))).toBe('pending');
    expect(voteResult(voters, new Map([['a', true], ['b', true], ['c', true]]))).toBe('won');
    expect(voteResult(voters, new Map([['a', true], ['b', false], ['c', false], ['d', false]]))).toBe('lost');
  });
});

describe('flow control', () => {
  it('inflights fill to capacity and free cumulatively', () => {
    const f = new Inflights(3);
    [4, 7, 9].forEach((i) => f.add(i));
    expect(f.full()).toBe(true);
    f.freeLE(7);
    expect(f.count).toBe(1);
    f.freeFirstOne();
    expect(f.count).toBe(0);
  });

  it('a probing follower is paused after one append and resumes at the hint after a rejection', () => {
    const p = new Progress(11, 4);
    p.sentEntries(1, 11);
    expect(p.isPaused()).toBe(true);
    expect(p.maybeDecrTo(9, 5)).toBe(false); // a stale rejection (not of our last probe)
    expect(p.maybeDecrTo(10, 5)).toBe(true);
    expect(p.next).toBe(6);
    expect(p.isPaused()).toBe(false);
  });

  it('replicate state pipelines optimistically and falls back to match+1 on rejection', () => {
    const p = new Progress(1, 2);
    p.maybeUpdate(3);
    p.becomeReplicate();
    p.sentEntries(2, 5);
    p.sentEntries(1, 6);
    expect(p.next).toBe(7);
    expect(p.isPaused()).toBe(true);
    expect(p.maybeDecrTo(2, 0)).toBe(false); // at or below match: stale
    expect(p.maybeDecrTo(5, 4)).toBe(true);
    expect(p.next).toBe(4);
  });

  it('after a snapshot, probing resumes just past it', () => {
    const p = new Progress(3, 2);
    p.becomeSnapshot(50);
    expect(p.isPaused()).toBe(true);
    p.becomeProbe();
    expect(p.next).toBe(51);
  });
});

describe('raft log', () => {
  function logWith(terms: number[]): RaftLog {
    const s = new MemoryStorage(['a']);
    s.append(terms.map((t, i) => ent(i + 1, t)));
    return new RaftLog(s);
  }

  it('findConflictByTerm finds the last index whose term is at most the given one', () => {
    const log = logWith([1, 1, 2, 2, 5, 5, 5]);
    expect(log.findConflictByTerm(7, 4)).toEqual([4, 2]);
    expect(log.findConflictByTerm(7, 5)).toEqual([7, 5]);
    expect(log.findConflictByTerm(3, 1)).toEqual([2, 1]);
    expect(log.findConflictByTerm(7, 0)).toEqual([0, 0]);
  });

  it('maybeAppend truncates a conflicting uncommitted suffix and never touches committed entries', () => {
    const log = logWith([1, 1, 2, 2]);
    expect(log.maybeAppend(2, 1, 2, [ent(3, 3), ent(4, 3), ent(5, 3)])).toBe(5);
    expect([3, 4, 5].map((i) => log.term(i))).toEqual([3, 3, 3]);
    expect(log.committed).toBe(2);
    expect(log.maybeAppend(2, 9, 2, [ent(3, 4)])).toBeUndefined(); // previous term mismatch
    expect(() => log.maybeAppend(1, 1, 2, [ent(2, 7)])).toThrow(/committed/);
  });

  it('commits an index only for an entry of the given term (unless told otherwise)', () => {
    const log = logWith([1, 1, 2]);
    expect(log.maybeCommit(2, 2)).toBe(false);
    expect(log.maybeCommit(3, 2)).toBe(true);
    expect(log.committed).toBe(3);
  });

  it('unstable entries shadow storage until they are stable', () => {
    const log = logWith([1, 1]);
    log.append([ent(2, 2), ent(3, 2)]);
    expect(log.term(2)).toBe(2);
    expect(log.unstableEntries().map((e) => e.index)).toEqual([2, 3]);
    log.stableTo(3, 2);
    expect(log.unstableEntries()).toEqual([]);
  });
});

describe('read-only queue', () => {
  it('an ack quorum for a later read releases every earlier one too', () => {
    const ro = new ReadOnly();
    const voters = ['a', 'b', 'c'];
    const c1 = new Uint8Array([1]);
    const c2 = new Uint8Array([2]);
    ro.addRequest(5, 'a', c1);
    ro.addRequest(6, 'b', c2);
    expect(ro.recvAck('a', c2, voters)).toBe(false);
    expect(ro.recvAck('c', c2, voters)).toBe(true);
    expect(ro.advance(c2).map((r) => r.index)).toEqual([5, 6]);
    expect(ro.size).toBe(0);
  });
});
