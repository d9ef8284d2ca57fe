// The next fires of a job as the leader will make them (GetJob upcoming_fires, ValidateJob): the
// same slot code the FSM fires with (nextSlotAfter: bounds, DST policy) and the same per-slot
// jitter (jitteredSlot), so what is shown is what the timing wheel will fire while the job stays
// as it is. Pure: the caller passes the job's cursor and its own ScheduleCaches.
import type { JobSpec } from '../../gen/herald/v1/job.js';
import type { ScheduleCaches } from './schedule-caches.js';
import { nextSlotAfter } from './next-slot.js';
import { jitteredSlot } from './jitter.js';

/** The most fires one call computes. */
export const MAX_UPCOMING_FIRES = 100;

export interface UpcomingFire {
  /** The slot, before jitter. */
  readonly slotMs: number;
  /** The slot plus its jitter: when its run starts. */
  readonly scheduledMs: number;
}

/**
 * The first slot of a schedule that starts (or restarts) at `nowMs`, never at or before
 * `lastSlotMs` (the last slot already handled). A one-off instant already in the past still
 * fires once (the misfire policy decides how), other kinds continue with the next slot from now.
 */
export function firstSlotFrom(spec: JobSpec, nowMs: number, createdMs: number, lastSlotMs: number, caches: ScheduleCaches): number | undefined {
  const at = spec.schedule?.kind?.$case === 'at' ? spec.schedule.kind.at.atUnixMs : undefined;
  const from = at !== undefined ? Math.min(at, nowMs) : nowMs;
  return nextSlotAfter(spec, Math.max(from - 1, lastSlotMs), createdMs, caches);
}

/**
 * Up to `n` (at most MAX_UPCOMING_FIRES) fires of job `jobId` from its next slot `firstSlotMs`
 * (undefined or 0: none), soonest first. `createdMs`: the job's creation time (the anchor of an
 * `every` schedule without one).
 */
export function upcomingFires(
  jobId: string,
  spec: JobSpec,
  firstSlotMs: number | undefined,
  createdMs: number,
  n: number,
  caches: ScheduleCaches,
): UpcomingFire[] {
  const want = Math.min(Math.max(0, Math.floor(n)), MAX_UPCOMING_FIRES);
  if (want === 0 || !firstSlotMs) return [];
  // One slot past the last wanted: the last one's jitter window ends at it.
  const found: number[] = [firstSlotMs];
  while (found.length <= want) {
    const next = nextSlotAfter(spec, found[found.length - 1]!, createdMs, caches);
    if (next === undefined) break;
    found.push(next);
  }
  const out: UpcomingFire[] = [];
  for (let i = 0; i < Math.min(want, found.length); i++) {
    out.push({ slotMs: found[i]!, scheduledMs: jitteredSlot(jobId, spec, found, i, createdMs, caches) });
  }
  return out;
}
