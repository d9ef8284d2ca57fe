import { afterEach, describe, expect, it } from 'vitest';
import { JobState } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { isHeraldError } from '../../src/herald-error.js';
import { dueKey, jobKey, parseDueKey } from '../../src/fsm/store/key-layout.js';
import type { Db } from '../../src/fsm/store/apply-txn.js';
import { finishSuccess } from '../../src/fsm/commands/commands.js';
import { everySpec, openTestFsm, T0, type TestFsm } from './fsm-test-kit.js';

let t: TestFsm;
afterEach(async () => t?.close());

const put = (jobId: string, intervalMs: number, p = {}) =>
  ({ type: 'putJob', nowMs: T0, jobId, spec: everySpec(intervalMs, p, T0 + intervalMs), idempotencyKey: '' }) as const;

describe('dueWindow', () => {
  it('returns (job, slot) pairs in [from, to) earliest first, bounded by limit', async () => {
    t = await openTestFsm();
    await t.apply(put('c', 3000), put('a', 1000), put('b', 2000), put('d', 2000));
    await t.one({ type: 'pauseJob', nowMs: T0, jobId: 'd', note: '' });
    expect(await t.fsm.dueWindow(T0, T0 + 2001, 10)).toEqual([
      { jobId: 'a', slotMs: T0 + 1000 },
      { jobId: 'b', slotMs: T0 + 2000 },
    ]);
    expect(await t.fsm.dueWindow(T0 + 1001, T0 + 10_000, 10)).toEqual([
      { jobId: 'b', slotMs: T0 + 2000 },
      { jobId: 'c', slotMs: T0 + 3000 },
    ]);
    expect(await t.fsm.dueWindow(T0, T0 + 10_000, 1)).toEqual([{ jobId: 'a', slotMs: T0 + 1000 }]);
  });

  it('reads a window of thousands of keys whole, in order (several native reads of the scan)', async () => {
    t = await openTestFsm();
    const cmds = Array.from({ length: 3000 }, (_, i) => put(`job-${String(i).padStart(5, '0')}-${'x'.repeat(100)}`, 1000 + i));
    await t.apply(...cmds);
    const window = await t.fsm.dueWindow(T0, T0 + 10_000, 1_000_000);
    expect(window).toHaveLength(3000);
    expect(window[0]).toEqual({ jobId: `job-00000-${'x'.repeat(100)}`, slotMs: T0 + 1000 });
    expect(window[2999]).toEqual({ jobId: `job-02999-${'x'.repeat(100)}`, slotMs: T0 + 3999 });
    expect(window.every((s, i) => s.slotMs === T0 + 1000 + i)).toBe(true);
  });

  it('parses due keys back into the time and id they were made of', () => {
    for (const [ms, id] of [
      [0, 'a'],
      [T0, 'job-1'],
      [999_999_999_999_999, 'z'],
      [T0 + 7, '0123456789'],
      [T0, 'a.b:c_d-e'],
    ] as const) {
      expect(parseDueKey(dueKey(ms, id))).toEqual({ slotMs: ms, jobId: id });
    }
    // A key not of the usual shape (a time field that is not 15 digits) reads as it always did.
    expect(parseDueKey('d\u00001234x\u0000id')).toEqual({ slotMs: NaN, jobId: 'id' });
    expect(parseDueKey(`d\u0000${'9'.repeat(16)}\u0000id`)).toEqual({ slotMs: 9_999_999_999_999_999, jobId: 'id' });
  });
});

describe('readyRuns', () => {
  it('orders by priority (high first), then not-before; filters by task type and due time', async () => {
    t = await openTestFsm();
    await t.apply(
      put('lo', 1000, { priority: -5 }),
      put('hi', 1000, { priority: 10, taskType: 'email' }),
      put('mid', 2000, { priority: 0 }),
    );
    const fire = (jobId: string, slotMs: number) => ({ jobId, slotMs });
    await t.one({ type: 'fireRuns', nowMs: T0 + 2000, misfireThresholdMs: 60_000, items: [fire('lo', T0 + 2000), fire('hi', T0 + 1000), fire('mid', T0 + 2000)] });
    const all = (await t.fsm.readyRuns({ limit: 10 })).map((r) => r.id);
    expect(all).toEqual([`hi@${T0 + 1000}`, `hi@${T0 + 2000}`, `mid@${T0 + 2000}`, `lo@${T0 + 1000}`, `lo@${T0 + 2000}`]);
    expect((await t.fsm.readyRuns({ limit: 2 })).map((r) => r.id)).toEqual(all.slice(0, 2));
    const demo = (await t.fsm.readyRuns({ limit: 10, taskTypes: ['demo'] })).map((r) => r.id);
    expect(demo).toEqual([`mid@${T0 + 2000}`, `lo@${T0 + 1000}`, `lo@${T0 + 2000}`]);
    expect((await t.fsm.readyRuns({ limit: 10, taskTypes: ['email', 'demo'] })).map((r) => r.id)).toEqual(all);
    // Due filter skips not-yet-due runs of a priority and still finds lower priorities.
    expect((await t.fsm.readyRuns({ limit: 10, nowMs: T0 + 1000 })).map((r) => r.id)).toEqual([`hi@${T0 + 1000}`, `lo@${T0 + 1000}`]);
  });
});

describe('runningRuns / getRuns', () => {
  it('reads only the running runs `want` picks by id, and any runs by id in the order asked', async () => {
    t = await openTestFsm();
    await t.apply(put('a', 1000), put('b', 1000), put('c', 1000));
    const slot = T0 + 1000;
    await t.one({ type: 'fireRuns', nowMs: slot, misfireThresholdMs: 60_000, items: ['a', 'b', 'c'].map((jobId) => ({ jobId, slotMs: slot })) });
    await t.one({ type: 'claimRuns', nowMs: slot, items: ['a', 'b'].map((j) => ({ runId: `${j}@${slot}`, workerId: 'w', leaseDeadlineMs: slot + 30_000 })) });
    expect((await t.fsm.runningRuns()).map((r) => r.id)).toEqual([`a@${slot}`, `b@${slot}`]);
    const asked: string[] = [];
    const picked = await t.fsm.runningRuns(10, (id) => (asked.push(id), id.startsWith('b')));
    expect(asked).toEqual([`a@${slot}`, `b@${slot}`]);
    expect(picked.map((r) => [r.id, r.state, r.workerId])).toEqual([[`b@${slot}`, RunState.RUN_STATE_RUNNING, 'w']]);
    expect((await t.fsm.getRuns([`c@${slot}`, 'nope@1', `a@${slot}`])).map((r) => r.id)).toEqual([`c@${slot}`, `a@${slot}`]);
  });
});

describe('runningRuns: a run that ends between the index read and the record read', () => {
  it('is left out (the leader would otherwise adopt a lease for a finished run)', async () => {
    t = await openTestFsm();
    await t.apply(put('a', 1000), put('b', 1000));
    const slot = T0 + 1000;
    await t.one({ type: 'fireRuns', nowMs: slot, misfireThresholdMs: 60_000, items: ['a', 'b'].map((jobId) => ({ jobId, slotMs: slot })) });
    const token = t.nextIndex();
    await t.one({ type: 'claimRuns', nowMs: slot, items: ['a', 'b'].map((j) => ({ runId: `${j}@${slot}`, workerId: 'w', leaseDeadlineMs: slot + 30_000 })) });
    // The records are read after the index: b's finish applies in between (once the index read
    // is done, before its answer reaches the reader).
    const store = (t.fsm as unknown as { store: Db }).store;
    const keys = store.keys.bind(store);
    store.keys = ((...a: Parameters<typeof keys>) => {
      store.keys = keys;
      const it = keys(...a);
      const all = it.all.bind(it);
      it.all = (async () => {
        const found = await all();
        await t.one({ type: 'finishRuns', nowMs: slot + 10, items: [finishSuccess(`b@${slot}`, token)] }, 'runItems');
        return found;
      }) as typeof it.all;
      return it;
    }) as typeof store.keys;
    expect((await t.fsm.runningRuns()).map((r) => r.id)).toEqual([`a@${slot}`]);
    expect((await t.fsm.getRun(`b@${slot}`))?.state).toBe(RunState.RUN_STATE_SUCCEEDED);
  });
});

describe('listJobs / listRuns', () => {
  it('pages through jobs in id order with filters', async () => {
    t = await openTestFsm();
    const cmds = Array.from({ length: 25 }, (_, i) => put(`job-${String(i).padStart(2, '0')}`, 1000, { labels: { team: i % 2 ? 'odd' : 'even' }, taskType: i % 5 === 0 ? 'five' : 'demo' }));
    await t.apply(...cmds);
    await t.one({ type: 'pauseJob', nowMs: T0, jobId: 'job-03', note: '' });
    const seen: string[] = [];
    let token = '';
    do {
      const page = await t.fsm.listJobs({ pageSize: 10, pageToken: token });
      seen.push(...page.items.map((j) => j.id));
      token = page.nextPageToken;
    } while (token);
    expect(seen).toEqual(cmds.map((c) => c.jobId));
    const odd = await t.fsm.listJobs({ pageSize: 100, labelSelector: { team: 'odd' } });
    expect(odd.items).toHaveLength(12);
    expect(odd.nextPageToken).toBe('');
    expect((await t.fsm.listJobs({ state: JobState.JOB_STATE_PAUSED })).items.map((j) => j.id)).toEqual(['job-03']);
    expect((await t.fsm.listJobs({ taskType: 'five' })).items.map((j) => j.id)).toEqual(['job-00', 'job-05', 'job-10', 'job-15', 'job-20']);
  });

  it('lists the jobs whose id starts with a prefix, paging within that id range only', async () => {
    t = await openTestFsm();
    const ids = ['alpha', 'job-1', 'job-10', 'job-11', 'job-12', 'job-13', 'job-2', 'job-20', 'jobless', 'zeta'];
    await t.apply(...ids.map((id) => put(id, 1000, { taskType: id === 'job-12' ? 'other' : 'demo' })));
    const seen: string[] = [];
    let token = '';
    do {
      const page = await t.fsm.listJobs({ idPrefix: 'job-1', pageSize: 2, pageToken: token });
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items.map((j) => j.id));
      token = page.nextPageToken;
    } while (token);
    expect(seen).toEqual(['job-1', 'job-10', 'job-11', 'job-12', 'job-13']);
    // Combined with the other filters, and a prefix no id has.
    expect((await t.fsm.listJobs({ idPrefix: 'job-1', taskType: 'demo' })).items.map((j) => j.id)).toEqual(['job-1', 'job-10', 'job-11', 'job-13']);
    expect((await t.fsm.listJobs({ idPrefix: 'job' })).items.map((j) => j.id)).toEqual(ids.filter((i) => i.startsWith('job')));
    expect(await t.fsm.listJobs({ idPrefix: 'nothing' })).toEqual({ items: [], nextPageToken: '' });
    // A page token of one prefix does not continue another (it lies outside that range).
    const first = await t.fsm.listJobs({ idPrefix: 'job-1', pageSize: 1 });
    const e = await t.fsm.listJobs({ idPrefix: 'job-2', pageToken: first.nextPageToken }).catch((x: unknown) => x);
    expect(isHeraldError(e, 'INVALID_ARGUMENT')).toBe(true);
  });

  it('refuses a forged page token and a bad page size with INVALID_ARGUMENT', async () => {
    t = await openTestFsm();
    for (const q of [{ pageToken: 'Zm9v' }, { pageSize: 5000 }]) {
      const e = await t.fsm.listJobs(q).catch((x: unknown) => x);
      expect(isHeraldError(e, 'INVALID_ARGUMENT')).toBe(true);
    }
    const e = await t.fsm.listRuns({ jobId: 'a', pageToken: Buffer.from('r\0b\0').toString('base64url') }).catch((x: unknown) => x);
    expect(isHeraldError(e, 'INVALID_ARGUMENT')).toBe(true);
  });

  it('lists runs newest first, by job and by state, with pages', async () => {
    t = await openTestFsm();
    await t.apply(put('a', 1000, { overlapPolicy: 2 }), put('b', 1000));
    for (let k = 1; k <= 5; k++) {
      await t.one({ type: 'fireRuns', nowMs: T0 + k * 1000, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 + k * 1000 }, { jobId: 'b', slotMs: T0 + k * 1000 }] });
    }
    const a = await t.fsm.listRuns({ jobId: 'a', pageSize: 3 });
    expect(a.items.map((r) => r.slotUnixMs - T0)).toEqual([5000, 4000, 3000]);
    const a2 = await t.fsm.listRuns({ jobId: 'a', pageSize: 3, pageToken: a.nextPageToken });
    expect(a2.items.map((r) => r.slotUnixMs - T0)).toEqual([2000, 1000]);
    expect(a2.nextPageToken).toBe('');
    const skipped = await t.fsm.listRuns({ state: RunState.RUN_STATE_SKIPPED });
    expect(skipped.items.map((r) => r.id)).toEqual([5, 4, 3, 2].map((k) => `a@${T0 + k * 1000}`));
    const pendingB = await t.fsm.listRuns({ jobId: 'b', state: RunState.RUN_STATE_PENDING, pageSize: 2 });
    expect(pendingB.items.map((r) => r.id)).toEqual([`b@${T0 + 5000}`, `b@${T0 + 4000}`]);
    expect((await t.fsm.listRuns({})).items).toHaveLength(10);
    const counts = await t.fsm.runCounts();
    expect([counts.get(RunState.RUN_STATE_PENDING), counts.get(RunState.RUN_STATE_SKIPPED)]).toEqual([6, 4]);
    expect(await t.fsm.fireCursor('a')).toEqual({ lastSlotMs: T0 + 5000, nextFireMs: T0 + 6000 });
  });
});

const DAY = 86_400_000;

describe('getJobs (dispatch reads)', () => {
  it('answers jobs the record cache holds without reading the store, equal to what getJob decodes; the rest from the store', async () => {
    t = await openTestFsm();
    await t.apply(put('a', 1000, { payload: Buffer.from('pay-a'), leaseDurationMs: 7000 }), put('b', 1000), put('cold', DAY));
    // Fired jobs enter the record cache (the run lifecycle admits them); 'cold' was only created, due in a day.
    await t.one({ type: 'fireRuns', nowMs: T0 + 1000, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 + 1000 }, { jobId: 'b', slotMs: T0 + 1000 }] });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const store = (t.fsm as any).store as { getMany: (keys: string[]) => Promise<unknown[]>; getSync: (key: string) => unknown };
    const getMany = store.getMany.bind(store);
    const getSync = store.getSync.bind(store);
    // Reads of the store by getJobs, as key lists: a getMany's, or a getSync's one key (store-reads.ts).
    const asked: string[][] = [];
    let recording = false;
    const getJobs = async (ids: string[]) => {
      recording = true;
      try {
        return await t.fsm.getJobs(ids);
      } finally {
        recording = false;
      }
    };
    store.getMany = (keys: string[]) => {
      if (recording) asked.push(keys);
      return getMany(keys);
    };
    store.getSync = (key: string) => {
      if (recording) asked.push([key]);
      return getSync(key);
    };
    const hits = t.fsm.recordCache!.stats.hits;
    const jobs = await getJobs(['a', 'b', 'a', 'bad id!', 'nope']);
    expect(asked).toEqual([['j\0nope']]);
    expect(t.fsm.recordCache!.stats.hits).toBe(hits); // apply's hit counts are apply's own
    expect(jobs.get('a')).toEqual(await t.fsm.getJob('a'));
    expect(jobs.get('a')!.spec!.payload).toEqual(Buffer.from('pay-a'));
    expect(jobs.get('a')!.spec!.leaseDurationMs).toBe(7000);
    expect(jobs.get('b')).toEqual(await t.fsm.getJob('b'));
    expect(jobs.has('bad id!') && jobs.get('bad id!') === undefined).toBe(true);
    expect(jobs.has('nope') && jobs.get('nope') === undefined).toBe(true);
    expect((await getJobs(['cold'])).get('cold')).toEqual(await t.fsm.getJob('cold'));
    expect(asked).toEqual([['j\0nope'], ['j\0cold']]);
    store.getMany = getMany;
    store.getSync = getSync;
    // An update is seen at once (the cache holds what the store holds).
    await t.one({ type: 'updateJob', nowMs: T0 + 1001, jobId: 'a', spec: everySpec(1000, { payload: Buffer.from('new'), leaseDurationMs: 9000 }, T0 + 1000), expectedVersion: 0 });
    expect((await t.fsm.getJobs(['a'])).get('a')!.spec!.payload).toEqual(Buffer.from('new'));
    expect((await t.fsm.getJobs(['a'])).get('a')).toEqual(await t.fsm.getJob('a'));
  });
});

describe('record cache admission of written jobs', () => {
  it('keeps a job written with its next fire within five minutes (its fire reads it from memory), not one due later', async () => {
    t = await openTestFsm();
    await t.apply(put('soon', 60_000), put('later', DAY));
    const cache = t.fsm.recordCache!;
    expect(cache.peek(jobKey('soon'))).toBeDefined();
    expect(cache.peek(jobKey('later'))).toBeUndefined();
    const misses = cache.stats.misses;
    await t.one({ type: 'fireRuns', nowMs: T0 + 60_000, misfireThresholdMs: 60_000, items: [{ jobId: 'soon', slotMs: T0 + 60_000 }] });
    expect(cache.stats.misses).toBe(misses);
    // An edit that moves the next fire into the horizon admits it too (resume, reschedule).
    await t.one({ type: 'updateJob', nowMs: T0, jobId: 'later', spec: everySpec(120_000, {}, T0 + 120_000), expectedVersion: 0 });
    expect(cache.peek(jobKey('later'))).toBeDefined();
  });
});
