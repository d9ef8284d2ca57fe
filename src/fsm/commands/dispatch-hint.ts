// How a job's runs are dispatched, as far as the leader must know it before they exist: to fire a
// slot ahead of its instant and to claim its run in the entry right behind the fire
// (fire-scheduler.ts, dispatcher.ts claimBehindFire). A pure function of the job's spec.
import { OverlapPolicy, type JobSpec } from '../../gen/herald/v1/job.js';
import type { DispatchHint } from './results.js';

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
    h = { taskType: spec.taskType, priority: spec.priority, jittered: spec.jitterMs > 0, allowsOverlap: overlapOf(spec) === OverlapPolicy.OVERLAP_POLICY_ALLOW };
    if (Object.isExtensible(spec)) Object.defineProperty(spec, HINT, { value: h, enumerable: false, configurable: false, writable: false });
  }
  return h;
}
