// The leader services' monotonic clock and timers, as a port: production passes Node's
// (systemTimers), the scheduler simulator its simulated time (src/server/sim). Components take it
// as an optional member of their deps so a unit test that builds one by hand keeps Node's.
import type { DriverTimers, TimerHandle } from '../../raft/ports.js';
import { systemTimers } from '../../raft/system-timers.js';

export type LeaderTimers = DriverTimers;
export type { TimerHandle };

/** The timers a component was given, else Node's. */
export function timersOf(ctx: { readonly timers?: LeaderTimers }): LeaderTimers {
  return ctx.timers ?? systemTimers;
}

/** Cancels a timer that may not be armed. */
export function cancelTimer(timers: LeaderTimers, h: TimerHandle | undefined): void {
  if (h !== undefined) timers.cancel(h);
}
