import { afterEach, describe, expect, it } from 'vitest';
import { JobState, MisfirePolicy, OverlapPolicy } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { MAX_SLOTS_PER_FIRE_ITEM, type FsmCommand } from '../../src/fsm/index.js';
import { jitterOffsetMs } from '../../src/fsm/schedule/index.js';
import { everySpec, openTestFsm, spec, T0, type SpecInput, type TestFsm } from './fsm-test-kit.js';

let t: TestFsm;
afterEach(async () => t?.close());

const MIN = 60_000;
const create = (jobId: string, p: SpecInput = {}, nowMs = T0) =>
  t.one({ type: 'putJob', nowMs, jobId, spec: everySpec(MIN, p, T0), idempotencyKey: '' }, 'job');
const fire = (jobId: string, slotMs: number, nowMs = slotMs, misfireThresholdMs = MIN) =>
  t.one({ type: 'fireRuns', nowMs, misfireThresholdMs, items: [{ jobId, slotMs }] }, 'fire');
const state = async (runId: string) => (await t.fsm.getRun(runId))?.state;
const claim = async (runId: string, nowMs: number) => {
  const token = t.nextIndex();
  const r = await t.one({ type: 'claimRuns', nowMs, items: [{ runId, workerId: 'w', leaseDeadlineMs: nowMs + 30_000 }] }, 'claim');
  expect(r.items[0]!.error).toBeUndefined();
  return token;
};
const succeed = (runId: string, fencingToken: number, nowMs: number) =>
  t.one({ type: 'finishRuns', nowMs, items: [{ runId, fencingToken, succeeded: true, output: new Uint8Array(), errorType: '', errorMessage: '', retryable: false, timedOut: false }] }, 'runItems');

describe('fireRuns', () => {
  it('creates one run per slot with a derived id; firing the same slot again is a no-op (I1)', async () => {
    t = await openTestFsm();
    await create('a');
    const first = await fire('a', T0);
    // With a next slot, the result says how its run will be dispatched (the leader's lead and claim behind the fire).
    expect(first.items[0]).toEqual({ created: [`a@${T0}`], missed: [], skipped: [], nextFireMs: T0 + MIN, dispatch: { taskType: 'demo', priority: 0, jittered: false, allowsOverlap: true, jitterWindowMs: 0 } });
    const again = await fire('a', T0, T0 + 10);
    expect(again.items[0]).toEqual({ created: [], missed: [], skipped: [], nextFireMs: T0 + MIN });
    const both = await t.one({ type: 'fireRuns', nowMs: T0 + MIN, misfireThresholdMs: MIN, items: [{ jobId: 'a', slotMs: T0 + MIN }, { jobId: 'a', slotMs: T0 + MIN }] }, 'fire');
    expect(both.items.map((i) => i.created)).toEqual([[`a@${T0 + MIN}`], []]);
    expect((await t.fsm.listRuns({ jobId: 'a' })).items.map((r) => r.id)).toEqual([`a@${T0 + MIN}`, `a@${T0}`]);
    expect((await t.fsm.getJob('a'))?.lastSlotUnixMs).toBe(T0 + MIN);
  });

  it('computes the next fire time from the slot fired, not from now', async () => {
    t = await openTestFsm();
    await create('a');
    // The leader fires late (but within the misfire threshold): next is still slot + interval.
    const r = await fire('a', T0, T0 + 45_000);
    expect(r.items[0]!.nextFireMs).toBe(T0 + MIN);
    expect(await t.fsm.dueWindow(T0 + 1, T0 + 2 * MIN, 10)).toEqual([{ jobId: 'a', slotMs: T0 + MIN }]);
  });

  it('applies jitter from a hash of (job, slot) to scheduled and not-before', async () => {
    t = await openTestFsm();
    await create('j', { jitterMs: 30_000 });
    await fire('j', T0);
    const run = (await t.fsm.getRun(`j@${T0}`))!;
    const offset = jitterOffsetMs('j', T0, 30_000, T0 + MIN);
    expect(run.slotUnixMs).toBe(T0);
    expect(run.scheduledUnixMs).toBe(T0 + offset);
    expect(run.notBeforeUnixMs).toBe(T0 + offset);
    // Not dispatchable before its jittered instant when the reader passes now.
    if (offset > 0) expect(await t.fsm.readyRuns({ limit: 5, nowMs: T0 })).toEqual([]);
    expect((await t.fsm.readyRuns({ limit: 5, nowMs: T0 + offset })).map((r) => r.id)).toEqual([`j@${T0}`]);
  });

  it('a one-off job completes after its only slot and leaves the due index', async () => {
    t = await openTestFsm();
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'o', spec: spec({ schedule: { kind: { $case: 'at', at: { atUnixMs: T0 + 5000 } } } }), idempotencyKey: '' });
    const r = await fire('o', T0 + 5000);
    expect(r.items[0]!.created).toEqual([`o@${T0 + 5000}`]);
    expect(r.items[0]!.nextFireMs).toBe(0);
    expect((await t.fsm.getJob('o'))?.state).toBe(JobState.JOB_STATE_COMPLETED);
    expect(await t.fsm.dueWindow(0, T0 * 2, 10)).toEqual([]);
  });

  it('reports unknown jobs per item without failing the batch', async () => {
    t = await openTestFsm();
    await create('a');
    const r = await t.one({ type: 'fireRuns', nowMs: T0, misfireThresholdMs: MIN, items: [{ jobId: 'nope', slotMs: T0 }, { jobId: 'a', slotMs: T0 }, { jobId: 'bad id!', slotMs: T0 }] }, 'fire');
    expect(r.items[0]!.error?.code).toBe('JOB_NOT_FOUND');
    expect(r.items[1]!.created).toEqual([`a@${T0}`]);
    expect(r.items[2]!.error?.code).toBe('INVALID_ID');
  });
});

describe('misfire policy (slots older than now − threshold)', () => {
  const downtime = async (policy: MisfirePolicy, extra: SpecInput = {}) => {
    t = await openTestFsm();
    await create('m', { misfirePolicy: policy, ...extra });
    // The cluster was down for 10 minutes: slots T0 .. T0+10min are due at once.
    return fire('m', T0, T0 + 10 * MIN + 5);
  };

  it('SKIP records every missed slot MISSED and runs the on-time one only', async () => {
    const r = (await downtime(MisfirePolicy.MISFIRE_POLICY_SKIP)).items[0]!;
    expect(r.missed).toHaveLength(10);
    expect(r.created).toEqual([`m@${T0 + 10 * MIN}`]);
    expect(await state(`m@${T0}`)).toBe(RunState.RUN_STATE_MISSED);
    expect((await t.fsm.getRun(`m@${T0}`))?.reason).toMatch(/SKIP/);
    expect(r.nextFireMs).toBe(T0 + 11 * MIN);
  });

  it('RUN_ONCE (the default) runs only the latest missed slot', async () => {
    t = await openTestFsm();
    await create('m');
    const r = (await fire('m', T0, T0 + 10 * MIN - 1)).items[0]!;
    // Slots T0..T0+9min; +9min is within the threshold (on time), +8min is the latest misfired.
    expect(r.created).toEqual([`m@${T0 + 8 * MIN}`, `m@${T0 + 9 * MIN}`]);
    expect(r.missed).toHaveLength(8);
  });

  it('RUN_ALL runs the latest misfire_max_runs missed slots, the rest MISSED', async () => {
    const r = (await downtime(MisfirePolicy.MISFIRE_POLICY_RUN_ALL, { misfireMaxRuns: 3 })).items[0]!;
    expect(r.missed).toEqual([0, 1, 2, 3, 4, 5, 6].map((k) => `m@${T0 + k * MIN}`));
    expect(r.created).toEqual([7, 8, 9, 10].map((k) => `m@${T0 + k * MIN}`));
  });

  it('a starting deadline records late slots MISSED whatever the policy', async () => {
    const r = (await downtime(MisfirePolicy.MISFIRE_POLICY_RUN_ALL, { startingDeadlineMs: 1000 })).items[0]!;
    expect(r.missed).toHaveLength(10);
    expect((await t.fsm.getRun(`m@${T0}`))?.reason).toMatch(/starting deadline/);
    expect(r.created).toEqual([`m@${T0 + 10 * MIN}`]);
  });

  it('a very long gap is handled in bounded steps; every slot gets a run or a record (I2)', async () => {
    t = await openTestFsm();
    await t.one({ type: 'putJob', nowMs: T0, jobId: 's', spec: everySpec(1000, {}, T0), idempotencyKey: '' });
    const slots = MAX_SLOTS_PER_FIRE_ITEM + 500;
    const now = T0 + slots * 1000;
    const first = (await fire('s', T0, now, 500)).items[0]!;
    expect(first.missed).toHaveLength(MAX_SLOTS_PER_FIRE_ITEM);
    expect(first.created).toEqual([]);
    expect(first.nextFireMs).toBe(T0 + MAX_SLOTS_PER_FIRE_ITEM * 1000);
    const second = (await fire('s', first.nextFireMs, now, 500)).items[0]!;
    expect(second.missed.length + second.created.length).toBe(501);
    expect(second.created).toEqual([`s@${now - 1000}`, `s@${now}`]); // RUN_ONCE + the on-time slot
    expect(second.nextFireMs).toBe(now + 1000);
  });
});

describe('overlap policy', () => {
  it('FORBID records SKIPPED while a run is active', async () => {
    t = await openTestFsm();
    await create('f', { overlapPolicy: OverlapPolicy.OVERLAP_POLICY_FORBID });
    await fire('f', T0);
    const r = (await fire('f', T0 + MIN)).items[0]!;
    expect(r.skipped).toEqual([`f@${T0 + MIN}`]);
    expect(await state(`f@${T0 + MIN}`)).toBe(RunState.RUN_STATE_SKIPPED);
    const tok = await claim(`f@${T0}`, T0 + MIN + 1);
    await succeed(`f@${T0}`, tok, T0 + MIN + 2);
    expect((await fire('f', T0 + 2 * MIN)).items[0]!.created).toEqual([`f@${T0 + 2 * MIN}`]);
  });

  it('BUFFER_ONE queues one run behind the active one (not dispatchable until it ends), then SKIPs', async () => {
    t = await openTestFsm();
    await create('b', { overlapPolicy: OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE });
    await fire('b', T0);
    const tok = await claim(`b@${T0}`, T0 + 1);
    expect((await fire('b', T0 + MIN)).items[0]!.created).toEqual([`b@${T0 + MIN}`]);
    expect((await fire('b', T0 + 2 * MIN)).items[0]!.skipped).toEqual([`b@${T0 + 2 * MIN}`]);
    expect(await t.fsm.readyRuns({ limit: 10 })).toEqual([]);
    const refused = await t.one({ type: 'claimRuns', nowMs: T0 + 2 * MIN, items: [{ runId: `b@${T0 + MIN}`, workerId: 'w', leaseDeadlineMs: T0 * 2 }] }, 'claim');
    expect(refused.items[0]!.error?.reason).toBe('NOT_READY');
    await succeed(`b@${T0}`, tok, T0 + 2 * MIN + 1);
    expect((await t.fsm.readyRuns({ limit: 10 })).map((r) => r.id)).toEqual([`b@${T0 + MIN}`]);
    expect((await t.fsm.getJob('b'))?.activeRuns).toBe(1);
  });

  it('REPLACE cancels the active run and tells the server which worker to signal', async () => {
    t = await openTestFsm();
    await create('r', { overlapPolicy: OverlapPolicy.OVERLAP_POLICY_REPLACE });
    await fire('r', T0);
    const tok = await claim(`r@${T0}`, T0 + 1);
    const r = await fire('r', T0 + MIN);
    expect(r.items[0]!.created).toEqual([`r@${T0 + MIN}`]);
    expect(r.signals).toEqual([{ runId: `r@${T0}`, workerId: 'w', fencingToken: tok }]);
    expect(await state(`r@${T0}`)).toBe(RunState.RUN_STATE_CANCELLED);
    const late = await succeed(`r@${T0}`, tok, T0 + MIN + 1);
    expect(late.items[0]!.error).toMatchObject({ code: 'STALE_FENCING_TOKEN', reason: 'NOT_RUNNING' });
  });

  it('ALLOW runs slots side by side', async () => {
    t = await openTestFsm();
    await create('x');
    await fire('x', T0);
    await fire('x', T0 + MIN);
    expect((await t.fsm.getJob('x'))?.activeRuns).toBe(2);
  });
});

describe('trigger and backfill', () => {
  it('trigger creates a manual run now, idempotent by key; works on a paused job', async () => {
    t = await openTestFsm();
    await create('a');
    await t.one({ type: 'pauseJob', nowMs: T0, jobId: 'a', note: '' });
    const r1 = await t.one({ type: 'triggerJob', nowMs: T0 + 7, jobId: 'a', idempotencyKey: 'k', ignoreOverlap: false }, 'trigger');
    expect(r1.run).toMatchObject({ id: `a@${T0 + 7}~m0`, manual: true, state: RunState.RUN_STATE_PENDING });
    const r2 = await t.one({ type: 'triggerJob', nowMs: T0 + 9, jobId: 'a', idempotencyKey: 'k', ignoreOverlap: false }, 'trigger');
    expect(r2.created).toBe(false);
    expect(r2.run?.id).toBe(r1.run?.id);
    const r3 = await t.one({ type: 'triggerJob', nowMs: T0 + 7, jobId: 'a', idempotencyKey: '', ignoreOverlap: false }, 'trigger');
    expect(r3.run?.id).toBe(`a@${T0 + 7}~m1`);
  });

  it('a keyed trigger refused with JOB_NOT_FOUND keeps that answer: a late duplicate never runs the job', async () => {
    t = await openTestFsm();
    const refused = await t.one({ type: 'triggerJob', nowMs: T0, jobId: 'b', idempotencyKey: 'k', ignoreOverlap: false }, 'trigger');
    expect(refused.error?.code).toBe('JOB_NOT_FOUND');
    await create('b');
    const late = await t.one({ type: 'triggerJob', nowMs: T0 + 5, jobId: 'b', idempotencyKey: 'k', ignoreOverlap: false }, 'trigger');
    expect(late).toMatchObject({ created: false, error: { code: 'JOB_NOT_FOUND' } });
    expect((await t.fsm.listRuns({ jobId: 'b' })).items).toEqual([]);
    // A new request (new key) runs it.
    expect((await t.one({ type: 'triggerJob', nowMs: T0 + 6, jobId: 'b', idempotencyKey: 'k2', ignoreOverlap: false }, 'trigger')).created).toBe(true);
  });

  it('backfill creates flagged runs for past slots below the cursor, skipping ones that ran', async () => {
    t = await openTestFsm();
    await t.one({ type: 'putJob', nowMs: T0 - 10 * MIN, jobId: 'a', spec: everySpec(MIN, {}, T0 - 10 * MIN), idempotencyKey: '' });
    // Scheduler handled T0-10min .. T0 (RUN_ONCE: most MISSED).
    await fire('a', T0, T0);
    const r = await t.one({ type: 'backfillJob', nowMs: T0 + 5, jobId: 'a', fromMs: T0 - 5 * MIN, toMs: T0 + 10 * MIN, maxRuns: 100, ignoreOverlap: false }, 'backfill');
    // -1 and 0 were on time, -2 the RUN_ONCE catch-up, -10..-3 MISSED: -5..-3 get backfilled;
    // slots after the cursor are the scheduler's.
    expect(r.runIds).toEqual([-5, -4, -3].map((k) => `a@${T0 + k * MIN}~b`));
    expect((await t.fsm.getRun(r.runIds[0]!))?.backfilled).toBe(true);
    const again = await t.one({ type: 'backfillJob', nowMs: T0 + 6, jobId: 'a', fromMs: T0 - 5 * MIN, toMs: T0, maxRuns: 100, ignoreOverlap: false }, 'backfill');
    expect(again.runIds).toEqual([]);
    const tooMany = await t.one({ type: 'backfillJob', nowMs: T0 + 6, jobId: 'a', fromMs: T0 - 10 * MIN, toMs: T0, maxRuns: 3, ignoreOverlap: false }, 'backfill');
    expect(tooMany.error?.code).toBe('LIMIT_EXCEEDED');
  });
});

describe('bounded job records', () => {
  it('active runs live in an index, not in the job record: the record stays small while runs pile up', async () => {
    t = await openTestFsm();
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'p', spec: everySpec(1000, { maxPendingRuns: 1000 }, T0), idempotencyKey: '' });
    for (let k = 0; k < 300; k += 50) {
      await t.one({ type: 'fireRuns', nowMs: T0 + (k + 49) * 1000, misfireThresholdMs: 3_600_000, items: [{ jobId: 'p', slotMs: T0 + (k + 49) * 1000 }] });
    }
    const job = (await t.fsm.getJob('p'))!;
    expect(job.activeRuns).toBe(300);
    // The stored job record (not the Job view) stays the same size however many runs are active.
    const store = (t.fsm as unknown as { store: { get(k: string): Promise<Uint8Array | undefined> } }).store;
    expect((await store.get('j\0p'))!.length).toBeLessThan(200);
    // Delete finds all 300 through the index.
    const d = await t.one({ type: 'deleteJob', nowMs: T0 + 400_000, jobId: 'p', expectedVersion: 0 }, 'delete');
    expect(d.cancelledRuns).toBe(300);
  });
});

describe('cron schedules through the FSM', () => {
  it('fires a zoned cron job slot by slot, each next fire from the slot just fired', async () => {
    t = await openTestFsm();
    const cron = spec({ schedule: { kind: { $case: 'cron', cron: { expression: '0 30 2 * * *', timeZone: 'Europe/Berlin' } } } });
    // 2030-03-30 12:00 UTC; Berlin springs forward on 2030-03-31 (02:00 → 03:00): 02:30 does not exist.
    const now = Date.UTC(2030, 2, 30, 12);
    const put = await t.one({ type: 'putJob', nowMs: now, jobId: 'c', spec: cron, idempotencyKey: '' }, 'job');
    const first = put.job!.nextFireUnixMs;
    expect(new Date(first).toISOString()).toBe('2030-03-31T01:00:00.000Z'); // shifted to 03:00 CEST
    const f1 = (await fire('c', first)).items[0]!;
    expect(f1.created).toEqual([`c@${first}`]);
    expect(new Date(f1.nextFireMs).toISOString()).toBe('2030-04-01T00:30:00.000Z'); // 02:30 CEST
    const f2 = (await fire('c', f1.nextFireMs)).items[0]!;
    expect(new Date(f2.nextFireMs).toISOString()).toBe('2030-04-02T00:30:00.000Z');
  });
});

describe('starting deadline with jitter', () => {
  it('counts from the jittered instant, the same way the claim check does', async () => {
    t = await openTestFsm();
    // Find a job id whose first slot gets a jitter offset well above the deadline.
    const id = Array.from({ length: 50 }, (_, i) => `jd-${i}`).find((j) => jitterOffsetMs(j, T0, 50_000, T0 + MIN) > 20_000)!;
    const offset = jitterOffsetMs(id, T0, 50_000, T0 + MIN);
    await t.one({ type: 'putJob', nowMs: T0, jobId: id, spec: everySpec(MIN, { jitterMs: 50_000, startingDeadlineMs: 10_000 }, T0), idempotencyKey: '' });
    // Fired late relative to the slot, but within the deadline of its jittered instant: it runs.
    const r = (await fire(id, T0, T0 + offset + 5_000)).items[0]!;
    expect(r.created).toEqual([`${id}@${T0}`]);
    expect((await t.fsm.getRun(`${id}@${T0}`))?.scheduledUnixMs).toBe(T0 + offset);
  });
});

describe('apply does not depend on how entries are batched', () => {
  // Found by the scheduler simulator (seed 61, 5 nodes): a buffered run's held count was bumped
  // after its id was set, so a job record read from the store counted it twice and one whose count
  // an earlier entry of the same apply had set counted it once — replicas diverged.
  it('BUFFER_ONE: one entry per apply and all entries in one apply leave the same state', async () => {
    // No record cache on the one-at-a-time machine: every entry reads the job as stored, as a
    // replica does after a restart.
    const one = await openTestFsm({ recordCacheBytes: 0 });
    const all = await openTestFsm();
    try {
      const run = (slot: number) => `b@${slot}`;
      const base = one.nextIndex();
      // Entry indexes are the same on both machines, so claim tokens (the claim's index) are too.
      const fire = (slotMs: number): FsmCommand => ({ type: 'fireRuns', nowMs: slotMs, misfireThresholdMs: MIN, items: [{ jobId: 'b', slotMs }] });
      const claim = (slotMs: number, nowMs: number): FsmCommand => ({ type: 'claimRuns', nowMs, items: [{ runId: run(slotMs), workerId: 'w', leaseDeadlineMs: nowMs + 30_000 }] });
      const finish = (slotMs: number, claimAt: number, nowMs: number): FsmCommand => ({
        type: 'finishRuns',
        nowMs,
        items: [{ runId: run(slotMs), fencingToken: base + claimAt, succeeded: true, output: new Uint8Array(), errorType: '', errorMessage: '', retryable: false, timedOut: false }],
      });
      const s = (i: number) => T0 + i * MIN;
      const cmds: FsmCommand[] = [
        { type: 'putJob', nowMs: T0, jobId: 'b', spec: everySpec(MIN, { overlapPolicy: OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE }, T0), idempotencyKey: '' },
        fire(s(0)),
        claim(s(0), s(0) + 1), // entry 2
        fire(s(1)), // buffered behind s(0)
        finish(s(0), 2, s(1) + 1),
        claim(s(1), s(1) + 2), // entry 5
        fire(s(2)), // buffered behind s(1)
        finish(s(1), 5, s(2) + 1),
        claim(s(2), s(2) + 2), // entry 8
        finish(s(2), 8, s(2) + 3), // idle: nothing held, nothing active
        fire(s(3)),
        claim(s(3), s(3) + 1), // entry 11
        fire(s(4)), // buffered behind s(3)
      ];
      for (const c of cmds) await one.apply(c);
      await all.apply(...cmds);
      expect(await one.fsm.stateHash()).toBe(await all.fsm.stateHash());
      // s(4)'s run waits behind s(3)'s; finishing s(3) makes it the one dispatchable.
      for (const t of [one, all]) {
        expect(await t.fsm.readyRuns({ limit: 10 })).toEqual([]);
        await t.apply(finish(s(3), 11, s(4) + 1));
        expect((await t.fsm.readyRuns({ limit: 10 })).map((r) => r.id)).toEqual([run(s(4))]);
      }
      expect(await one.fsm.stateHash()).toBe(await all.fsm.stateHash());
    } finally {
      await one.close();
      await all.close();
    }
  });
});
