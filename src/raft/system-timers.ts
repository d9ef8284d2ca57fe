// Production's DriverTimers: the monotonic clock and Node's timers.

import { systemMonotonicClock } from './monotonic-clock.js';
import type { DriverTimers, TimerHandle } from './ports.js';

export const systemTimers: DriverTimers = {
  nowMs: systemMonotonicClock.nowMs,
  every: (ms, fn) => setInterval(fn, ms) as unknown as TimerHandle,
  after: (ms, fn) => setTimeout(fn, ms) as unknown as TimerHandle,
  cancel: (h) => clearTimeout(h as unknown as NodeJS.Timeout),
  soon: (fn) => void setImmediate(fn),
};
