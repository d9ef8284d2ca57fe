// Fixed-interval schedules: slots are anchor + k·interval for k >= 0 (the anchor is the first
// slot). Pure arithmetic, so it is exact for any distance from the anchor.
import type { EverySchedule, JobSpec } from '../../gen/herald/v1/job.js';

/** The anchor in effect: the spec's anchor, else the start bound, else the job's creation time. */
export function everyAnchor(every: EverySchedule, spec: JobSpec, anchorMs: number): number {
  return every.anchorUnixMs || spec.startUnixMs || anchorMs;
}

/** The first slot >= fromMs (no bounds applied). */
export function firstEverySlotAtOrAfter(anchor: number, intervalMs: number, fromMs: number): number {
  if (fromMs <= anchor) return anchor;
  return anchor + Math.ceil((fromMs - anchor) / intervalMs) * intervalMs;
}
