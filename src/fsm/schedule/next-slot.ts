// The slots of a job: dispatch on the schedule kind and apply the bounds (start inclusive, end
// exclusive). The FSM computes each next fire time from the slot just fired, never from "now".
import type { JobSpec } from '../../gen/herald/v1/job.js';
import { HeraldError } from '../../herald-error.js';
import { nextCronSlot, resolveDstPolicy } from './cron-schedule.js';
import { everyAnchor, firstEverySlotAtOrAfter } from './every-schedule.js';
import type { ScheduleCaches } from './schedule-caches.js';
import { validateInterval } from './validate-schedule.js';

/**
 * The first slot strictly after `afterMs`, honouring start (inclusive) / end (exclusive) bounds and
 * the DST policy; undefined when the schedule has no further slot. `anchorMs` is the job's creation
 * time (used by `every` without an explicit anchor). Slots are before jitter. `caches`: the
 * caller's parsed expressions and zone rules.
 */
export function nextSlotAfter(spec: JobSpec, afterMs: number, anchorMs: number, caches: ScheduleCaches): number | undefined {
  const kind = spec.schedule?.kind;
  if (kind === undefined) throw new HeraldError('INVALID_SPEC', 'schedule is required', { field: 'spec.schedule' });
  const end = spec.endUnixMs || Infinity;
  // "Strictly after `after`" folds the start bound in: the first slot may be the start itself.
  const after = spec.startUnixMs > 0 ? Math.max(afterMs, spec.startUnixMs - 1) : afterMs;
  let slot: number | undefined;
  switch (kind.$case) {
    case 'at':
      slot = kind.at.atUnixMs > after ? kind.at.atUnixMs : undefined;
      break;
    case 'every': {
      validateInterval(kind.every.intervalMs);
      const anchor = everyAnchor(kind.every, spec, anchorMs);
      slot = firstEverySlotAtOrAfter(anchor, kind.every.intervalMs, Math.floor(after) + 1);
      break;
    }
    case 'cron':
      slot = nextCronSlot(
        caches.cron(kind.cron.expression),
        caches.zone(kind.cron.timeZone),
        resolveDstPolicy(spec.dst),
        after,
        end,
      );
      break;
  }
  return slot !== undefined && slot < end ? slot : undefined;
}

/** Slots in [fromMs, toMs), oldest first, at most `limit` (for backfill and misfire). */
export function slotsInRange(spec: JobSpec, fromMs: number, toMs: number, anchorMs: number, limit: number, caches: ScheduleCaches): number[] {
  const out: number[] = [];
  if (!(limit > 0) || !(fromMs < toMs)) return out;
  let slot = nextSlotAfter(spec, fromMs - 1, anchorMs, caches);
  while (slot !== undefined && slot < toMs && out.length < limit) {
    out.push(slot);
    slot = nextSlotAfter(spec, slot, anchorMs, caches);
  }
  return out;
}
