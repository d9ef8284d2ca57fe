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
 * Hints by spec object: jobs created from one template share a decoded spec (spec-cache.ts), so
 * one hint. A memo cache of immutable values keyed by their input, holding no settings: bounded
 * by the specs alive (a WeakMap entry goes with its key), so state machines may share it.
 */
const hints = new WeakMap<JobSpec, DispatchHint>();

export function dispatchHintOf(spec: JobSpec): DispatchHint {
  let h = hints.get(spec);
  if (h === undefined) {
    h = { taskType: spec.taskType, priority: spec.priority, jittered: spec.jitterMs > 0, allowsOverlap: overlapOf(spec) === OverlapPolicy.OVERLAP_POLICY_ALLOW };
    hints.set(spec, h);
  }
  return h;
}
