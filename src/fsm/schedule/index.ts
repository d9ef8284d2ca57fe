// Schedule math for the state machine: pure, deterministic functions of their arguments (DESIGN I5).
// Every replica and every future leader must compute the same instants, so nothing here reads the
// clock, draws random numbers or does I/O. Contract: /tmp/schedule-api.md.
//
// Semantics in one place:
// - Slots are instants in ms. `at`: the one instant. `every`: anchor + k·interval, k >= 0, where
//   anchor = spec anchor || start bound || the job's creation time. Cron: whole seconds.
// - Bounds: start inclusive, end exclusive (0 = unbounded).
// - Cron syntax: 5 fields (seconds = 0) or 6 (seconds first); Vixie day-of-month/day-of-week rule
//   (OR when both are restricted; a field starting with `*` counts as unrestricted); names;
//   dow 7 = Sunday; `L` (last day) in day-of-month only; @yearly … @hourly. See cron-expression.ts.
// - Time zone: cron fields are matched on local wall time. Gap (spring forward): SHIFT_FORWARD
//   (default) fires once at the transition instant — the first valid instant after the gap — for
//   any number of matching skipped wall times; SKIP does not fire. Fold (fall back): FIRST (default)
//   / LAST / BOTH occurrences. See cron-schedule.ts.
// - Jitter and retry backoff use FNV-1a 64 of (key, number); they never depend on process state.
export { ScheduleCaches } from './schedule-caches.js';
export { validateSchedule } from './validate-schedule.js';
export { nextSlotAfter, slotsInRange } from './next-slot.js';
export { firstSlotFrom, upcomingFires, MAX_UPCOMING_FIRES, type UpcomingFire } from './upcoming-fires.js';
export { jitteredSlot, jitterOffsetMs } from './jitter.js';
export { retryBackoffMs, retryBackoffBaseMs } from './retry-backoff.js';
export { effectiveRetry, validateRetryPolicy, type EffectiveRetry } from './retry-policy.js';
export { parseCronExpression, type CronExpression } from './cron-expression.js';
export { autoFoldFiresBoth, resolveFoldPolicy } from './dst-auto.js';
