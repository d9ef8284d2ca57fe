// putJobs: a batch of creates in one entry answers every item exactly as the same creates made
// one entry at a time would, and leaves the identical state behind.
import { afterEach, describe, expect, it } from 'vitest';
import { JobState } from '../../src/gen/herald/v1/job.js';
import { encodeCommand, SchedulerStateMachine, type FsmCommand, type PutJobsItem } from '../../src/fsm/index.js';
import { atSpec, everySpec, openTestFsm, spec, T0, type TestFsm } from './fsm-test-kit.js';

const open: TestFsm[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((t) => t.close()));
});
async function fresh(): Promise<TestFsm> {
  const t = await openTestFsm();
  open.push(t);
  return t;
}

const item = (jobId: string, s = everySpec(60_000), idempotencyKey = ''): PutJobsItem => ({ jobId, spec: s, idempotencyKey });
const badCron = spec({ schedule: { kind: { $case: 'cron', cron: { expression: '61 * * * *', timeZone: '' } } } });

/** Valid, invalid, duplicate ids and duplicate / pre-existing idempotency keys, mixed. */
function mixedItems(): PutJobsItem[] {
  return [
    item('a', everySpec(60_000), 'k-a'),
    item('bad/id'),
    item('b', badCron),
    item('c', atSpec(T0 + 5000)),
    item('a'), // taken by the first item
    item('d', everySpec(5000), 'k-a'), // same key as the first item: answers job a
    item('e', everySpec(60_000), 'k-old'), // key of a job created before the batch
    item('f', spec({ taskType: '' })),
    item('g', everySpec(60_000), 'tab\there'),
    item('h', everySpec(1000, { priority: 7 }), 'k-h'),
  ];
}

describe('putJobs', () => {
  it('answers each item as a single create would: created, typed errors, duplicates, idempotent replays', async () => {
    const t = await fresh();
    await t.one({ type: 'putJob', nowMs: T0 - 10, jobId: 'old', spec: everySpec(60_000), idempotencyKey: 'k-old' });
    const r = await t.one({ type: 'putJobs', nowMs: T0, items: mixedItems() }, 'jobs');
    const summary = r.items.map((i) => (i.error ? `${i.error.code}:${i.error.reason}` : `${i.created ? 'created' : 'replayed'}:${i.job?.id}`));
    expect(summary).toEqual([
      'created:a',
      'INVALID_ID:job_id',
      'INVALID_CRON:spec.schedule.cron.expression',
      'created:c',
      'ALREADY_EXISTS:',
      'replayed:a',
      'replayed:old',
      'INVALID_SPEC:spec.task_type',
      'INVALID_ARGUMENT:idempotency_key',
      'created:h',
    ]);
    expect(r.items[4]!.error!.message).toMatch(/"a" already exists/);
    expect(r.items[0]!.job).toMatchObject({ id: 'a', version: 1, state: JobState.JOB_STATE_ACTIVE, createdUnixMs: T0, nextFireUnixMs: T0 });
    expect(await t.fsm.getJob('a')).toEqual(r.items[0]!.job);
    for (const missing of ['b', 'd', 'e', 'f', 'g']) expect(await t.fsm.getJob(missing)).toBeUndefined();
    expect((await t.fsm.dueWindow(0, T0 + 10_000, 10)).map((d) => d.jobId)).toEqual(['old', 'a', 'h', 'c']);
    // The batch's keys hold afterwards like any other.
    const again = await t.one({ type: 'putJob', nowMs: T0 + 1, jobId: 'z', spec: everySpec(60_000), idempotencyKey: 'k-h' }, 'job');
    expect(again).toMatchObject({ created: false, job: { id: 'h' } });
  });

  it('leaves the jobs and answers of the same creates applied one entry at a time', async () => {
    const batched = await fresh();
    const single = await fresh();
    const pre: FsmCommand = { type: 'putJob', nowMs: T0 - 10, jobId: 'old', spec: everySpec(60_000), idempotencyKey: 'k-old' };
    await batched.apply(pre);
    await single.apply(pre);
    const batch = await batched.one({ type: 'putJobs', nowMs: T0, items: mixedItems() }, 'jobs');
    const singles = await single.apply(...mixedItems().map((i): FsmCommand => ({ type: 'putJob', nowMs: T0, ...i })));
    expect(batch.items).toEqual(singles.map((r) => {
      if (r.type !== 'job') throw new Error(`unexpected ${r.type}`);
      const { type: _type, ...item } = r;
      return item;
    }));
    const jobsOf = async (t: TestFsm) => (await t.fsm.listJobs({ pageSize: 100 })).items;
    expect(await jobsOf(batched)).toEqual(await jobsOf(single));
  });

  it('is deterministic: replicas applying the same log in different apply batchings hold identical state', async () => {
    const a = await fresh();
    const b = await fresh();
    const log: FsmCommand[] = [
      { type: 'putJobs', nowMs: T0, items: mixedItems() },
      { type: 'putJobs', nowMs: T0 + 1, items: [item('x', everySpec(60_000), 'k-a'), item('y'), item('a')] },
      { type: 'fireRuns', nowMs: T0 + 5, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 }] },
    ];
    await a.apply(...log);
    for (const c of log) await b.apply(c);
    expect(await a.fsm.stateHash()).toBe(await b.fsm.stateHash());
  });

  it('a replica nobody waits on (a follower) encodes no results and reaches the identical state', async () => {
    const leader = await fresh();
    const follower = await fresh();
    const log: FsmCommand[] = [
      { type: 'putJobs', nowMs: T0, items: mixedItems() },
      { type: 'putJob', nowMs: T0 + 1, jobId: 'solo', spec: everySpec(1000), idempotencyKey: '' },
      { type: 'fireRuns', nowMs: T0 + 5, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 }, { jobId: 'solo', slotMs: T0 + 1 }] },
    ];
    const entries = log.map((c, i) => ({ term: 1, index: i + 1, type: 'normal' as const, data: encodeCommand(c) }));
    const all = await leader.fsm.apply(entries);
    const some = await follower.fsm.apply(entries, (index) => index === 2);
    expect(all.every((r) => r.length > 0)).toBe(true);
    expect(some.map((r) => r.length > 0)).toEqual([false, true, false]);
    expect(some[1]).toEqual(all[1]);
    expect(await follower.fsm.stateHash()).toBe(await leader.fsm.stateHash());
    expect(await follower.fsm.getJob('a')).toEqual(await leader.fsm.getJob('a'));
  });

  it('a restart does not apply the batch again', async () => {
    const t = await fresh();
    await t.apply({ type: 'putJobs', nowMs: T0, items: [item('a', everySpec(60_000), 'k1'), item('b')] });
    await t.fsm.sync();
    const hash = await t.fsm.stateHash();
    await t.fsm.close();
    const again = await SchedulerStateMachine.open(t.dir);
    try {
      expect(await again.appliedIndex()).toBe(1);
      // The runtime replays from its log after a restart: an entry at or below the applied index is skipped.
      const replay = await again.apply([
        { term: 1, index: 1, type: 'normal', data: encodeCommand({ type: 'putJobs', nowMs: T0 + 99, items: [item('c'), item('a')] }) },
      ]);
      expect(replay[0]!.length).toBe(0);
      expect(await again.getJob('c')).toBeUndefined();
      expect(await again.stateHash()).toBe(hash);
    } finally {
      await again.close();
      open.splice(open.indexOf(t), 1);
      const { rm } = await import('node:fs/promises');
      await rm(t.dir, { recursive: true, force: true });
    }
  });

  it('refuses more items than a command may carry, changing nothing', async () => {
    const t = await fresh();
    const items = Array.from({ length: 100_001 }, (_, i) => item(`j${i}`));
    const [r] = await t.apply({ type: 'putJobs', nowMs: T0, items });
    expect(r).toMatchObject({ type: 'rejected', error: { code: 'LIMIT_EXCEEDED' } });
    expect(await t.fsm.getJob('j0')).toBeUndefined();
  });
});
