// The runtime's only source of elapsed time. Raft timeouts, heartbeats and RTTs are measured on
// the monotonic clock (DESIGN §5a): a wall-clock jump (NTP step, operator, chaos test) must not
// fire elections or stretch leases.

import { performance } from 'node:perf_hooks';

export interface MonotonicClock {
  /** Milliseconds since an arbitrary origin; never goes backwards. */
  nowMs(): number;
}

export const systemMonotonicClock: MonotonicClock = {
  nowMs: () => performance.now(),
};

/** The wall clock, kept behind a function so tests and the chaos suite can see where it is read. */
export function wallClockUnixMs(): number {
  return Date.now();
}
