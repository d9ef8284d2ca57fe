// The DST fold policy a job is stored with (issue 30): AUTO — asked for, or unset — is resolved
// here, by the leader before it proposes the write, to FIRST or BOTH (fsm/schedule/dst-auto.ts)
// and stored so, with fold_auto set. Resolving before the log, not in apply, is what keeps
// replicas of different versions on the same slots: the command carries a policy every version
// knows, and a job stored before AUTO existed (fold unset) keeps FIRST until it is updated.
import { DstFoldPolicy, DstGapPolicy, type JobSpec } from '../../gen/herald/v1/job.js';
import { resolveFoldPolicy, type ScheduleCaches } from '../../fsm/schedule/index.js';

/** Whether the spec's fold is to be (re)resolved: AUTO, unset, or kept automatic by an update. */
function foldIsAuto(spec: JobSpec): boolean {
  const dst = spec.dst;
  if (dst === undefined) return true;
  if (dst.fold === DstFoldPolicy.DST_FOLD_POLICY_UNSPECIFIED || dst.fold === DstFoldPolicy.DST_FOLD_POLICY_AUTO) return true;
  // FIRST and BOTH are what AUTO resolves to: with fold_auto still set they were not a choice.
  return dst.foldAuto && (dst.fold === DstFoldPolicy.DST_FOLD_POLICY_FIRST || dst.fold === DstFoldPolicy.DST_FOLD_POLICY_BOTH);
}

/**
 * `spec` with its fold policy resolved for storage (a copy when anything changes). Only cron
 * schedules have folds: other specs come back as they are. Call after the spec was validated.
 */
export function withResolvedFold(spec: JobSpec, nowMs: number, caches: ScheduleCaches): JobSpec {
  if (spec.schedule?.kind?.$case !== 'cron') return spec;
  if (!foldIsAuto(spec)) return spec.dst?.foldAuto ? { ...spec, dst: { ...spec.dst, foldAuto: false } } : spec;
  const fold = resolveFoldPolicy({ ...spec, dst: { gap: spec.dst?.gap ?? DstGapPolicy.DST_GAP_POLICY_UNSPECIFIED, fold: DstFoldPolicy.DST_FOLD_POLICY_AUTO, foldAuto: true } }, nowMs, caches);
  return { ...spec, dst: { gap: spec.dst?.gap ?? DstGapPolicy.DST_GAP_POLICY_UNSPECIFIED, fold, foldAuto: true } };
}
