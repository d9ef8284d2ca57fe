// The ended-runs tally behind JobService.CountRuns: minutes and the 24 h window, and on a real
// state machine: a tally seeded from the store equals one kept live through every kind of run
// change (end, re-drive, trim, delete), after a reopen and after a restore.
// (model.property.test.ts checks the same on random command sequences, through effects too.)
import { describe, expect, it } from 'vitest';
import { encodeCommand, finishFailure, finishSuccess, type FsmCommand } from '../../src/fsm/index.js';
import { COUNTED_STATES, EndedRunsTally, MINUTE_MS, TALLY_WINDOW_MS } from '../../src/fsm/store/ended-runs-tally.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { atSpec, freshFsmsPerTest, openTestFsm, type TestFsm } from './fsm-test-kit.js';

const { SUCCEEDED, FAILED, DEAD, CANCELLED, RUNNING } = {
  SUCCEEDED: RunState.RUN_STATE_SUCCEEDED,
  FAILED: RunState.RUN_STATE_FAILED,
  DEAD: RunState.RUN_STATE_DEAD,
  CANCELLED: RunState.RUN_STATE_CANCELLED,
  RUNNING: RunState.RUN_STATE_RUNNING,
};
const HOUR = 3_600_000;

describe('EndedRunsTally', () => {
  // 30 s into a minute, so "an hour ago" falls mid-minute.
  const NOW = Date.UTC(2026, 11, 6, 9, 0, 30);

  it('counts by the minute a run reached its state, from the asked instant rounded down to its minute', () => {
    const t = new EndedRunsTally(() => NOW);
    t.add(SUCCEEDED, NOW - 10_000, 1);
    t.add(SUCCEEDED, NOW - 59 * 60_000, 1);
    t.add(SUCCEEDED, NOW - HOUR - 20_000, 1); // 09:00:10 an hour before: in the minute asked from
    t.add(SUCCEEDED, NOW - HOUR - 40_000, 1); // 07:59:50: the minute before
    t.add(DEAD, NOW - 1000, 1);
    t.add(DEAD, NOW - 2000, 1);
    t.add(DEAD, NOW - 2000, -1); // left DEAD again (a re-drive)
    t.add(RUNNING, NOW, 1); // not counted
    t.add(CANCELLED, 0, 1); // never reached: not counted
    const c = t.count(NOW - HOUR);
    expect(c.fromMs).toBe(Date.UTC(2026, 11, 6, 8, 0, 0));
    expect(c.counts.get(SUCCEEDED)).toBe(3);
    expect(c.counts.get(DEAD)).toBe(1);
    expect(c.counts.get(CANCELLED)).toBe(0);
    expect(c.counts.has(RUNNING)).toBe(false);
    expect([...c.counts.keys()].sort()).toEqual([...COUNTED_STATES].sort());
    expect(t.count(NOW - 30_000).counts.get(SUCCEEDED)).toBe(1);
  });

  it('keeps 24 hours: older minutes are dropped, and changes to them ignored once they are', () => {
    let now = NOW;
    const t = new EndedRunsTally(() => now);
    t.add(FAILED, NOW - 23 * HOUR, 1);
    t.add(FAILED, NOW - 25 * HOUR, 1);
    // 0 (or anything older) asks for the whole window, which starts 24 h back.
    let c = t.count(0);
    expect(c.fromMs).toBe(Math.floor((NOW - TALLY_WINDOW_MS) / MINUTE_MS) * MINUTE_MS);
    expect(c.counts.get(FAILED)).toBe(1);
    expect(t.count(NOW - 48 * HOUR).counts.get(FAILED)).toBe(1);
    now += 2 * HOUR;
    expect(t.count(0).counts.get(FAILED)).toBe(0);
    // A run that left FAILED in a dropped minute: nothing goes negative, later minutes count on.
    t.add(FAILED, NOW - 23 * HOUR, -1);
    t.add(FAILED, now - 1000, 1);
    c = t.count(0);
    expect(c.counts.get(FAILED)).toBe(1);
    expect(c.fromMs).toBe(Math.floor((now - TALLY_WINDOW_MS) / MINUTE_MS) * MINUTE_MS);
  });
});

describe('CountRuns on the state machine', () => {
  const { fresh, release } = freshFsmsPerTest();
  // Near the real clock: the tally's window is the node's last 24 h.
  const T = Math.floor(Date.now() / MINUTE_MS) * MINUTE_MS - 3 * HOUR;
  const ids = Array.from({ length: 8 }, (_, i) => `j${i}`);
  const create: FsmCommand = { type: 'putJobs', nowMs: T - 1000, items: ids.map((jobId) => ({ jobId, spec: atSpec(T, { retry: { maxAttempts: 2 } }), idempotencyKey: '' })) };
  const fire: FsmCommand = { type: 'fireRuns', nowMs: T, misfireThresholdMs: 60_000, items: ids.map((jobId) => ({ jobId, slotMs: T })) };
  const run = (i: number) => `j${i}@${T}`;
  const claim = (at: number, ...is: number[]): FsmCommand => ({ type: 'claimRuns', nowMs: at, items: is.map((i) => ({ runId: run(i), workerId: 'w', leaseDeadlineMs: at + 30_000 })) });

  /** The fencing token of a run's current attempt. */
  async function tok(t: TestFsm, i: number): Promise<number> {
    return (await t.fsm.getRun(run(i)))!.fencingToken;
  }

  async function counts(t: TestFsm, sinceMs = 0): Promise<Partial<Record<RunState, number>>> {
    const { counts: c } = await t.fsm.countRuns(sinceMs);
    return Object.fromEntries([...c].filter(([, n]) => n !== 0));
  }

  /** Counted from the records themselves (ListRuns), by state and when they reached it. */
  async function scanned(t: TestFsm, sinceMs = 0): Promise<Partial<Record<RunState, number>>> {
    const out: Partial<Record<RunState, number>> = {};
    for (const r of (await t.fsm.listRuns({ pageSize: 1000 })).items) {
      const at = r.state === FAILED ? r.attempts[r.attempts.length - 1]!.endedUnixMs : r.finishedUnixMs;
      if (!COUNTED_STATES.includes(r.state) || at < Math.floor(sinceMs / MINUTE_MS) * MINUTE_MS) continue;
      out[r.state] = (out[r.state] ?? 0) + 1;
    }
    return out;
  }

  it('a tally kept live equals one seeded from the store, through ends, re-drives, trims and deletes', async () => {
    const t = await fresh();
    await t.apply(create, fire);
    // Seeded now (nothing ended yet), then follows apply.
    expect(await counts(t)).toEqual({});
    const m = (k: number) => T + k * MINUTE_MS;
    await t.apply(claim(m(1), 0, 1, 2, 3, 4, 5));
    const k = await tok(t, 0);
    await t.apply(
      { type: 'finishRuns', nowMs: m(2), items: [finishSuccess(run(0), k), finishSuccess(run(1), k)] },
      { type: 'finishRuns', nowMs: m(90), items: [finishFailure(run(2), k, { type: 'E', retryable: false }), finishFailure(run(3), k, { type: 'E', retryable: false })] },
      { type: 'finishRuns', nowMs: m(150), items: [finishFailure(run(4), k, { type: 'E', retryable: true })] },
      { type: 'cancelRuns', nowMs: m(170), items: [{ runId: run(6), reason: 'no' }] },
    );
    const want = { [SUCCEEDED]: 2, [DEAD]: 2, [FAILED]: 1, [CANCELLED]: 1 };
    expect(await counts(t)).toEqual(want);
    expect(await scanned(t)).toEqual(want);
    // The last hour or so (from minute 120 on): only the FAILED and CANCELLED runs.
    expect(await counts(t, m(120) + 30_000)).toEqual({ [FAILED]: 1, [CANCELLED]: 1 });
    expect(await scanned(t, m(120) + 30_000)).toEqual({ [FAILED]: 1, [CANCELLED]: 1 });
    // A re-drive takes a run out of DEAD; its retry dies again later, in another minute.
    await t.apply({ type: 'retryRuns', nowMs: m(171), runIds: [run(2)], onlyState: DEAD, ignoreOverlap: true });
    expect(await counts(t)).toEqual({ ...want, [DEAD]: 1 });
    await t.apply(claim(m(172), 2));
    await t.apply({ type: 'finishRuns', nowMs: m(173), items: [finishFailure(run(2), await tok(t, 2), { type: 'E', retryable: false })] });
    expect(await counts(t, m(172))).toEqual({ [DEAD]: 1 });
    // The FAILED run is retried and succeeds: it leaves FAILED.
    await t.apply(claim(m(174), 4));
    await t.apply({ type: 'finishRuns', nowMs: m(175), items: [finishSuccess(run(4), await tok(t, 4))] });
    // A deleted job's runs go with it; a trim removes what retention does not keep.
    await t.apply({ type: 'deleteJob', nowMs: m(176), jobId: 'j0', expectedVersion: 0 }, { type: 'trimHistory', nowMs: m(176), jobIds: ids, maxIdempotencyKeys: 10 });
    const live = await counts(t);
    const lately = await counts(t, m(172));
    expect(live).toEqual(await scanned(t));
    expect(lately).toEqual(await scanned(t, m(172)));
    expect(live[SUCCEEDED]).toBe(2); // j1's, and j4's retry
    expect(live[DEAD]).toBe(2);
    expect(live[FAILED]).toBeUndefined();
    // Reopened, the node seeds its tally from the store: the same numbers.
    const dir = t.dir;
    release(t);
    await t.fsm.close();
    const reopened = await openTestFsm({}, dir);
    try {
      expect(await counts(reopened)).toEqual(live);
      expect(await counts(reopened, m(172))).toEqual(lately);
    } finally {
      await reopened.close();
    }
  });

  it('a restore replaces the tally with the snapshot’s runs', async () => {
    const a = await fresh();
    const b = await fresh();
    await a.apply(create, fire, claim(T + 1000, 0, 1));
    const k = await tok(a, 0);
    await a.apply({ type: 'finishRuns', nowMs: T + 2000, items: [finishSuccess(run(0), k), finishFailure(run(1), k, { type: 'E', retryable: false })] });
    // b counts its own runs, then gets a's snapshot.
    await b.apply(create, fire, { type: 'cancelRuns', nowMs: T + 5000, items: ids.map((_, i) => ({ runId: run(i), reason: '' })) });
    expect(await counts(b)).toEqual({ [CANCELLED]: 8 });
    const snap = await a.fsm.snapshot();
    try {
      await b.fsm.restore({ index: snap.appliedIndex, term: 1, conf: { voters: [] } }, snap.chunks());
    } finally {
      await snap.close();
    }
    expect(await counts(b)).toEqual({ [SUCCEEDED]: 1, [DEAD]: 1 });
    // And follows apply from there.
    const cancel: FsmCommand = { type: 'cancelRuns', nowMs: T + 6000, items: [{ runId: run(7), reason: '' }] };
    await b.fsm.apply([{ term: 1, index: (await b.fsm.appliedIndex()) + 1, type: 'normal', data: encodeCommand(cancel) }]);
    expect(await counts(b)).toEqual({ [SUCCEEDED]: 1, [DEAD]: 1, [CANCELLED]: 1 });
  });
});
