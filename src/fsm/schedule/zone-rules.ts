// UTC offsets and offset transitions of an IANA time zone, derived from Node's Intl tz data.
//
// We need the exact transition instants (to resolve spring-forward gaps and fall-back folds by
// our own policy), which Intl does not expose; we recover them once per (zone, UTC year) by
// sampling the offset daily and bisecting each change to the second, then answer from that table.
// Assumption (true of the whole IANA database since 1970 as far as schedules care): a zone does
// not change its offset twice within one day.
// Determinism note (DESIGN I5): all replicas must run the same tz data (same Node/ICU build);
// otherwise their instants for a zone whose rules changed could differ.
import { HeraldError } from '../../herald-error.js';

export const TIME_ZONE_FIELD_PATH = 'spec.schedule.cron.time_zone';

const DAY_MS = 86_400_000;

/** An instant at which the zone's UTC offset changes. */
export interface Transition {
  /** The first instant with the new offset. */
  readonly at: number;
  /** Offsets are wall time minus UTC, in milliseconds. */
  readonly offsetBefore: number;
  readonly offsetAfter: number;
}

interface YearTable {
  readonly startOffset: number;
  /** Transitions with `at` in (start of year, start of next year], ascending. */
  readonly transitions: readonly Transition[];
}

export interface ZoneRules {
  readonly name: string;
  /** Wall time minus UTC at instant t, in milliseconds. */
  offsetAt(t: number): number;
  /** The first transition with at > t, looking no further than `untilMs`; undefined if none. */
  nextTransitionAfter(t: number, untilMs: number): Transition | undefined;
  /** The last transition with at <= t, looking back at most about a year. */
  lastTransitionAtOrBefore(t: number): Transition | undefined;
}

const UTC_RULES: ZoneRules = {
  name: 'UTC',
  offsetAt: () => 0,
  nextTransitionAfter: () => undefined,
  lastTransitionAtOrBefore: () => undefined,
};

class IntlZoneRules implements ZoneRules {
  /** A memo cache of the zone's transitions per year, computed on first use; bounded by the years times can reach. */
  private readonly years = new Map<number, YearTable>();
  constructor(
    readonly name: string,
    private readonly format: Intl.DateTimeFormat,
  ) {}

  /** Uncached offset straight from Intl; t is truncated to the second as Intl does. */
  private rawOffset(t: number): number {
    const whole = Math.floor(t / 1000) * 1000;
    const m = /(\d+)\/(\d+)\/(\d+),?\s+(\d+):(\d+):(\d+)/.exec(this.format.format(whole));
    if (m === null) throw new HeraldError('INTERNAL', `cannot read wall time in zone ${this.name}`);
    const hour = Number(m[4]) % 24; // some ICU builds print midnight as 24
    return Date.UTC(Number(m[3]), Number(m[1]) - 1, Number(m[2]), hour, Number(m[5]), Number(m[6])) - whole;
  }

  private table(year: number): YearTable {
    let table = this.years.get(year);
    if (table !== undefined) return table;
    const start = Date.UTC(year, 0, 1);
    const end = Date.UTC(year + 1, 0, 1);
    const startOffset = this.rawOffset(start);
    const transitions: Transition[] = [];
    let prevT = start;
    let prevOffset = startOffset;
    for (let t = start + DAY_MS; t <= end; t += DAY_MS) {
      const offset = this.rawOffset(t);
      if (offset !== prevOffset) {
        // Bisect (prevT, t] to the second: offsets change on whole seconds.
        let lo = prevT;
        let hi = t;
        while (hi - lo > 1000) {
          const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
          if (this.rawOffset(mid) === prevOffset) lo = mid;
          else hi = mid;
        }
        transitions.push({ at: hi, offsetBefore: prevOffset, offsetAfter: this.rawOffset(hi) });
      }
      prevT = t;
      prevOffset = offset;
    }
    table = { startOffset, transitions };
    this.years.set(year, table);
    return table;
  }

  offsetAt(t: number): number {
    const year = new Date(t).getUTCFullYear();
    const table = this.table(year);
    let offset = table.startOffset;
    for (const tr of table.transitions) {
      if (tr.at > t) break;
      offset = tr.offsetAfter;
    }
    return offset;
  }

  nextTransitionAfter(t: number, untilMs: number): Transition | undefined {
    let year = new Date(t).getUTCFullYear();
    for (;;) {
      if (Date.UTC(year, 0, 1) > untilMs) return undefined;
      for (const tr of this.table(year).transitions) if (tr.at > t) return tr.at <= untilMs ? tr : undefined;
      year++;
    }
  }

  lastTransitionAtOrBefore(t: number): Transition | undefined {
    const year = new Date(t).getUTCFullYear();
    for (const y of [year, year - 1]) {
      const list = this.table(y).transitions;
      for (let i = list.length - 1; i >= 0; i--) if (list[i]!.at <= t) return list[i];
    }
    return undefined;
  }
}

/**
 * The rules of an IANA zone ("" means UTC); throws UNKNOWN_TIME_ZONE naming the zone. Uncached:
 * callers go through ScheduleCaches (schedule-caches.ts), which keeps one rules object per zone so
 * its transition tables are computed once. `resolvedRules` finds an already built rules object
 * by the name Intl resolved the zone to.
 */
export function loadZoneRules(timeZone: string, resolvedRules: (resolved: string) => ZoneRules | undefined): { rules: ZoneRules; resolved: string } {
  let format: Intl.DateTimeFormat;
  try {
    if (timeZone === '' || timeZone !== timeZone.trim()) throw new RangeError('blank');
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  } catch {
    if (timeZone === '') return { rules: UTC_RULES, resolved: 'UTC' };
    throw new HeraldError('UNKNOWN_TIME_ZONE', `unknown time zone "${timeZone}" (expected an IANA name such as "Europe/Berlin")`, {
      field: TIME_ZONE_FIELD_PATH,
    });
  }
  const resolved = format.resolvedOptions().timeZone;
  if (resolved === 'UTC' || resolved === 'Etc/UTC') return { rules: UTC_RULES, resolved };
  return { rules: resolvedRules(resolved) ?? new IntlZoneRules(resolved, format), resolved };
}
