import { describe, expect, it } from 'vitest';
import { createPrng } from '../../src/raft/sim/prng.js';
import { SimDisk } from '../../src/raft/sim/sim-disk.js';

describe('SimDisk', () => {
  it('a crash loses exactly the writes after the last sync', () => {
    const disk = new SimDisk<string>();
    disk.write('hs', 'term=1');
    disk.write('log/1', 'a');
    disk.sync();
    disk.write('hs', 'term=2');
    disk.write('log/2', 'b');
    disk.delete('log/1');
    // The running node reads its own unsynced writes.
    expect(disk.read('hs')).toBe('term=2');
    expect(disk.read('log/1')).toBeUndefined();
    expect(disk.readDurable('hs')).toBe('term=1');
    expect(disk.unsyncedBatches).toBe(3);

    expect(disk.crash()).toEqual({ lostBatches: 3, survivedBatches: 0, torn: false });
    expect(disk.entries()).toEqual([
      ['hs', 'term=1'],
      ['log/1', 'a'],
    ]);
    expect(disk.unsyncedBatches).toBe(0);
  });

  it('sync makes every earlier write durable, and nothing is lost after it', () => {
    const disk = new SimDisk<number>();
    for (let i = 0; i < 5; i++) disk.write(`log/${i}`, i);
    disk.sync();
    disk.crash();
    expect(disk.durableEntries('log/').map(([, v]) => v)).toEqual([0, 1, 2, 3, 4]);
    expect(disk.counters()).toMatchObject({ writes: 5, syncs: 1, crashes: 1, lostBatches: 0 });
  });

  it('lists entries by key prefix in code-unit order', () => {
    const disk = new SimDisk<string>();
    disk.writeBatch([
      { key: 'log/00000000010', value: 'j' },
      { key: 'log/00000000002', value: 'b' },
      { key: 'snap', value: 's' },
    ]);
    expect(disk.entries('log/').map(([k]) => k)).toEqual(['log/00000000002', 'log/00000000010']);
    expect(disk.durableEntries()).toEqual([]);
  });

  it('the prefix fault keeps a seeded prefix of unsynced batches, never a later batch without an earlier one', () => {
    const survivedCounts = new Set<number>();
    for (let seed = 0; seed < 40; seed++) {
      const disk = new SimDisk<number>({ rng: createPrng(seed), crashFaults: { unsyncedSurvival: 'prefix' } });
      disk.write('synced', -1);
      disk.sync();
      for (let i = 0; i < 6; i++) disk.write(`log/${i}`, i);
      const report = disk.crash();
      survivedCounts.add(report.survivedBatches);
      const kept = disk.durableEntries('log/').map(([, v]) => v);
      expect(kept).toEqual(Array.from({ length: report.survivedBatches }, (_, i) => i));
      expect(disk.read('synced')).toBe(-1);
      // Reproducible from the seed.
      const again = new SimDisk<number>({ rng: createPrng(seed), crashFaults: { unsyncedSurvival: 'prefix' } });
      for (let i = 0; i < 6; i++) again.write(`log/${i}`, i);
      expect(again.crash().survivedBatches).toBe(report.survivedBatches);
    }
    expect(survivedCounts.size).toBeGreaterThan(3);
  });

  it('a torn batch keeps only some of its ops, and only from the first lost batch', () => {
    let tornSeen = 0;
    for (let seed = 0; seed < 30; seed++) {
      const disk = new SimDisk<string>({ rng: createPrng(seed), crashFaults: { tornRate: 1 } });
      disk.writeBatch([
        { key: 'a', value: '1' },
        { key: 'b', value: '2' },
        { key: 'c', value: '3' },
      ]);
      disk.writeBatch([
        { key: 'x', value: '9' },
        { key: 'y', value: '9' },
      ]);
      const r = disk.crash();
      expect(r.torn).toBe(true);
      const keys = disk.durableEntries().map(([k]) => k);
      expect(keys.every((k) => ['a', 'b', 'c'].includes(k))).toBe(true);
      if (keys.length > 0 && keys.length < 3) tornSeen++;
    }
    expect(tornSeen).toBeGreaterThan(0);
    expect(() => new SimDisk({ crashFaults: { tornRate: 0.5 } })).toThrow(/rng/);
  });
});
