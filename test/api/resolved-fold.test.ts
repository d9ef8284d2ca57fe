// The fold policy a job is stored with (issue 30, item 4): AUTO (asked for or unset) is resolved
// by the leader before the write is proposed; a job stored before AUTO existed keeps its slots.
import { afterEach, describe, expect, it } from 'vitest';
import { DstFoldPolicy, DstGapPolicy } from '../../src/gen/herald/v1/job.js';
import { withResolvedFold } from '../../src/server/api/resolved-fold.js';
import { slotsInRange, ScheduleCaches } from '../../src/fsm/schedule/index.js';
import { cronSpec, everySpec, ms } from '../fsm/schedule/spec-builders.js';
import { openTestFsm, type TestFsm } from '../fsm/fsm-test-kit.js';

const caches = new ScheduleCaches();

const HOUR = 3_600_000;
const NOW = ms('2026-06-01T00:00:00Z');
const FOLD_AT = ms('2026-10-25T01:00:00Z'); // Berlin: 03:00 CEST -> 02:00 CET

let t: TestFsm | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('withResolvedFold', () => {
  it('resolves AUTO or unset to BOTH for hourly-or-faster crons and to FIRST for fixed-hour ones, marking fold_auto', () => {
    expect(withResolvedFold(cronSpec('0 * * * *', 'Europe/Berlin', 'unspecified', 'unspecified'), NOW, caches).dst).toEqual({ gap: DstGapPolicy.DST_GAP_POLICY_UNSPECIFIED, fold: DstFoldPolicy.DST_FOLD_POLICY_BOTH, foldAuto: true });
    expect(withResolvedFold(cronSpec('*/5 * * * *', 'Australia/Lord_Howe', 'skip', 'auto'), NOW, caches).dst).toMatchObject({ gap: DstGapPolicy.DST_GAP_POLICY_SKIP, fold: DstFoldPolicy.DST_FOLD_POLICY_BOTH, foldAuto: true });
    expect(withResolvedFold(cronSpec('30 1-3 * * *', 'Europe/Dublin', 'shift', 'auto'), NOW, caches).dst?.fold).toBe(DstFoldPolicy.DST_FOLD_POLICY_BOTH);
    expect(withResolvedFold(cronSpec('0 2 * * *', 'Europe/Berlin', 'shift', 'auto'), NOW, caches).dst?.fold).toBe(DstFoldPolicy.DST_FOLD_POLICY_FIRST);
    expect(withResolvedFold(cronSpec('*/5 2 * * *', 'Europe/Berlin', 'shift', 'auto'), NOW, caches).dst?.fold).toBe(DstFoldPolicy.DST_FOLD_POLICY_FIRST);
    // No folds (UTC): FIRST, which changes nothing.
    expect(withResolvedFold(cronSpec('0 * * * *', '', 'shift', 'auto'), NOW, caches).dst?.fold).toBe(DstFoldPolicy.DST_FOLD_POLICY_FIRST);
  });

  it('keeps explicit policies; an update that keeps fold_auto resolves again for the new expression', () => {
    const last = cronSpec('0 * * * *', 'Europe/Berlin', 'shift', 'last');
    expect(withResolvedFold(last, NOW, caches)).toBe(last);
    const hourly = withResolvedFold(cronSpec('0 * * * *', 'Europe/Berlin', 'shift', 'auto'), NOW, caches);
    const updated = withResolvedFold({ ...hourly, schedule: { kind: { $case: 'cron', cron: { expression: '0 2 * * *', timeZone: 'Europe/Berlin' } } } }, NOW, caches);
    expect(updated.dst).toMatchObject({ fold: DstFoldPolicy.DST_FOLD_POLICY_FIRST, foldAuto: true });
    // LAST named while fold_auto was still set (a copied spec): a choice, no longer automatic.
    expect(withResolvedFold({ ...hourly, dst: { ...hourly.dst!, fold: DstFoldPolicy.DST_FOLD_POLICY_LAST } }, NOW, caches).dst).toMatchObject({ fold: DstFoldPolicy.DST_FOLD_POLICY_LAST, foldAuto: false });
    const every = everySpec(60_000);
    expect(withResolvedFold(every, NOW, caches)).toBe(every);
  });

  it('the resolved policy gives the slots AUTO defines (hourly in real time through the fold)', () => {
    const resolved = withResolvedFold(cronSpec('0 * * * *', 'Europe/Berlin', 'unspecified', 'unspecified'), NOW, caches);
    const auto = cronSpec('0 * * * *', 'Europe/Berlin', 'shift', 'auto');
    const range = [FOLD_AT - 4 * HOUR, FOLD_AT + 4 * HOUR] as const;
    expect(slotsInRange(resolved, ...range, 0, 100, caches)).toEqual(slotsInRange(auto, ...range, 0, 100, caches));
  });
});

describe('upgrade: a job stored before AUTO existed', () => {
  it('keeps exactly the slots it had (fold unset is FIRST in the state machine), unlike a job created now', async () => {
    t = await openTestFsm();
    const old = cronSpec('0 * * * *', 'Europe/Berlin', 'unspecified', 'unspecified');
    // What an older leader proposed and every replica stored: the spec as given, fold unset.
    await t.one({ type: 'putJob', nowMs: NOW, jobId: 'old', spec: old, idempotencyKey: '' }, 'job');
    await t.one({ type: 'putJob', nowMs: NOW, jobId: 'new', spec: withResolvedFold(old, NOW, caches), idempotencyKey: '' }, 'job');
    const stored = await t.fsm.getJob('old');
    expect(stored?.spec?.dst?.fold ?? DstFoldPolicy.DST_FOLD_POLICY_UNSPECIFIED).toBe(DstFoldPolicy.DST_FOLD_POLICY_UNSPECIFIED);
    const range = [FOLD_AT - 4 * HOUR, FOLD_AT + 4 * HOUR] as const;
    const oldSlots = slotsInRange(stored!.spec!, ...range, stored!.createdUnixMs, 100, caches);
    expect(oldSlots).toEqual(slotsInRange(cronSpec('0 * * * *', 'Europe/Berlin', 'shift', 'first'), ...range, 0, 100, caches));
    // FIRST leaves the two-hour real-time gap of issue 30 (00:00Z -> 02:00Z)...
    expect(oldSlots).toContain(FOLD_AT - HOUR);
    expect(oldSlots).not.toContain(FOLD_AT);
    // ...which the job created now (AUTO, resolved to BOTH) fills.
    const fresh = await t.fsm.getJob('new');
    expect(slotsInRange(fresh!.spec!, ...range, fresh!.createdUnixMs, 100, caches)).toContain(FOLD_AT);
  });
});
