// Property: around real DST transitions, the cron slots equal those of a brute-force reference
// that walks the timeline minute by minute, reads wall time straight from Intl, and applies the
// gap/fold policy by its definition. It shares no code with the implementation.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { slotsInRange, ScheduleCaches } from '../../../src/fsm/schedule/index.js';
import { cronSpec, ms, type Fold, type Gap } from './spec-builders.js';

const caches = new ScheduleCaches();

const MIN = 60_000;
const HOUR = 3_600_000;
const LOOKAROUND = 2 * HOUR; // longer than any fold, so "occurs earlier/later" is decidable

const transitions = [
  { zone: 'America/New_York', at: ms('2026-03-08T07:00:00Z') },
  { zone: 'America/New_York', at: ms('2026-11-01T06:00:00Z') },
  { zone: 'Europe/Berlin', at: ms('2026-03-29T01:00:00Z') },
  { zone: 'Europe/Berlin', at: ms('2026-10-25T01:00:00Z') },
  { zone: 'Australia/Lord_Howe', at: ms('2026-04-04T15:00:00Z') },
  { zone: 'Australia/Lord_Howe', at: ms('2026-10-03T15:30:00Z') },
  // Transitions at local midnight: the gap/fold crosses a date (and weekday) boundary.
  { zone: 'America/Santiago', at: ms('2026-04-05T03:00:00Z') },
  { zone: 'America/Santiago', at: ms('2026-09-06T04:00:00Z') },
  // Samoa skipped the whole of 2011-12-30 (-10:00 -> +14:00).
  { zone: 'Pacific/Apia', at: ms('2011-12-30T10:00:00Z') },
];

const formats = new Map<string, Intl.DateTimeFormat>();
/** Wall time of instant t in zone, as { key: "YYYY-MM-DD HH:MM", wallMs, hour, minute }. */
function wallOf(zone: string, t: number) {
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', {
      timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit',
    });
    formats.set(zone, f);
  }
  const p = Object.fromEntries(f.formatToParts(t).map((x) => [x.type, x.value]));
  const hour = Number(p.hour);
  const minute = Number(p.minute);
  const wallMs = Date.UTC(Number(p.year), Number(p.month) - 1, Number(p.day), hour, minute);
  return { wallMs, hour, minute };
}

const timelines = new Map<string, ReturnType<typeof buildTimeline>>();
/** Every minute instant around [from, to) with its wall time and where each wall time recurs. */
function timeline(zone: string, from: number, to: number) {
  const key = `${zone} ${from} ${to}`;
  let tl = timelines.get(key);
  if (!tl) timelines.set(key, (tl = buildTimeline(zone, from, to)));
  return tl;
}
function buildTimeline(zone: string, from: number, to: number) {
  const ts: number[] = [];
  for (let t = from - LOOKAROUND; t < to + LOOKAROUND; t += MIN) ts.push(t);
  const walls = ts.map((t) => wallOf(zone, t).wallMs);
  const firstIndex = new Map<number, number>();
  const lastIndex = new Map<number, number>();
  walls.forEach((w, i) => {
    if (!firstIndex.has(w)) firstIndex.set(w, i);
    lastIndex.set(w, i);
  });
  return { ts, walls, firstIndex, lastIndex };
}

function reference(
  zone: string, minutes: Set<number>, hours: Set<number>, weekdays: Set<number> | undefined,
  gap: Gap, fold: Fold, from: number, to: number,
): number[] {
  const matches = (wallMs: number) => {
    const d = new Date(wallMs);
    return minutes.has(d.getUTCMinutes()) && hours.has(d.getUTCHours()) && (!weekdays || weekdays.has(d.getUTCDay()));
  };
  const { ts, walls, firstIndex, lastIndex } = timeline(zone, from, to);
  const out = new Set<number>();
  for (let i = 0; i < ts.length; i++) {
    const t = ts[i]!;
    if (t < from || t >= to) continue;
    if (matches(walls[i]!)) {
      const earlier = firstIndex.get(walls[i]!)! < i;
      const later = lastIndex.get(walls[i]!)! > i;
      const keep = fold === 'both' || (fold === 'auto' && (!earlier || autoBoth(walls, firstIndex, lastIndex, walls[i]!, hours))) || (fold === 'last' ? !later : !earlier);
      if (keep) out.add(t);
    }
    // Wall times jumped over between the previous minute and this one: a spring-forward gap.
    if (gap !== 'skip' && i > 0) {
      for (let w = walls[i - 1]! + MIN; w < walls[i]!; w += MIN) if (matches(w)) out.add(t);
    }
  }
  return [...out].sort((a, b) => a - b);
}

/**
 * AUTO by its definition, from the timeline alone: the fold is the run of wall times that occur
 * twice around `wall`; BOTH when the hour set holds every hour the fold touches and the hour
 * before it or the hour after it.
 */
function autoBoth(walls: number[], firstIndex: Map<number, number>, lastIndex: Map<number, number>, wall: number, hours: Set<number>): boolean {
  const repeated = walls.filter((w) => firstIndex.get(w) !== lastIndex.get(w) && Math.abs(w - wall) < 2 * HOUR);
  const f0 = Math.min(...repeated);
  const f1 = Math.max(...repeated) + MIN;
  const hourOf = (w: number) => new Date(w).getUTCHours();
  const start = Math.floor(f0 / HOUR) * HOUR;
  for (let h = start; h < f1; h += HOUR) if (!hours.has(hourOf(h))) return false;
  return hours.has(hourOf(start - HOUR)) || hours.has(hourOf(Math.ceil(f1 / HOUR) * HOUR));
}

const minuteSets = fc.uniqueArray(fc.integer({ min: 0, max: 59 }), { minLength: 1, maxLength: 6 });
// Hours near the transitions used above (01:00-03:00 local, or midnight).
const hourSets = fc.uniqueArray(fc.constantFrom(0, 1, 2, 3, 4, 22, 23), { minLength: 1, maxLength: 3 });
const weekdaySets = fc.option(fc.uniqueArray(fc.integer({ min: 0, max: 6 }), { minLength: 1, maxLength: 3 }), { nil: undefined });

describe('cron slots around DST transitions match a brute-force reference', () => {
  it('for random minute/hour sets, windows and policies', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...transitions),
        fc.integer({ min: -6 * 60, max: 2 * 60 }),
        minuteSets,
        hourSets,
        weekdaySets,
        fc.constantFrom<Gap>('shift', 'skip'),
        fc.constantFrom<Fold>('first', 'last', 'both'),
        ({ zone, at }, startMin, minutes, hours, weekdays, gap, fold) => {
          const from = at + startMin * MIN;
          const to = from + 6 * HOUR;
          const expr = `${minutes.join(',')} ${hours.join(',')} * * ${weekdays ? weekdays.join(',') : '*'}`;
          const actual = slotsInRange(cronSpec(expr, zone, gap, fold), from, to, 0, 10_000, caches);
          const expected = reference(zone, new Set(minutes), new Set(hours), weekdays && new Set(weekdays), gap, fold, from, to);
          expect(actual).toEqual(expected);
        },
      ),
      { numRuns: 60, seed: 20261129 },
    );
  });

  it('every minute of every DST day: strictly increasing, unique, equal to the reference', () => {
    for (const { zone, at } of transitions) {
      for (const gap of ['shift', 'skip'] as const) {
        for (const fold of ['first', 'last', 'both'] as const) {
          const from = at - 3 * HOUR;
          const to = at + 3 * HOUR;
          const all = new Set(Array.from({ length: 60 }, (_, i) => i));
          const hours = new Set(Array.from({ length: 24 }, (_, i) => i));
          const actual = slotsInRange(cronSpec('* * * * *', zone, gap, fold), from, to, 0, 10_000, caches);
          for (let i = 1; i < actual.length; i++) expect(actual[i]!).toBeGreaterThan(actual[i - 1]!);
          expect(actual).toEqual(reference(zone, all, hours, undefined, gap, fold, from, to));
        }
      }
    }
  });

  // AUTO in zones with a 1 h (Berlin, New York), a 30 min (Lord Howe) and a negative-DST
  // (Dublin: IST is standard time, winter the "DST") fold, hours drawn to hit wildcard-like runs.
  const autoTransitions = [
    ...transitions.filter((t) => t.zone !== 'Pacific/Apia' && t.zone !== 'America/Santiago'),
    { zone: 'Europe/Dublin', at: ms('2026-03-29T01:00:00Z') },
    { zone: 'Europe/Dublin', at: ms('2026-10-25T01:00:00Z') },
  ];
  const autoHourSets = fc.oneof(
    hourSets,
    fc.constant(Array.from({ length: 24 }, (_, i) => i)),
    fc.integer({ min: 0, max: 3 }).chain((lo) => fc.integer({ min: lo, max: 4 }).map((hi) => Array.from({ length: hi - lo + 1 }, (_, i) => lo + i))),
  );

  it('AUTO: fixed-hour crons fire once in the fold, hourly-or-faster ones at every real occurrence', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...autoTransitions),
        fc.integer({ min: -6 * 60, max: 2 * 60 }),
        minuteSets,
        autoHourSets,
        fc.constantFrom<Gap>('shift', 'skip'),
        ({ zone, at }, startMin, minutes, hours, gap) => {
          const from = at + startMin * MIN;
          const to = from + 6 * HOUR;
          const expr = `${minutes.join(',')} ${hours.join(',')} * * *`;
          const actual = slotsInRange(cronSpec(expr, zone, gap, 'auto'), from, to, 0, 10_000, caches);
          expect(actual).toEqual(reference(zone, new Set(minutes), new Set(hours), undefined, gap, 'auto', from, to));
        },
      ),
      { numRuns: 120, seed: 20261205 },
    );
  });

  it('AUTO on the examples of issue 30: 0 * * * * and */5 * * * * keep real time through the Berlin fold; 0 2 * * * fires once', () => {
    const at = ms('2026-10-25T01:00:00Z'); // 03:00 CEST -> 02:00 CET
    const hourly = slotsInRange(cronSpec('0 * * * *', 'Europe/Berlin', 'shift', 'auto'), at - 3 * HOUR, at + 2 * HOUR, 0, 100, caches);
    for (let i = 1; i < hourly.length; i++) expect(hourly[i]! - hourly[i - 1]!).toBe(HOUR);
    const fiveMin = slotsInRange(cronSpec('*/5 * * * *', 'Europe/Berlin', 'shift', 'auto'), at - HOUR, at + HOUR, 0, 100, caches);
    for (let i = 1; i < fiveMin.length; i++) expect(fiveMin[i]! - fiveMin[i - 1]!).toBe(5 * MIN);
    expect(slotsInRange(cronSpec('0 2 * * *', 'Europe/Berlin', 'shift', 'auto'), at - 3 * HOUR, at + 3 * HOUR, 0, 100, caches)).toEqual([at - HOUR]);
  });
});
