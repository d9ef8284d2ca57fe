// The next slot of a cron schedule: cron fields evaluated on LOCAL wall time, and wall times
// resolved to instants by our own DST policy (not a date library's), so that it is exact and the
// same on every replica.
//
// We walk the timeline in "segments": maximal instant ranges [a, b) with one constant UTC offset o.
// Inside a segment the wall times [a+o, b+o) map one-to-one onto instants (instant = wall − o), so
// the first matching wall time gives the first slot. Transitions between segments are where the
// policy applies:
//   - spring forward at b (offset grows): wall times [b+oBefore, b+oAfter) do not exist. Under
//     SHIFT_FORWARD, if any of them matches, the slot is b itself — the first valid instant after
//     the gap — once, however many skipped wall times matched (`*/15` in the gap hour). Under SKIP
//     they do not fire.
//   - fall back at b (offset shrinks): wall times [b+oAfter, b+oBefore) occur twice, at the end of
//     the segment before b and at the start of the segment after it. FIRST drops them from the
//     later segment, LAST from the earlier one, BOTH keeps both. AUTO is FIRST or BOTH per fold
//     (dst-auto.ts); the API stores it resolved, so only a spec still carrying it gets here.
// Since segments are visited in instant order and each yields instants in order, the first
// candidate found is the answer.
import { DstFoldPolicy, DstGapPolicy, type DstPolicy } from '../../gen/herald/v1/job.js';
import type { CronExpression } from './cron-expression.js';
import { nextWallMatch } from './cron-wall-match.js';
import { autoFoldFiresBoth } from './dst-auto.js';
import type { Transition, ZoneRules } from './zone-rules.js';

/**
 * How far ahead a search looks for the next slot. Validation rejects expressions that never
 * match; the sparsest valid ones recur within about a dozen years: Feb 29 (2096 → 2104), or a
 * day-of-month that must also be a given weekday, e.g. `0 0 *\/31 2 1` = Feb 1 on a Monday
 * (2027 → 2038). The margin is cheap: the bound is only reached when there is no slot at all.
 */
const HORIZON_YEARS = 40;
const DAY_MS = 86_400_000;
/** Instants before this are treated as this: 0 means "unset" in our API and pre-1970 is moot. */
const MIN_INSTANT = 0;
/** Far enough for any schedule, early enough for Date and Intl to behave (year 9999). */
export const MAX_INSTANT = Date.UTC(9999, 11, 31, 23, 59, 59);

export interface ResolvedDst {
  readonly shiftForward: boolean;
  readonly fold: 'first' | 'last' | 'both' | 'auto';
}

export function resolveDstPolicy(dst: DstPolicy | undefined): ResolvedDst {
  const fold =
    dst?.fold === DstFoldPolicy.DST_FOLD_POLICY_LAST
      ? 'last'
      : dst?.fold === DstFoldPolicy.DST_FOLD_POLICY_BOTH
        ? 'both'
        : dst?.fold === DstFoldPolicy.DST_FOLD_POLICY_AUTO
          ? 'auto'
          : 'first';
  return { shiftForward: dst?.gap !== DstGapPolicy.DST_GAP_POLICY_SKIP, fold };
}

/**
 * The first slot of `cron` in `zone` strictly after `afterMs` and before `untilMs` (exclusive),
 * or undefined. Slots are whole seconds.
 */
export function nextCronSlot(
  cron: CronExpression,
  zone: ZoneRules,
  dst: ResolvedDst,
  afterMs: number,
  untilMs: number,
): number | undefined {
  let cur = Math.max(MIN_INSTANT, Math.floor(afterMs / 1000) * 1000 + 1000);
  const until = Math.min(untilMs, MAX_INSTANT, cur + HORIZON_YEARS * 366 * DAY_MS);
  const maxYear = new Date(until).getUTCFullYear() + 1;

  // Sparse schedules cross many segments before their next match; remember the last search
  // ("the first match at or after knownFrom is knownWall") so each segment does not redo it.
  let knownFrom = Infinity;
  let knownWall: number | undefined;
  const matchFrom = (fromWall: number): number | undefined => {
    if (fromWall >= knownFrom && (knownWall === undefined || fromWall <= knownWall)) return knownWall;
    knownFrom = fromWall;
    knownWall = nextWallMatch(cron, fromWall, maxYear);
    return knownWall;
  };

  // A spring-forward transition exactly at `cur` puts its shifted slot at `cur`.
  const atCur = zone.lastTransitionAtOrBefore(cur);
  if (atCur !== undefined && atCur.at === cur && gapFires(dst, atCur, matchFrom)) {
    return cur < until ? cur : undefined;
  }

  while (cur < until) {
    const offset = zone.offsetAt(cur);
    const first = matchFrom(cur + offset);
    if (first === undefined) return undefined;
    // Transitions after the candidate instant (plus a day, for LAST to see a fold right after it
    // and for a fold straddling the end bound) cannot matter; not looking further keeps zones
    // without DST from walking year tables up to the horizon.
    const next = zone.nextTransitionAfter(cur, Math.min(first - offset, until) + 2 * DAY_MS);
    const segEnd = next?.at ?? until;
    const wallEnd = segEnd + offset;

    // Wall-time ranges of this segment that the fold policy excludes.
    let dropFrom = Infinity;
    let dropTo = -Infinity;
    if (dst.fold === 'first' || dst.fold === 'auto') {
      const prev = zone.lastTransitionAtOrBefore(cur);
      if (prev !== undefined && prev.offsetBefore > prev.offsetAfter && (dst.fold === 'first' || !autoFoldFiresBoth(cron, prev))) {
        dropFrom = prev.at + prev.offsetAfter;
        dropTo = prev.at + prev.offsetBefore;
      }
    } else if (dst.fold === 'last' && next !== undefined && next.offsetBefore > next.offsetAfter) {
      dropFrom = next.at + next.offsetAfter;
      dropTo = next.at + next.offsetBefore;
    }

    if (first < wallEnd) {
      if (first >= dropFrom && first < dropTo) {
        // Resume at the instant where the dropped wall times end (their segment is this one).
        cur = dropTo - offset;
        continue;
      }
      const slot = first - offset;
      return slot < until ? slot : undefined;
    }
    if (next === undefined) return undefined;

    if (gapFires(dst, next, matchFrom)) return next.at < until ? next.at : undefined;
    cur = next.at;
  }
  return undefined;
}

/** Whether a spring-forward transition produces a shifted slot at its instant. */
function gapFires(dst: ResolvedDst, tr: Transition, matchFrom: (fromWall: number) => number | undefined): boolean {
  if (!dst.shiftForward || tr.offsetAfter <= tr.offsetBefore) return false;
  const m = matchFrom(tr.at + tr.offsetBefore);
  return m !== undefined && m < tr.at + tr.offsetAfter;
}
