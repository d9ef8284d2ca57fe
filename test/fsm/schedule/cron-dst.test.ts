// DST behaviour of cron schedules: cron fields are evaluated on local wall time, and wall times
// skipped by spring-forward (gap) or repeated by fall-back (fold) resolve per the job's DstPolicy.
// Expectations are written as local wall times with their UTC offset.
import { describe, expect, it } from 'vitest';
import { slotsInRange, ScheduleCaches } from '../../../src/fsm/schedule/index.js';
import { cronSpec, ms, wall, type Fold, type Gap } from './spec-builders.js';

const caches = new ScheduleCaches();

interface Scenario {
  name: string;
  zone: string;
  cron: string;
  gap?: Gap;
  fold?: Fold;
  from: string;
  to: string;
  /** Optional job bounds. */
  start?: string;
  end?: string;
  expected: string[];
}

// Transitions used below (2026):
//   America/New_York    spring 03-08 02:00 EST -> 03:00 EDT; fall 11-01 02:00 EDT -> 01:00 EST
//   Europe/Berlin       spring 03-29 02:00 CET -> 03:00 CEST; fall 10-25 03:00 CEST -> 02:00 CET
//   Australia/Lord_Howe fall 04-05 02:00 +11 -> 01:30 +10:30; spring 10-04 02:00 +10:30 -> 02:30 +11
const scenarios: Scenario[] = [
  // --- America/New_York, spring forward (02:00-02:59 does not exist) ---
  {
    name: 'NY gap, shift forward: 02:30 fires at 03:00 EDT on the transition day only',
    zone: 'America/New_York', cron: '30 2 * * *', gap: 'shift',
    from: '2026-03-07T00:00:00-05:00', to: '2026-03-10T00:00:00-04:00',
    expected: ['2026-03-07T02:30:00-05:00', '2026-03-08T03:00:00-04:00', '2026-03-09T02:30:00-04:00'],
  },
  {
    name: 'NY gap, unspecified policy behaves as shift forward',
    zone: 'America/New_York', cron: '30 2 * * *', gap: 'unspecified',
    from: '2026-03-08T00:00:00-05:00', to: '2026-03-09T00:00:00-04:00',
    expected: ['2026-03-08T03:00:00-04:00'],
  },
  {
    name: 'NY gap, skip: 02:30 does not fire on the transition day',
    zone: 'America/New_York', cron: '30 2 * * *', gap: 'skip',
    from: '2026-03-07T00:00:00-05:00', to: '2026-03-10T00:00:00-04:00',
    expected: ['2026-03-07T02:30:00-05:00', '2026-03-09T02:30:00-04:00'],
  },
  {
    name: 'NY gap, shift forward: four skipped quarter hours collapse into one slot at 03:00',
    zone: 'America/New_York', cron: '*/15 2 * * *', gap: 'shift',
    from: '2026-03-08T00:00:00-05:00', to: '2026-03-08T12:00:00-04:00',
    expected: ['2026-03-08T03:00:00-04:00'],
  },
  {
    name: 'NY gap, skip: the skipped quarter hours do not fire at all',
    zone: 'America/New_York', cron: '*/15 2 * * *', gap: 'skip',
    from: '2026-03-08T00:00:00-05:00', to: '2026-03-08T12:00:00-04:00',
    expected: [],
  },
  {
    name: 'NY gap, shift forward: */15 all day has no duplicate 03:00 (shifted and real coincide)',
    zone: 'America/New_York', cron: '*/15 * * * *', gap: 'shift',
    from: '2026-03-08T01:30:00-05:00', to: '2026-03-08T03:20:00-04:00',
    expected: ['2026-03-08T01:30:00-05:00', '2026-03-08T01:45:00-05:00', '2026-03-08T03:00:00-04:00', '2026-03-08T03:15:00-04:00'],
  },
  {
    name: 'NY gap, 6 fields: every second of the gap collapses into 03:00:00',
    zone: 'America/New_York', cron: '* * 2 * * *', gap: 'shift',
    from: '2026-03-08T01:59:58-05:00', to: '2026-03-08T03:00:02-04:00',
    expected: ['2026-03-08T03:00:00-04:00'],
  },
  // --- America/New_York, fall back (01:00-01:59 occurs twice) ---
  {
    name: 'NY fold, first: 01:30 fires at the EDT occurrence only',
    zone: 'America/New_York', cron: '30 1 * * *', fold: 'first',
    from: '2026-10-31T00:00:00-04:00', to: '2026-11-03T00:00:00-05:00',
    expected: ['2026-10-31T01:30:00-04:00', '2026-11-01T01:30:00-04:00', '2026-11-02T01:30:00-05:00'],
  },
  {
    name: 'NY fold, unspecified policy behaves as first',
    zone: 'America/New_York', cron: '30 1 * * *', fold: 'unspecified',
    from: '2026-11-01T00:00:00-04:00', to: '2026-11-02T00:00:00-05:00',
    expected: ['2026-11-01T01:30:00-04:00'],
  },
  {
    name: 'NY fold, last: 01:30 fires at the EST occurrence only',
    zone: 'America/New_York', cron: '30 1 * * *', fold: 'last',
    from: '2026-11-01T00:00:00-04:00', to: '2026-11-02T00:00:00-05:00',
    expected: ['2026-11-01T01:30:00-05:00'],
  },
  {
    name: 'NY fold, both: 01:30 fires twice, an hour apart',
    zone: 'America/New_York', cron: '30 1 * * *', fold: 'both',
    from: '2026-11-01T00:00:00-04:00', to: '2026-11-02T00:00:00-05:00',
    expected: ['2026-11-01T01:30:00-04:00', '2026-11-01T01:30:00-05:00'],
  },
  {
    name: 'NY fold, first: hourly skips the repeated 01:00',
    zone: 'America/New_York', cron: '0 * * * *', fold: 'first',
    from: '2026-11-01T00:00:00-04:00', to: '2026-11-01T03:30:00-05:00',
    expected: ['2026-11-01T00:00:00-04:00', '2026-11-01T01:00:00-04:00', '2026-11-01T02:00:00-05:00', '2026-11-01T03:00:00-05:00'],
  },
  {
    name: 'NY fold, last: hourly fires 01:00 only in its second occurrence',
    zone: 'America/New_York', cron: '0 * * * *', fold: 'last',
    from: '2026-11-01T00:00:00-04:00', to: '2026-11-01T03:30:00-05:00',
    expected: ['2026-11-01T00:00:00-04:00', '2026-11-01T01:00:00-05:00', '2026-11-01T02:00:00-05:00', '2026-11-01T03:00:00-05:00'],
  },
  {
    name: 'NY fold, both: hourly fires at every real hour',
    zone: 'America/New_York', cron: '0 * * * *', fold: 'both',
    from: '2026-11-01T00:00:00-04:00', to: '2026-11-01T02:30:00-05:00',
    expected: ['2026-11-01T00:00:00-04:00', '2026-11-01T01:00:00-04:00', '2026-11-01T01:00:00-05:00', '2026-11-01T02:00:00-05:00'],
  },
  {
    name: 'NY fold, last, end bound inside the first pass: the chosen (second) 01:30 is past the end',
    zone: 'America/New_York', cron: '30 1 * * *', fold: 'last', end: '2026-11-01T01:45:00-04:00',
    from: '2026-10-31T00:00:00-04:00', to: '2026-11-03T00:00:00-05:00',
    expected: ['2026-10-31T01:30:00-04:00'],
  },
  {
    name: 'NY fold, first, start bound inside the second pass: the repeated 01:30 does not fire again',
    zone: 'America/New_York', cron: '30 1 * * *', fold: 'first', start: '2026-11-01T01:15:00-05:00',
    from: '2026-10-31T00:00:00-04:00', to: '2026-11-03T00:00:00-05:00',
    expected: ['2026-11-02T01:30:00-05:00'],
  },
  {
    name: 'NY fold, first, start inside the repeat: after the dropped 01:30 the next is in April, in EDT',
    zone: 'America/New_York', cron: '30 1 1 4,11 *', fold: 'first', start: '2026-11-01T01:10:00-05:00',
    from: '2026-10-01T00:00:00-04:00', to: '2027-12-01T00:00:00-05:00',
    expected: ['2027-04-01T01:30:00-04:00', '2027-11-01T01:30:00-04:00'],
  },
  // --- Europe/Berlin ---
  {
    name: 'Berlin gap, shift forward: 02:30 fires at 03:00 CEST',
    zone: 'Europe/Berlin', cron: '30 2 * * *', gap: 'shift',
    from: '2026-03-28T12:00:00+01:00', to: '2026-03-30T12:00:00+02:00',
    expected: ['2026-03-29T03:00:00+02:00', '2026-03-30T02:30:00+02:00'],
  },
  {
    name: 'Berlin gap, skip',
    zone: 'Europe/Berlin', cron: '30 2 * * *', gap: 'skip',
    from: '2026-03-28T12:00:00+01:00', to: '2026-03-30T12:00:00+02:00',
    expected: ['2026-03-30T02:30:00+02:00'],
  },
  {
    name: 'Berlin gap, a 03:00 schedule is not affected by the gap policy',
    zone: 'Europe/Berlin', cron: '0 3 * * *', gap: 'skip',
    from: '2026-03-29T00:00:00+01:00', to: '2026-03-29T12:00:00+02:00',
    expected: ['2026-03-29T03:00:00+02:00'],
  },
  {
    name: 'Berlin fold, first',
    zone: 'Europe/Berlin', cron: '30 2 * * *', fold: 'first',
    from: '2026-10-25T00:00:00+02:00', to: '2026-10-26T00:00:00+01:00',
    expected: ['2026-10-25T02:30:00+02:00'],
  },
  {
    name: 'Berlin fold, last',
    zone: 'Europe/Berlin', cron: '30 2 * * *', fold: 'last',
    from: '2026-10-25T00:00:00+02:00', to: '2026-10-26T00:00:00+01:00',
    expected: ['2026-10-25T02:30:00+01:00'],
  },
  {
    name: 'Berlin fold, both',
    zone: 'Europe/Berlin', cron: '30 2 * * *', fold: 'both',
    from: '2026-10-25T00:00:00+02:00', to: '2026-10-26T00:00:00+01:00',
    expected: ['2026-10-25T02:30:00+02:00', '2026-10-25T02:30:00+01:00'],
  },
  // --- Australia/Lord_Howe: 30-minute shifts ---
  {
    name: 'Lord Howe gap, shift forward: 02:15 fires at 02:30 (+11:00)',
    zone: 'Australia/Lord_Howe', cron: '15 2 * * *', gap: 'shift',
    from: '2026-10-03T00:00:00+10:30', to: '2026-10-05T12:00:00+11:00',
    expected: ['2026-10-03T02:15:00+10:30', '2026-10-04T02:30:00+11:00', '2026-10-05T02:15:00+11:00'],
  },
  {
    name: 'Lord Howe gap, skip: 02:15 does not fire on the transition day',
    zone: 'Australia/Lord_Howe', cron: '15 2 * * *', gap: 'skip',
    from: '2026-10-03T00:00:00+10:30', to: '2026-10-05T12:00:00+11:00',
    expected: ['2026-10-03T02:15:00+10:30', '2026-10-05T02:15:00+11:00'],
  },
  {
    name: 'Lord Howe gap, shift forward: 02:45 is real (the gap is only half an hour)',
    zone: 'Australia/Lord_Howe', cron: '45 2 * * *', gap: 'skip',
    from: '2026-10-04T00:00:00+10:30', to: '2026-10-04T12:00:00+11:00',
    expected: ['2026-10-04T02:45:00+11:00'],
  },
  {
    name: 'Lord Howe gap, shift forward: */20 in the gap and at 02:40 gives 02:30 then 02:40',
    zone: 'Australia/Lord_Howe', cron: '*/20 2 * * *', gap: 'shift',
    from: '2026-10-04T00:00:00+10:30', to: '2026-10-04T12:00:00+11:00',
    expected: ['2026-10-04T02:30:00+11:00', '2026-10-04T02:40:00+11:00'],
  },
  {
    name: 'Lord Howe fold, first: 01:45 (repeated) fires at +11:00 only',
    zone: 'Australia/Lord_Howe', cron: '45 1 * * *', fold: 'first',
    from: '2026-04-05T00:00:00+11:00', to: '2026-04-06T00:00:00+10:30',
    expected: ['2026-04-05T01:45:00+11:00'],
  },
  {
    name: 'Lord Howe fold, last',
    zone: 'Australia/Lord_Howe', cron: '45 1 * * *', fold: 'last',
    from: '2026-04-05T00:00:00+11:00', to: '2026-04-06T00:00:00+10:30',
    expected: ['2026-04-05T01:45:00+10:30'],
  },
  {
    name: 'Lord Howe fold, both',
    zone: 'Australia/Lord_Howe', cron: '45 1 * * *', fold: 'both',
    from: '2026-04-05T00:00:00+11:00', to: '2026-04-06T00:00:00+10:30',
    expected: ['2026-04-05T01:45:00+11:00', '2026-04-05T01:45:00+10:30'],
  },
  {
    name: 'Lord Howe fold, first: 01:15 is before the fold and fires once whatever the policy',
    zone: 'Australia/Lord_Howe', cron: '15 1 * * *', fold: 'both',
    from: '2026-04-05T00:00:00+11:00', to: '2026-04-06T00:00:00+10:30',
    expected: ['2026-04-05T01:15:00+11:00'],
  },
  // --- Transitions at local midnight and a skipped day ---
  {
    name: 'Santiago gap at midnight, shift forward: the daily 00:00 fires at 01:00 (-03:00)',
    zone: 'America/Santiago', cron: '0 0 * * *', gap: 'shift',
    from: '2026-09-05T12:00:00-04:00', to: '2026-09-07T12:00:00-03:00',
    expected: ['2026-09-06T01:00:00-03:00', '2026-09-07T00:00:00-03:00'],
  },
  {
    name: 'Santiago gap at midnight, skip: no run on the transition day',
    zone: 'America/Santiago', cron: '0 0 * * *', gap: 'skip',
    from: '2026-09-05T12:00:00-04:00', to: '2026-09-07T12:00:00-03:00',
    expected: ['2026-09-07T00:00:00-03:00'],
  },
  {
    name: 'Santiago gap at midnight: a Sunday-only 00:30 shifts to Sunday 01:00',
    zone: 'America/Santiago', cron: '30 0 * * SUN', gap: 'shift',
    from: '2026-09-01T00:00:00-04:00', to: '2026-09-14T00:00:00-03:00',
    expected: ['2026-09-06T01:00:00-03:00', '2026-09-13T00:30:00-03:00'],
  },
  {
    name: 'Santiago fold before midnight, first: Saturday 23:30 fires in the -03:00 pass',
    zone: 'America/Santiago', cron: '30 23 * * SAT', fold: 'first',
    from: '2026-04-04T12:00:00-03:00', to: '2026-04-05T12:00:00-04:00',
    expected: ['2026-04-04T23:30:00-03:00'],
  },
  {
    name: 'Santiago fold before midnight, last',
    zone: 'America/Santiago', cron: '30 23 * * SAT', fold: 'last',
    from: '2026-04-04T12:00:00-03:00', to: '2026-04-05T12:00:00-04:00',
    expected: ['2026-04-04T23:30:00-04:00'],
  },
  {
    name: 'Santiago fold before midnight, both',
    zone: 'America/Santiago', cron: '30 23 * * SAT', fold: 'both',
    from: '2026-04-04T12:00:00-03:00', to: '2026-04-05T12:00:00-04:00',
    expected: ['2026-04-04T23:30:00-03:00', '2026-04-04T23:30:00-04:00'],
  },
  {
    name: 'Samoa skipped 2011-12-30 entirely: its noon shifts to the first instant of the 31st',
    zone: 'Pacific/Apia', cron: '0 12 * * *', gap: 'shift',
    from: '2011-12-29T00:00:00-10:00', to: '2012-01-01T00:00:00+14:00',
    expected: ['2011-12-29T12:00:00-10:00', '2011-12-31T00:00:00+14:00', '2011-12-31T12:00:00+14:00'],
  },
  {
    name: 'Samoa skipped day, skip',
    zone: 'Pacific/Apia', cron: '0 12 * * *', gap: 'skip',
    from: '2011-12-29T00:00:00-10:00', to: '2012-01-01T00:00:00+14:00',
    expected: ['2011-12-29T12:00:00-10:00', '2011-12-31T12:00:00+14:00'],
  },
];

describe('cron DST policy', () => {
  it.each(scenarios)('$name', (s) => {
    const spec = cronSpec(s.cron, s.zone, s.gap, s.fold, {
      startUnixMs: s.start ? ms(s.start) : 0,
      endUnixMs: s.end ? ms(s.end) : 0,
    });
    expect(wall(slotsInRange(spec, ms(s.from), ms(s.to), 0, 1000, caches), s.zone)).toEqual(s.expected);
  });
});

describe('every minute inside the NY fold', () => {
  const from = ms('2026-11-01T00:59:00-04:00');
  const to = ms('2026-11-01T02:02:00-05:00');
  const slots = (fold: Fold) => slotsInRange(cronSpec('* * * * *', 'America/New_York', 'shift', fold), from, to, 0, 1000, caches);

  it.each([
    // 00:59 EDT, then 60 repeated minutes once (or twice), then 02:00 and 02:00+1min EST
    { fold: 'first' as Fold, count: 1 + 60 + 2, firstRepeated: '2026-11-01T01:00:00-04:00', lastRepeated: '2026-11-01T01:59:00-04:00' },
    { fold: 'last' as Fold, count: 1 + 60 + 2, firstRepeated: '2026-11-01T01:00:00-05:00', lastRepeated: '2026-11-01T01:59:00-05:00' },
    { fold: 'both' as Fold, count: 1 + 120 + 2, firstRepeated: '2026-11-01T01:00:00-04:00', lastRepeated: '2026-11-01T01:59:00-05:00' },
  ])('fold $fold: $count slots, the repeated hour from $firstRepeated to $lastRepeated', ({ fold, count, firstRepeated, lastRepeated }) => {
    const w = wall(slots(fold), 'America/New_York');
    expect(w).toHaveLength(count);
    expect(w[1]).toBe(firstRepeated);
    expect(w[count - 3]).toBe(lastRepeated);
    expect(w.at(-2)).toBe('2026-11-01T02:00:00-05:00');
    expect(new Set(w).size).toBe(w.length);
  });
});
