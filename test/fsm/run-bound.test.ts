// The hard retention bound, kept by apply itself: with no trim command ever proposed (a leader's
// trimmer starved of CPU), a job's stored terminal runs never exceed max_runs + hardRunSlack, the
// run records, the s\0 state index, the per-state counters, the job's count and its trim index
// entry stay consistent, and the state is the same however entries are grouped into apply calls.
import { ClassicLevel } from 'classic-level';
import { describe, expect, it } from 'vitest';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { decodeResult, encodeCommand, type FsmCommand, type FsmResult } from '../../src/fsm/index.js';
import type { Entry } from '../../src/raft/types.js';
import { decodeJobRecord } from '../../src/fsm/store/records.js';
import { decodeCount } from '../../src/fsm/store/index-key-writes.js';
import { counterKey } from '../../src/fsm/store/key-layout.js';
import { hardRunSlack } from '../../src/fsm/store/retention.js';
import { everySpec, openTestFsm, T0, type TestFsm } from './fsm-test-kit.js';

const MISSED = RunState.RUN_STATE_MISSED;
const DAY = 86_400_000;

function storeOf(t: TestFsm): ClassicLevel<string, Uint8Array> {
  return (t.fsm as unknown as { store: ClassicLevel<string, Uint8Array> }).store;
}

async function keysIn(t: TestFsm, prefix: string): Promise<string[]> {
  return storeOf(t).keys({ gte: prefix, lt: `${prefix}\xff` }).all();
}

/** Stored runs of `jobId`, checked against every index and counter that derives from them. */
async function consistentRuns(t: TestFsm, jobId: string): Promise<number> {
  const runs = await keysIn(t, `r\0${jobId}\0`);
  const missedIndex = await keysIn(t, `s\0${String(MISSED).padStart(2, '0')}\0${jobId}\0`);
  expect(missedIndex.map((k) => k.slice(k.indexOf(`\0${jobId}\0`)))).toEqual(runs.map((k) => k.slice(1)));
  const counter = decodeCount(await storeOf(t).get(counterKey(MISSED)));
  expect(counter).toBe(runs.length);
  const rec = decodeJobRecord((await storeOf(t).get(`j\0${jobId}`))!);
  expect(rec.terminalRuns).toBe(runs.length);
  const trimKeys = await keysIn(t, 'h\0');
  expect(trimKeys).toHaveLength(runs.length > 0 ? 1 : 0);
  if (runs.length > 0) expect(trimKeys[0]).toBe(`h\0${String(rec.trimDueMs).padStart(15, '0')}\0${jobId}`);
  return runs.length;
}

/** One fire per second, each slot already past its 1 ms starting deadline: every run ends MISSED. */
function fires(from: number, n: number, slotsPerFire = 1): FsmCommand[] {
  return Array.from({ length: n }, (_, k) => {
    const first = from + k * slotsPerFire;
    const slots = Array.from({ length: slotsPerFire }, (_, s) => ({ jobId: 'm', slotMs: T0 + (first + s) * 1000 }));
    return { type: 'fireRuns', nowMs: T0 + (first + slotsPerFire - 1) * 1000 + 500, misfireThresholdMs: 60_000, items: slots } as FsmCommand;
  });
}

describe('hard retention bound (no trim command)', () => {
  it('MISSED slots of a max_runs 10 job: stored runs stay within max_runs + slack, indexes and counters consistent, same state per entry and per batch', async () => {
    const bound = 10 + hardRunSlack(10);
    const put: FsmCommand = { type: 'putJob', nowMs: T0, jobId: 'm', spec: everySpec(1000, { startingDeadlineMs: 1, retention: { maxRuns: 10, maxAgeMs: DAY } }, T0), idempotencyKey: '' };
    const cmds = [put, ...fires(0, 120)];
    const one = await openTestFsm({ recordCacheBytes: 0 });
    const all = await openTestFsm();
    try {
      let peak = 0;
      for (const c of cmds) {
        await one.apply(c);
        peak = Math.max(peak, await consistentRuns(one, 'm'));
      }
      // It did fill past max_runs (the bound acted, no trim ran) and never past the bound.
      expect(peak).toBe(bound);
      expect(new Set((await one.fsm.listRuns({ jobId: 'm', pageSize: 1000 })).items.map((r) => r.state))).toEqual(new Set([MISSED]));
      await all.apply(...cmds);
      expect(await consistentRuns(all, 'm')).toBeLessThanOrEqual(bound);
      expect(await all.fsm.stateHash()).toBe(await one.fsm.stateHash());
      // The newest slots are the ones kept.
      const kept = (await one.fsm.listRuns({ jobId: 'm', pageSize: 1000 })).items.map((r) => Number(r.scheduledUnixMs));
      expect(Math.max(...kept)).toBe(T0 + 119_000);
      expect(Math.min(...kept)).toBe(T0 + (120 - kept.length) * 1000);
    } finally {
      await one.close();
      await all.close();
    }
  });

  it('a fire carrying many slots at once is trimmed in the same command, and a job far past the bound comes down in bounded steps', async () => {
    const t = await openTestFsm();
    try {
      await t.one({ type: 'putJob', nowMs: T0, jobId: 'm', spec: everySpec(1000, { startingDeadlineMs: 1, retention: { maxRuns: 10, maxAgeMs: DAY } }, T0), idempotencyKey: '' });
      // 50 slots in one command: the same apply deletes back to max_runs.
      await t.apply(...fires(0, 1, 50));
      expect(await consistentRuns(t, 'm')).toBe(10);
      // Then single slots again: within the bound after every one.
      for (const c of fires(50, 30)) {
        await t.apply(c);
        expect(await consistentRuns(t, 'm')).toBeLessThanOrEqual(10 + hardRunSlack(10));
      }
      // A retention of 1,000 filled to 300, then lowered to 10 (no trim command follows): each
      // command that ends one run deletes at most that run plus the slack, so the job comes down
      // to the bound over several bounded applies.
      const wide = everySpec(1000, { startingDeadlineMs: 1, retention: { maxRuns: 1000, maxAgeMs: DAY } }, T0);
      await t.one({ type: 'updateJob', nowMs: T0 + 80_000, jobId: 'm', spec: wide, expectedVersion: 0 });
      await t.apply(...fires(80, 3, 100));
      expect(await consistentRuns(t, 'm')).toBe(310);
      const narrow = everySpec(1000, { startingDeadlineMs: 1, retention: { maxRuns: 10, maxAgeMs: DAY } }, T0);
      await t.one({ type: 'updateJob', nowMs: T0 + 380_000, jobId: 'm', spec: narrow, expectedVersion: 0 });
      let stored = await consistentRuns(t, 'm');
      const steps: number[] = [];
      for (const c of fires(380, 80)) {
        await t.apply(c);
        const now = await consistentRuns(t, 'm');
        steps.push(stored + 1 - now);
        stored = now;
      }
      expect(Math.max(...steps)).toBe(1 + hardRunSlack(10));
      expect(stored).toBeLessThanOrEqual(10 + hardRunSlack(10));
    } finally {
      await t.close();
    }
  });
});

describe('retention state and batching', () => {
  // A job's trim due time must not depend on which earlier commands shared the trim's apply call:
  // a run that ended earlier in the batch, later in history order than the first run the trim
  // keeps and finished before it, made the batch's due time earlier than the per-entry one (the
  // batch folded the earliest finish of all its commands over the due time the trim had set).
  // Slots 10-17 end first; then, in one batch, slot 8 ends, then the slot the trim keeps first.
  const cases = [
    {
      name: 'the hard bound trims',
      // 13 terminal (slots 0-4, 10-17); slot 8 ends (14, at the bound), then slot 5 (15: past it,
      // the bound deletes slots 0-4 and keeps slot 5 first).
      early: [0, 1, 2, 3, 4],
      kept: 5,
      trim: false,
    },
    {
      name: 'a trim command trims',
      // 10 terminal (slots 0-1, 10-17); slot 8 ends, then slot 2, then a trim deletes slots 0-1.
      early: [0, 1],
      kept: 2,
      trim: true,
    },
  ];
  for (const c of cases) {
    it(`${c.name} after runs ended out of history order in the same batch: same state per entry and per batch`, async () => {
      const put: FsmCommand = { type: 'putJob', nowMs: T0, jobId: 'm', spec: everySpec(1000, { retention: { maxRuns: 10, maxAgeMs: DAY } }, T0), idempotencyKey: '' };
      const fire: FsmCommand = { type: 'fireRuns', nowMs: T0 + 18_500, misfireThresholdMs: 60_000, items: Array.from({ length: 18 }, (_, s) => ({ jobId: 'm', slotMs: T0 + s * 1000 })) };
      const setup = await openTestFsm();
      let ids: string[];
      try {
        await setup.apply(put, fire);
        ids = (await setup.fsm.listRuns({ jobId: 'm', pageSize: 1000 })).items.map((r) => r.id).sort();
      } finally {
        await setup.close();
      }
      // The fire also catches up to its own time: slot 18 waits throughout.
      expect(ids).toHaveLength(19);
      const mark = (nowMs: number, ...slots: number[]): FsmCommand => ({ type: 'markRuns', nowMs, items: slots.map((s) => ({ runId: ids[s]!, outcome: 'missed', reason: 'late' })) });
      const before = [put, fire, mark(T0 + 20_000, ...c.early, 10, 11, 12, 13, 14, 15, 16, 17)];
      const batch = [mark(T0 + 30_000, 8), mark(T0 + 31_000, c.kept)];
      if (c.trim) batch.push({ type: 'trimHistory', nowMs: T0 + 32_000, jobIds: ['m'], maxIdempotencyKeys: 0 });
      const one = await openTestFsm();
      const all = await openTestFsm();
      try {
        await one.apply(...before);
        await all.apply(...before);
        for (const cmd of batch) await one.apply(cmd);
        await all.apply(...batch);
        const rec = async (t: TestFsm) => decodeJobRecord((await storeOf(t).get('j\0m'))!);
        for (const t of [one, all]) {
          expect(decodeCount(await storeOf(t).get(counterKey(MISSED)))).toBe(10);
          expect((await rec(t)).terminalRuns).toBe(10);
          expect((await t.fsm.listRuns({ jobId: 'm', pageSize: 100 })).items.map((r) => r.id)).not.toContain(ids[c.early.at(-1)!]);
        }
        // Due when the first run kept (which ended last) is a retention age old.
        expect((await rec(one)).trimDueMs).toBe(T0 + 31_000 + DAY + 1);
        expect((await rec(all)).trimDueMs).toBe((await rec(one)).trimDueMs);
        expect(await all.fsm.stateHash()).toBe(await one.fsm.stateHash());
      } finally {
        await one.close();
        await all.close();
      }
    });
  }
});

describe('hard retention bound: counters', () => {
  // herald_runs{state} on /metrics is the replicated per-state counters (runCounts, from the
  // scheduler node's gauge loop): a run apply trims must leave them as a trim command's does,
  // on the replica that evaluates the entries and on one that writes its effects instead.
  it('a trim by apply lowers the per-state run counters as a trim command does, evaluated and through effects', async () => {
    const leader = await openTestFsm();
    const follower = await openTestFsm();
    let index = 0;
    const step = async (...cmds: FsmCommand[]): Promise<FsmResult[]> => {
      const entries: Entry[] = cmds.map((c) => ({ term: 1, index: ++index, type: 'normal', data: encodeCommand(c) }));
      const { results, effects } = await leader.fsm.applyCapturing(entries);
      expect(await follower.fsm.applyEffects(effects!)).toBe('applied');
      return results.map(decodeResult);
    };
    const stored = async (t: TestFsm, jobId: string): Promise<number> => (await t.fsm.listRuns({ jobId, pageSize: 1000 })).items.length;
    /** Both replicas' counters against the runs they store, and the MISSED count. */
    const counted = async (): Promise<number> => {
      const missed: number[] = [];
      for (const t of [leader, follower]) {
        const runs = (await stored(t, 'b')) + (await stored(t, 't'));
        const counts = await t.fsm.runCounts();
        expect(counts.get(MISSED)).toBe(runs);
        expect([...counts].filter(([s]) => s !== MISSED).every(([, n]) => n === 0)).toBe(true);
        missed.push(counts.get(MISSED)!);
      }
      expect(missed[1]).toBe(missed[0]);
      expect(await follower.fsm.stateHash()).toBe(await leader.fsm.stateHash());
      return missed[0]!;
    };
    const spec = (maxRuns: number) => everySpec(1000, { startingDeadlineMs: 1, retention: { maxRuns, maxAgeMs: DAY } }, T0);
    try {
      // 'b' is held by apply's bound; 't' (retention 1,000) is left to a trim command.
      await step(
        { type: 'putJob', nowMs: T0, jobId: 'b', spec: spec(10), idempotencyKey: '' },
        { type: 'putJob', nowMs: T0, jobId: 't', spec: spec(1000), idempotencyKey: '' },
      );
      let before = await counted();
      let trimmedByApply = 0;
      const fire = (k: number): FsmCommand => ({ type: 'fireRuns', nowMs: T0 + k * 1000 + 500, misfireThresholdMs: 60_000, items: ['b', 't'].map((jobId) => ({ jobId, slotMs: T0 + k * 1000 })) });
      // Three seconds at a time: one entry per call, then all three in one call, in turn.
      for (let g = 0; g < 10; g++) {
        const fires = [0, 1, 2].map((i) => fire(3 * g + i));
        for (const call of g % 2 === 0 ? fires.map((f) => [f]) : [fires]) {
          await step(...call);
          const now = await counted();
          // Two runs recorded MISSED per fire; what is missing went to apply's trims.
          trimmedByApply += before + 2 * call.length - now;
          before = now;
        }
      }
      expect(trimmedByApply).toBeGreaterThan(0);
      expect(await stored(leader, 'b')).toBeLessThanOrEqual(10 + hardRunSlack(10));
      expect(await stored(leader, 't')).toBe(30);
      expect(before).toBe(30 + (await stored(leader, 'b')));
      expect(trimmedByApply).toBe(30 - (await stored(leader, 'b')));
      // The trim command's trim, for comparison: the counters drop by what it reports.
      await step({ type: 'updateJob', nowMs: T0 + 30_000, jobId: 't', spec: spec(10), expectedVersion: 0 });
      const [r] = await step({ type: 'trimHistory', nowMs: T0 + 30_100, jobIds: ['t'], maxIdempotencyKeys: 0 });
      expect(r).toMatchObject({ type: 'trim', runsTrimmed: 20 });
      expect(await counted()).toBe(before - 20);
    } finally {
      await leader.close();
      await follower.close();
    }
  });
});
