import { describe, expect, it } from 'vitest';
import { isStorageError, MemoryStorage } from '../../src/raft/core/memory-storage.js';
import type { Entry } from '../../src/raft/types.js';

const ent = (index: number, term: number, size = 0): Entry => ({ index, term, type: 'normal', data: new Uint8Array(size) });

describe('MemoryStorage', () => {
  it('starts empty with the bootstrap configuration and a zero hard state', () => {
    const s = new MemoryStorage(['a', 'b', 'c']);
    expect(s.initialState()).toEqual({ hardState: { term: 0, vote: '', commit: 0 }, conf: { voters: ['a', 'b', 'c'] } });
    expect(s.firstIndex()).toBe(1);
    expect(s.lastIndex()).toBe(0);
    expect(s.term(0)).toBe(0);
  });

  it('appends, and a conflicting append truncates the old suffix', () => {
    const s = new MemoryStorage(['a']);
    s.append([ent(1, 1), ent(2, 1), ent(3, 2)]);
    expect(s.lastIndex()).toBe(3);
    s.append([ent(2, 3)]);
    expect(s.lastIndex()).toBe(2);
    expect(s.term(2)).toBe(3);
    expect(() => s.append([ent(5, 3)])).toThrow();
  });

  it('limits entries by size but always returns at least one', () => {
    const s = new MemoryStorage(['a']);
    s.append([ent(1, 1, 10), ent(2, 1, 10), ent(3, 1, 10)]);
    expect(s.entries(1, 4, 5).map((e) => e.index)).toEqual([1]);
    expect(s.entries(1, 4, 20).map((e) => e.index)).toEqual([1, 2]);
    expect(s.entries(1, 4).map((e) => e.index)).toEqual([1, 2, 3]);
    expect(() => s.entries(1, 5)).toThrow();
  });

  it('compacts only behind a snapshot point, keeping the term of the compaction point', () => {
    const s = new MemoryStorage(['a', 'b']);
    s.append([ent(1, 1), ent(2, 1), ent(3, 2), ent(4, 2)]);
    expect(() => s.compact(2)).toThrow();
    const meta = s.createSnapshot(3);
    expect(meta).toEqual({ index: 3, term: 2, conf: { voters: ['a', 'b'] } });
    s.compact(2);
    expect(s.firstIndex()).toBe(3);
    expect(s.term(2)).toBe(1);
    expect(s.snapshot().index).toBe(3);
    let err: unknown;
    try {
      s.entries(2, 3);
    } catch (e) {
      err = e;
    }
    expect(isStorageError(err, 'compacted')).toBe(true);
    expect(s.entries(3, 5).map((e) => e.index)).toEqual([3, 4]);
  });

  it('applySnapshot replaces the log and raises commit', () => {
    const s = new MemoryStorage(['a', 'b', 'c']);
    s.append([ent(1, 1)]);
    s.setHardState({ term: 1, vote: 'a', commit: 1 });
    s.applySnapshot({ index: 10, term: 3, conf: { voters: ['a', 'b', 'c'] } });
    expect(s.firstIndex()).toBe(11);
    expect(s.lastIndex()).toBe(10);
    expect(s.term(10)).toBe(3);
    expect(s.initialState().hardState).toEqual({ term: 1, vote: 'a', commit: 10 });
    expect(() => s.applySnapshot({ index: 5, term: 1, conf: { voters: ['a'] } })).toThrow();
    s.append([ent(11, 3)]);
    expect(s.entries(11, 12)[0]!.term).toBe(3);
  });
});
