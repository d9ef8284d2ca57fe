// Deterministic per-slot jitter (DESIGN §6, I5): the offset is a hash of (job id, slot), so every
// replica and every future leader delays a slot by the same amount without storing it.
import type { JobSpec } from '../../gen/herald/v1/job.js';
import { unitHash } from './fnv1a64.js';
import type { ScheduleCaches } from './schedule-caches.js';
import { nextSlotAfter } from './next-slot.js';

/**
 * An offset in [0, jitterMs) determined by (jobId, slotMs). When the next slot is known the
 * window also stays strictly below (nextSlotMs − slotMs), so a jittered slot never reaches the
 * next slot and slots keep their order.
 */
export function jitterOffsetMs(
  jobId: string,
  slotMs: number,
  jitterMs: number,
  nextSlotMs: number | undefined,
): number {
  let window = Math.floor(jitterMs);
  if (nextSlotMs !== undefined) window = Math.min(window, nextSlotMs - slotMs);
  if (!(window > 1)) return 0; // also covers NaN and a next slot that is not after this one
  // Floating point may round u·window up to window for huge windows; clamp to keep it exclusive.
  return Math.min(window - 1, Math.floor(unitHash(jobId, slotMs) * window));
}

/**
 * The instant slot `found[i]` is scheduled at: plus its jitter, a hash of (job, slot) that never
 * reaches the next slot (`found[i + 1]`, or the schedule's next one past the list).
 */
export function jitteredSlot(jobId: string, spec: JobSpec, found: readonly number[], i: number, createdMs: number, caches: ScheduleCaches): number {
  const slot = found[i]!;
  if (spec.jitterMs <= 0) return slot;
  const next = i + 1 < found.length ? found[i + 1] : nextSlotAfter(spec, slot, createdMs, caches);
  return slot + jitterOffsetMs(jobId, slot, spec.jitterMs, next);
}
