import { afterEach, describe, expect, it } from 'vitest';
import { RecordCache } from '../../src/fsm/store/record-cache.js';
import { finishSuccess } from '../../src/fsm/index.js';
import { JOB_PREFIX, RUN_PREFIX } from '../../src/fsm/store/key-layout.js';
import { everySpec, openTestFsm, T0, type TestFsm } from './fsm-test-kit.js';

const bytes = (n: number, fill = 1) => new Uint8Array(n).fill(fill);

describe('RecordCache', () => {
  it('admits only what it is told to, but always updates or drops an entry it holds', () => {
    const c = new RecordCache(1000);
    c.publish([
      { key: 'a', value: bytes(10), admit: true },
      { key: 'b', value: bytes(10), admit: false },
    ]);
    expect(c.get('a')).toEqual(bytes(10));
    expect(c.get('b')).toBeUndefined();
    c.publish([{ key: 'a', value: bytes(5, 7), admit: false }]);
    expect(c.get('a')).toEqual(bytes(5, 7)); // a write by a non-admitting command still refreshes it
    c.publish([{ key: 'a', value: null, admit: true }]);
    expect(c.get('a')).toBeUndefined();
    expect(c.size).toBe(0);
  });

  it('stays within its byte budget by dropping the entries admitted longest ago', () => {
    const c = new RecordCache(100);
    for (let i = 0; i < 10; i++) c.publish([{ key: `k${i}`, value: bytes(18), admit: true }]); // 20 bytes each
    expect(c.size).toBeLessThanOrEqual(5);
    expect(c.get('k9')).toBeDefined();
    expect(c.get('k0')).toBeUndefined();
    // A rewrite replaces the value in place (the new bytes are what is read) but keeps the
    // entry's age: the oldest admitted goes first.
    const kept = ['k6', 'k7', 'k8', 'k9'].filter((k) => c.get(k) !== undefined);
    c.publish([{ key: kept[0]!, value: bytes(18, 9), admit: true }]);
    expect(c.get(kept[0]!)).toEqual(bytes(18, 9));
    c.publish([{ key: 'x', value: bytes(18), admit: true }, { key: 'y', value: bytes(18), admit: true }]);
    expect(c.get(kept[0]!)).toBeUndefined();
    expect(c.get('y')).toBeDefined();
    expect(c.retainedBytes).toBeLessThanOrEqual(100);
    c.clear();
    expect(c.size).toBe(0);
  });
});

describe('RecordCache (values sliced from shared slabs)', () => {
  it('counts a slab once, at its full size, for as long as any entry holds a slice of it', () => {
    const slab = new Uint8Array(1000);
    const c = new RecordCache(10_000);
    c.publish([
      { key: 'a', value: slab.subarray(0, 10), admit: true },
      { key: 'b', value: slab.subarray(10, 30), admit: true },
      { key: 'own', value: bytes(50), admit: true },
    ]);
    expect(c.retainedBytes).toBe(1 + 1000 + 1 + 3 + 50);
    c.publish([{ key: 'a', value: null, admit: false }]);
    expect(c.retainedBytes).toBe(1 + 1000 + 3 + 50); // 'b' still holds the slab
    c.publish([{ key: 'b', value: bytes(5), admit: false }]); // rewritten as an exact buffer
    expect(c.retainedBytes).toBe(1 + 5 + 3 + 50);
    c.clear();
    expect(c.retainedBytes).toBe(0);
  });

  it('keeps within its budget in memory kept alive: one small slice per slab evicts like a whole slab', () => {
    const c = new RecordCache(5000);
    // Each entry is a 10-byte slice of its own 1000-byte slab: ten of them keep 10,000 bytes alive.
    for (let i = 0; i < 10; i++) c.publish([{ key: `k${i}`, value: new Uint8Array(1000).subarray(0, 10), admit: true }]);
    expect(c.retainedBytes).toBeLessThanOrEqual(5000);
    expect(c.size).toBeLessThanOrEqual(4);
    expect(c.get('k9')).toBeDefined();
  });
});

describe('the state machine with a record cache', () => {
  let t: TestFsm;
  afterEach(async () => t?.close());

  /** Every cached entry must be exactly what the store holds. */
  async function expectCacheMatchesStore(): Promise<number> {
    const cache = t.fsm.recordCache!;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const entries = (cache as any).entries as Map<string, Uint8Array>;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const store = (t.fsm as any).store;
    for (const [k, v] of entries) expect(Buffer.from((await store.get(k)) as Uint8Array).equals(Buffer.from(v)), k).toBe(true);
    return entries.size;
  }

  it('serves claim and finish from memory, drops finished runs and never disagrees with the store', async () => {
    t = await openTestFsm();
    const jobs = Array.from({ length: 20 }, (_, i) => `j${i}`);
    const dueTomorrow = Array.from({ length: 5 }, (_, i) => `later${i}`);
    await t.one({
      type: 'putJobs',
      nowMs: T0,
      items: [
        ...jobs.map((jobId) => ({ jobId, spec: everySpec(60_000, {}, T0), idempotencyKey: '' })),
        ...dueTomorrow.map((jobId) => ({ jobId, spec: everySpec(86_400_000, {}, T0 + 86_400_000), idempotencyKey: '' })),
      ],
    });
    const cache = t.fsm.recordCache!;
    // Created jobs due within the admission horizon are kept for their fire; the rest are not.
    expect(cache.size).toBe(20);
    const beforeFire = { ...cache.stats };
    await t.one({ type: 'fireRuns', nowMs: T0, misfireThresholdMs: 60_000, items: jobs.map((jobId) => ({ jobId, slotMs: T0 })) }, 'fire');
    expect(cache.stats.misses - beforeFire.misses).toBe(0);
    expect(cache.size).toBe(40); // 20 jobs + 20 pending runs
    expect(await expectCacheMatchesStore()).toBe(40);

    const token = t.nextIndex();
    const before = { ...cache.stats };
    const claimed = await t.one({ type: 'claimRuns', nowMs: T0 + 5, items: jobs.map((j) => ({ runId: `${j}@${T0}`, workerId: 'w', leaseDeadlineMs: T0 + 30_000 })) }, 'claim');
    expect(claimed.items.every((i) => i.run)).toBe(true);
    // Runs and jobs of the claim came from memory.
    expect(cache.stats.hits - before.hits).toBeGreaterThanOrEqual(40);
    expect(cache.stats.misses - before.misses).toBe(0);
    await expectCacheMatchesStore();

    await t.one({ type: 'finishRuns', nowMs: T0 + 10, items: jobs.slice(0, 10).map((j) => finishSuccess(`${j}@${T0}`, token, new Uint8Array())) }, 'runItems');
    const keys = [...((cache as unknown as { entries: Map<string, Uint8Array> }).entries.keys())];
    expect(keys.filter((k) => k.startsWith(RUN_PREFIX))).toHaveLength(10); // the 10 finished runs left
    expect(keys.filter((k) => k.startsWith(JOB_PREFIX))).toHaveLength(20);
    await expectCacheMatchesStore();

    // A job edit (not an admitting command) still refreshes the cached record.
    await t.one({ type: 'pauseJob', nowMs: T0 + 20, jobId: 'j3', note: 'x' });
    await expectCacheMatchesStore();
    await t.one({ type: 'deleteJob', nowMs: T0 + 30, jobId: 'j4', expectedVersion: 0 });
    expect(keys.length).toBeGreaterThan(0);
    await expectCacheMatchesStore();
  });

  it('is emptied by a snapshot restore', async () => {
    t = await openTestFsm();
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'a', spec: everySpec(60_000, {}, T0), idempotencyKey: '' });
    await t.one({ type: 'fireRuns', nowMs: T0, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 }] }, 'fire');
    const other = await openTestFsm();
    try {
      await other.one({ type: 'putJob', nowMs: T0, jobId: 'b', spec: everySpec(60_000, {}, T0), idempotencyKey: '' });
      const snap = await other.fsm.snapshot();
      try {
        expect(t.fsm.recordCache!.size).toBeGreaterThan(0);
        await t.fsm.restore({ index: snap.appliedIndex, term: 1, conf: { voters: [] } }, snap.chunks());
      } finally {
        await snap.close();
      }
      expect(t.fsm.recordCache!.size).toBe(0);
      expect(await t.fsm.getJob('a')).toBeUndefined();
    } finally {
      await other.close();
    }
  });
});
