// How a job's runs are dispatched, as far as the leader must know it before they exist: to fire a
// slot ahead of its instant and to claim its run in the entry right behind the fire
// (fire-scheduler.ts, dispatcher.ts claimBehindFire). A pure function of the job's spec.
import { OverlapPolicy, type JobSpec } from '../../gen/herald/v1/job.js';
import type { DispatchHint } from './results.js';
import { jitterOffsetMs } from '../schedule/jitter.js';

/** The overlap policy in force: unset means ALLOW. */
export function overlapOf(spec: JobSpec | undefined): OverlapPolicy {
  const p = spec?.overlapPolicy ?? OverlapPolicy.OVERLAP_POLICY_UNSPECIFIED;
  return p === OverlapPolicy.OVERLAP_POLICY_UNSPECIFIED ? OverlapPolicy.OVERLAP_POLICY_ALLOW : p;
}

/**
 * A spec's hint travels with the spec object as a hidden (non-enumerable) field, so jobs created
 * from one template, which share a decoded spec (spec-cache.ts), share one hint, and no table
 * outside the objects is shared between state machines.
 */
const HINT = Symbol('dispatch hint');
type WithHint = JobSpec & { [HINT]?: DispatchHint };

export function dispatchHintOf(spec: JobSpec): DispatchHint {
  let h = (spec as WithHint)[HINT];
  if (h === undefined) {
    const jitterMs = Math.floor(spec.jitterMs);
    h = {
      taskType: spec.taskType,
      priority: spec.priority,
      jittered: jitterMs > 0,
      allowsOverlap: overlapOf(spec) === OverlapPolicy.OVERLAP_POLICY_ALLOW,
      jitterWindowMs: jitterMs > 0 && jitterMs <= shortestSlotGapMs(spec) ? jitterMs : 0,
    };
    if (Object.isExtensible(spec)) Object.defineProperty(spec, HINT, { value: h, enumerable: false, configurable: false, writable: false });
  }
  return h;
}

/**
 * A gap no two consecutive slots of the schedule can be closer than (0: not known). A slot's
 * jitter window is cut to the gap to the next slot (jitter.ts); with a jitter no longer than this
 * it never is, so the offset depends on the job and the slot alone. A cron expression whose
 * seconds are 0 (every 5-field one) matches whole minutes only, and every zone's offset changes
 * by whole minutes, so its slots — DST-shifted ones included — are at least a minute apart.
 */
function shortestSlotGapMs(spec: JobSpec): number {
  const kind = spec.schedule?.kind;
  if (!kind) return 0;
  if (kind.$case === 'at') return Number.POSITIVE_INFINITY; // one slot: nothing cuts its window
  if (kind.$case === 'every') return kind.every.intervalMs;
  const fields = kind.cron.expression.trim().split(/\s+/);
  if (fields[0]?.startsWith('@') || fields.length === 5) return 60_000;
  return fields.length === 6 && /^0+$/.test(fields[0]!) ? 60_000 : 0;
}

/**
 * The instant a slot's run is due (the slot plus its jitter), when the hint knows it: undefined
 * for a jitter the next slot may cut short (the state machine decides it at the fire).
 */
export function hintedDueMs(jobId: string, slotMs: number, hint: DispatchHint): number | undefined {
  if (!knowsDue(hint)) return undefined;
  return hint.jittered ? slotMs + jitterOffsetMs(jobId, slotMs, hint.jitterWindowMs, undefined) : slotMs;
}

/** Whether hintedDueMs gives the instant: no jitter, or one no slot gap can cut short. */
export function knowsDue(hint: DispatchHint): boolean {
  return !hint.jittered || hint.jitterWindowMs > 0;
}
