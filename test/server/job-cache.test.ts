// The leader's job cache: many jobs in one store read, and never a stale job after a change.
import { describe, expect, it } from 'vitest';
import { Job } from '../../src/gen/herald/v1/job.js';
import { JobCache } from '../../src/server/leader/job-cache.js';

/** A store of jobs that counts reads and can hold a read until released. */
function fakeStore(ids: string[]) {
  const jobs = new Map(ids.map((id) => [id, Job.fromPartial({ id, version: 1 })]));
  const s = {
    singleReads: 0,
    manyReads: [] as string[][],
    hold: undefined as Promise<void> | undefined,
    async getJob(id: string) {
      s.singleReads++;
      return jobs.get(id);
    },
    async getJobs(want: readonly string[]) {
      s.manyReads.push([...want]);
      if (s.hold) await s.hold;
      return new Map(want.map((id) => [id, jobs.get(id)]));
    },
    update(id: string) {
      jobs.set(id, Job.fromPartial({ id, version: jobs.get(id)!.version + 1 }));
    },
  };
  return s;
}

describe('JobCache.getMany', () => {
  it('reads only the misses, in one store call, and serves them from memory afterwards', async () => {
    const store = fakeStore(['a', 'b', 'c']);
    const cache = new JobCache(store);
    await cache.get('a');
    const got = await cache.getMany(['a', 'b', 'b', 'c', 'gone']);
    expect([...got.keys()]).toEqual(['a', 'b', 'c', 'gone']);
    expect(got.get('gone')).toBeUndefined();
    expect(got.get('c')?.id).toBe('c');
    expect(store.manyReads).toEqual([['b', 'c', 'gone']]);
    await cache.getMany(['a', 'b', 'c', 'gone']);
    expect(store.manyReads).toHaveLength(1);
    expect(store.singleReads).toBe(1);
  });

  it('does not keep a read that raced with a change of the job', async () => {
    const store = fakeStore(['a', 'b']);
    const cache = new JobCache(store);
    let release!: () => void;
    store.hold = new Promise((r) => (release = r));
    const pending = cache.getMany(['a', 'b']);
    // The job changes (an applied update) while the read is in flight.
    store.update('a');
    cache.invalidate('a');
    release();
    store.hold = undefined;
    await pending;
    expect((await cache.getMany(['a'])).get('a')?.version).toBe(2);
    expect((await cache.get('b'))?.version).toBe(1);
    expect(store.manyReads).toEqual([['a', 'b'], ['a']]);
    // b did not change: its read was kept.
    expect(store.singleReads).toBe(0);
  });

  it('stays bounded: a full cache starts over, and reads go on being kept', async () => {
    const ids = Array.from({ length: 25 }, (_, i) => `j${i}`);
    const store = fakeStore(ids);
    const cache = new JobCache(store, 10);
    await cache.getMany(ids);
    // The last ids read are held (the cache started over twice while keeping them).
    expect(cache.peek('j24')?.id).toBe('j24');
    expect(cache.peek('j0')).toBeUndefined();
    await cache.getMany(['j24', 'j23']);
    expect(store.manyReads).toHaveLength(1);
  });

  it('does not keep a read that raced with a clear', async () => {
    const store = fakeStore(['a']);
    const cache = new JobCache(store);
    let release!: () => void;
    store.hold = new Promise((r) => (release = r));
    const pending = cache.getMany(['a']);
    cache.clear();
    release();
    store.hold = undefined;
    await pending;
    expect(cache.peek('a')).toBeUndefined();
  });
});
