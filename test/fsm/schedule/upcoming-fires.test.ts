// upcomingFires shows what the FSM will fire: for jobs with jitter, DST folds and gaps, and end
// bounds, the fires it lists are exactly the (slot, scheduled) pairs the state machine creates
// when the leader fires the job slot by slot.
import { describe, expect, it } from 'vitest';
import { DstFoldPolicy, DstGapPolicy, type JobSpec } from '../../../src/gen/herald/v1/job.js';
import { firstSlotFrom, MAX_UPCOMING_FIRES, ScheduleCaches, upcomingFires } from '../../../src/fsm/schedule/index.js';
import { everySpec, freshFsmsPerTest, spec, T0 } from '../fsm-test-kit.js';

const { fresh } = freshFsmsPerTest();

function cron(expression: string, timeZone: string, p: Record<string, unknown> = {}): JobSpec {
  return spec({ ...p, schedule: { kind: { $case: 'cron', cron: { expression, timeZone } } } });
}

/** Fires the job `n` times at its own cursor and returns the runs' (slot, scheduled) pairs. */
async function fired(jobSpec: JobSpec, createdMs: number, n: number) {
  const t = await fresh();
  await t.one({ type: 'putJob', nowMs: createdMs, jobId: 'j', spec: jobSpec, idempotencyKey: '' });
  const job = (await t.fsm.getJob('j'))!;
  const shown = upcomingFires('j', job.spec!, job.nextFireUnixMs, job.createdUnixMs, n, new ScheduleCaches());
  const got: { slotMs: number; scheduledMs: number }[] = [];
  for (let i = 0; i < n; i++) {
    const next = (await t.fsm.getJob('j'))!.nextFireUnixMs;
    if (next === 0) break;
    const r = await t.one({ type: 'fireRuns', nowMs: next, misfireThresholdMs: 60_000, items: [{ jobId: 'j', slotMs: next }] }, 'fire');
    for (const id of r.items[0]!.created) {
      const run = (await t.fsm.getRun(id))!;
      got.push({ slotMs: run.slotUnixMs, scheduledMs: run.scheduledUnixMs });
    }
  }
  return { shown, got };
}

describe('upcomingFires', () => {
  it('matches what firing creates: every with jitter', async () => {
    const { shown, got } = await fired(everySpec(60_000, { jitterMs: 50_000 }, T0), T0, 12);
    expect(shown).toHaveLength(12);
    expect(shown.some((f) => f.scheduledMs !== f.slotMs)).toBe(true);
    expect(shown).toEqual(got);
  });

  it('matches what firing creates across a DST fold (Europe/Berlin, BOTH) and gap (SHIFT_FORWARD), with jitter', async () => {
    const created = Date.UTC(2030, 9, 26, 20, 0, 0); // the evening before the October 2030 fold
    const fold = cron('30 1-3 * * *', 'Europe/Berlin', { jitterMs: 20 * 60_000, dst: { gap: DstGapPolicy.DST_GAP_POLICY_SHIFT_FORWARD, fold: DstFoldPolicy.DST_FOLD_POLICY_BOTH } });
    const a = await fired(fold, created, 8);
    expect(a.shown).toEqual(a.got);
    // 01:30 CEST, 02:30 CEST, 02:30 CET, 03:30 CET: the repeated hour fires twice, an hour apart.
    expect(a.shown.slice(0, 4).map((f) => f.slotMs)).toEqual([
      Date.UTC(2030, 9, 26, 23, 30),
      Date.UTC(2030, 9, 27, 0, 30),
      Date.UTC(2030, 9, 27, 1, 30),
      Date.UTC(2030, 9, 27, 2, 30),
    ]);
    const spring = await fired(cron('30 2 * * *', 'Europe/Berlin'), Date.UTC(2030, 2, 30, 12), 2);
    expect(spring.shown).toEqual(spring.got);
    expect(spring.shown[0]!.slotMs).toBe(Date.UTC(2030, 2, 31, 1, 0)); // 03:00 CEST, the end of the gap
  });

  it('stops at the end bound and at a one-off; caps the count; none without a next slot', async () => {
    const bounded = await fired(everySpec(60_000, { endUnixMs: T0 + 150_000 }, T0), T0, 10);
    expect(bounded.shown.map((f) => f.slotMs)).toEqual([T0, T0 + 60_000, T0 + 120_000]);
    expect(bounded.shown).toEqual(bounded.got);
    const caches = new ScheduleCaches();
    const every = everySpec(1000, {}, T0);
    expect(upcomingFires('j', every, T0, T0, 1_000, caches)).toHaveLength(MAX_UPCOMING_FIRES);
    expect(upcomingFires('j', every, 0, T0, 5, caches)).toEqual([]);
    expect(upcomingFires('j', every, T0, T0, 0, caches)).toEqual([]);
    const at = spec({ schedule: { kind: { $case: 'at', at: { atUnixMs: T0 + 5 } } } });
    expect(upcomingFires('j', at, firstSlotFrom(at, T0, T0, 0, caches), T0, 10, caches)).toEqual([{ slotMs: T0 + 5, scheduledMs: T0 + 5 }]);
  });
});
