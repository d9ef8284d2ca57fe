// When the leader may compute a jittered slot's instant itself (dispatchHintOf's jitterWindowMs):
// only when the next slot can never cut the jitter window short, so the offset it computes is the
// one the state machine gives the run.
import { describe, expect, it } from 'vitest';
import { DstFoldPolicy, DstGapPolicy, JobSpec, OverlapPolicy } from '../../src/gen/herald/v1/job.js';
import { dispatchHintOf } from '../../src/fsm/commands/dispatch-hint.js';
import { hintedDueMs } from '../../src/fsm/index.js';
import { jitteredSlot, ScheduleCaches, slotsInRange } from '../../src/fsm/schedule/index.js';

const cron = (expression: string, jitterMs: number) => JobSpec.fromPartial({ taskType: 't', jitterMs, schedule: { kind: { $case: 'cron', cron: { expression, timeZone: 'Europe/Berlin' } } } });
const every = (intervalMs: number, jitterMs: number) => JobSpec.fromPartial({ taskType: 't', jitterMs, schedule: { kind: { $case: 'every', every: { intervalMs, anchorUnixMs: 0 } } } });
const at = (atUnixMs: number, jitterMs: number) => JobSpec.fromPartial({ taskType: 't', jitterMs, schedule: { kind: { $case: 'at', at: { atUnixMs } } } });

describe('dispatch hint: the jitter window the leader may use', () => {
  it('is the jitter when no two slots can be closer than it, else 0', () => {
    expect(dispatchHintOf(cron('0 0 * * *', 60_000)).jitterWindowMs).toBe(60_000);
    expect(dispatchHintOf(cron('@daily', 30_000)).jitterWindowMs).toBe(30_000);
    expect(dispatchHintOf(cron('0 */5 * * * *', 60_000)).jitterWindowMs).toBe(60_000);
    // Past a minute, or seconds that are not 0 (a DST-shifted slot lands on a whole minute, next to one at :30).
    expect(dispatchHintOf(cron('0 0 * * *', 60_001)).jitterWindowMs).toBe(0);
    expect(dispatchHintOf(cron('30 * * * * *', 10_000)).jitterWindowMs).toBe(0);
    expect(dispatchHintOf(every(10_000, 10_000)).jitterWindowMs).toBe(10_000);
    expect(dispatchHintOf(every(10_000, 10_001)).jitterWindowMs).toBe(0);
    expect(dispatchHintOf(at(Date.UTC(2030, 0, 1), 3_600_000)).jitterWindowMs).toBe(3_600_000);
    expect(dispatchHintOf(cron('0 0 * * *', 0))).toMatchObject({ jittered: false, jitterWindowMs: 0 });
  });

  it('gives the instant the state machine gives the run, slot by slot (DST days included)', () => {
    const caches = new ScheduleCaches();
    const created = Date.UTC(2026, 0, 1);
    const withDst = (spec: JobSpec, gap: DstGapPolicy, fold: DstFoldPolicy) => JobSpec.fromPartial({ ...spec, dst: { gap, fold } });
    const specs = [
      cron('0 2 * * *', 60_000),
      cron('*/1 * * * *', 60_000),
      every(90_000, 60_000),
      cron('0 30 2 * * *', 59_999),
      withDst(cron('*/1 2-3 * * *', 60_000), DstGapPolicy.DST_GAP_POLICY_SHIFT_FORWARD, DstFoldPolicy.DST_FOLD_POLICY_BOTH),
      withDst(cron('30 2 * * *', 60_000), DstGapPolicy.DST_GAP_POLICY_SHIFT_FORWARD, DstFoldPolicy.DST_FOLD_POLICY_LAST),
    ];
    for (const spec of specs) {
      const hint = dispatchHintOf(spec);
      expect(hint.jitterWindowMs).toBeGreaterThan(0);
      // The schedule's own slots around Berlin's spring-forward and fall-back nights.
      let checked = 0;
      for (const day of [Date.UTC(2026, 2, 28, 22), Date.UTC(2026, 9, 24, 22)]) {
        const slots = slotsInRange(spec, day, day + 6 * 3_600_000, created, 400, caches);
        for (let i = 0; i < slots.length; i++) {
          for (const jobId of ['a', 'job-7', 'nightly-report']) {
            expect(hintedDueMs(jobId, slots[i]!, hint)).toBe(jitteredSlot(jobId, spec, slots, i, created, caches));
            checked++;
          }
        }
      }
      expect(checked).toBeGreaterThan(0);
    }
  });

  it('overlap other than ALLOW is noted (the fire is then not moved)', () => {
    expect(dispatchHintOf(JobSpec.fromPartial({ ...cron('0 0 * * *', 1000), overlapPolicy: OverlapPolicy.OVERLAP_POLICY_FORBID })).allowsOverlap).toBe(false);
  });
});
