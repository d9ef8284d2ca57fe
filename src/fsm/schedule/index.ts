// Schedule math for the state machine: pure, deterministic functions of their arguments (DESIGN I5).
// Every replica and every future leader must compute the same instants, so nothing here reads the
// clock, draws random numbers or does I/O. Contract: /tmp/schedule-api.md.
export { validateSchedule } from './validate-schedule.js';
export { nextSlotAfter, slotsInRange } from './next-slot.js';
export { jitterOffsetMs } from './jitter.js';
export { retryBackoffMs, retryBackoffBaseMs } from './retry-backoff.js';
export { effectiveRetry, validateRetryPolicy, type EffectiveRetry } from './retry-policy.js';
export { parseCronExpression, type CronExpression } from './cron-expression.js';
