// The AUTO fold policy: whether a cron schedule fires at both occurrences of a fall-back fold's
// wall times (BOTH) or at the first only (FIRST).
//
// A schedule pinned to the repeated hour (`0 2 * * *`, `*/5 2 * * *`) means "once, at that time
// of day": FIRST. A schedule that runs hourly or more often through that part of the day
// (`0 * * * *`, `*/5 * * * *`, `30 1-3 * * *`) means "every so often": skipping the repeated
// wall times leaves a real-time gap of an hour or more, so it fires at every real occurrence
// (BOTH). The test is on the hour field alone: every wall hour the fold touches must match, and
// so must the hour just before the fold or the one just after it. cronie (Vixie cron) makes the
// same split between fixed-time and wildcard-hour jobs.
//
// Determinism (I5): AUTO is resolved to FIRST or BOTH when a job is created or updated
// (resolveFoldPolicy, by the API before it proposes) and the stored spec says which; only a
// spec that still carries AUTO (none written by the API) is decided fold by fold here.
import { DstFoldPolicy, type JobSpec } from '../../gen/herald/v1/job.js';
import type { CronExpression } from './cron-expression.js';
import type { ScheduleCaches } from './schedule-caches.js';
import type { Transition, ZoneRules } from './zone-rules.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** How far ahead resolveFoldPolicy looks at a zone's folds. */
const RESOLVE_HORIZON_MS = 10 * 366 * DAY_MS;

function hourOfWall(wallMs: number): number {
  return Math.floor((((wallMs % DAY_MS) + DAY_MS) % DAY_MS) / HOUR_MS);
}

/** For a fall-back transition `tr`: true when AUTO fires the fold's wall times twice. */
export function autoFoldFiresBoth(cron: CronExpression, tr: Transition): boolean {
  const from = tr.at + tr.offsetAfter; // the repeated wall times are [from, to)
  const to = tr.at + tr.offsetBefore;
  if (!(from < to)) return false;
  const firstHour = Math.floor(from / HOUR_MS) * HOUR_MS;
  for (let h = firstHour; h < to; h += HOUR_MS) if (!cron.hours[hourOfWall(h)]) return false;
  const before = hourOfWall(firstHour - HOUR_MS);
  const after = hourOfWall(Math.ceil(to / HOUR_MS) * HOUR_MS);
  return cron.hours[before] === true || cron.hours[after] === true;
}

/**
 * The fold policy a job gets stored with: FIRST / LAST / BOTH as asked; AUTO (or unset) resolved
 * for its cron expression and zone to BOTH when every fold of the next ten years (from `nowMs`)
 * fires twice under AUTO, else FIRST. A zone without folds, or a schedule that is not cron, gets
 * FIRST, which then changes nothing.
 */
export function resolveFoldPolicy(spec: JobSpec, nowMs: number, caches: ScheduleCaches): DstFoldPolicy {
  const asked = spec.dst?.fold ?? DstFoldPolicy.DST_FOLD_POLICY_UNSPECIFIED;
  if (asked !== DstFoldPolicy.DST_FOLD_POLICY_UNSPECIFIED && asked !== DstFoldPolicy.DST_FOLD_POLICY_AUTO) return asked;
  const kind = spec.schedule?.kind;
  if (kind?.$case !== 'cron') return DstFoldPolicy.DST_FOLD_POLICY_FIRST;
  const cron = caches.cron(kind.cron.expression);
  const zone: ZoneRules = caches.zone(kind.cron.timeZone);
  const from = Math.max(nowMs, spec.startUnixMs);
  const until = Math.min(from + RESOLVE_HORIZON_MS, spec.endUnixMs || Infinity);
  let folds = 0;
  for (let tr = zone.nextTransitionAfter(from, until); tr !== undefined; tr = zone.nextTransitionAfter(tr.at, until)) {
    if (tr.offsetBefore <= tr.offsetAfter) continue;
    if (!autoFoldFiresBoth(cron, tr)) return DstFoldPolicy.DST_FOLD_POLICY_FIRST;
    folds++;
  }
  return folds > 0 ? DstFoldPolicy.DST_FOLD_POLICY_BOTH : DstFoldPolicy.DST_FOLD_POLICY_FIRST;
}
