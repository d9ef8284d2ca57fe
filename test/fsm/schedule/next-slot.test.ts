// nextSlotAfter / slotsInRange for each schedule kind, with bounds, sparse calendars and limits.
import { describe, expect, it } from 'vitest';
import { nextSlotAfter, slotsInRange, ScheduleCaches } from '../../../src/fsm/schedule/index.js';
import { atSpec, cronSpec, everySpec, ms, wall } from './spec-builders.js';

const caches = new ScheduleCaches();

const MIN = 60_000;
const HOUR = 3_600_000;

describe('6-field cron with seconds', () => {
  it.each([
    {
      name: 'every 15 seconds',
      expr: '*/15 * * * * *', from: '2026-05-01T10:00:07Z', n: 4,
      expected: ['2026-05-01T10:00:15+00:00', '2026-05-01T10:00:30+00:00', '2026-05-01T10:00:45+00:00', '2026-05-01T10:01:00+00:00'],
    },
    {
      name: 'second 30 of minute 0 of each hour',
      expr: '30 0 * * * *', from: '2026-05-01T10:00:31Z', n: 2,
      expected: ['2026-05-01T11:00:30+00:00', '2026-05-01T12:00:30+00:00'],
    },
    {
      name: 'seconds list rolls over minute, hour and day',
      expr: '5,55 59 23 * * *', from: '2026-12-31T23:59:06Z', n: 3,
      expected: ['2026-12-31T23:59:55+00:00', '2027-01-01T23:59:05+00:00', '2027-01-01T23:59:55+00:00'],
    },
  ])('$name', ({ expr, from, n, expected }) => {
    expect(wall(slotsInRange(cronSpec(expr), ms(from), ms(from) + 3 * 86_400_000, 0, n, caches), '')).toEqual(expected);
  });

  it('a 5-field cron fires on whole minutes only, strictly after a fractional afterMs', () => {
    const spec = cronSpec('* * * * *');
    expect(nextSlotAfter(spec, ms('2026-05-01T10:00:00Z') - 0.5, 0, caches)).toBe(ms('2026-05-01T10:00:00Z'));
    expect(nextSlotAfter(spec, ms('2026-05-01T10:00:00Z'), 0, caches)).toBe(ms('2026-05-01T10:01:00Z'));
    expect(nextSlotAfter(spec, ms('2026-05-01T10:00:59.999Z'), 0, caches)).toBe(ms('2026-05-01T10:01:00Z'));
  });

  it('an empty time zone means UTC; a zone shifts the same wall time', () => {
    const after = ms('2026-07-01T00:00:00Z');
    expect(nextSlotAfter(cronSpec('0 9 * * *', ''), after, 0, caches)).toBe(ms('2026-07-01T09:00:00Z'));
    expect(nextSlotAfter(cronSpec('0 9 * * *', 'Asia/Kolkata'), after, 0, caches)).toBe(ms('2026-07-01T09:00:00+05:30'));
    expect(nextSlotAfter(cronSpec('0 9 * * *', 'America/New_York'), after, 0, caches)).toBe(ms('2026-07-01T09:00:00-04:00'));
  });
});

describe('sparse calendars', () => {
  it.each([
    {
      name: 'Feb 29 skips non-leap years, including 2100',
      expr: '0 0 29 2 *', zone: '', from: '2025-01-01T00:00:00Z', n: 4,
      expected: ['2028-02-29T00:00:00+00:00', '2032-02-29T00:00:00+00:00', '2036-02-29T00:00:00+00:00', '2040-02-29T00:00:00+00:00'],
    },
    {
      name: 'Feb 29 across the 2100 non-leap century year (8-year gap)',
      expr: '0 12 29 2 *', zone: 'Europe/Berlin', from: '2096-03-01T00:00:00Z', n: 1,
      expected: ['2104-02-29T12:00:00+01:00'],
    },
    {
      name: 'the 31st only in months that have one',
      expr: '0 0 31 * *', zone: '', from: '2026-01-01T00:00:00Z', n: 7,
      expected: [
        '2026-01-31T00:00:00+00:00', '2026-03-31T00:00:00+00:00', '2026-05-31T00:00:00+00:00', '2026-07-31T00:00:00+00:00',
        '2026-08-31T00:00:00+00:00', '2026-10-31T00:00:00+00:00', '2026-12-31T00:00:00+00:00',
      ],
    },
    {
      name: 'L is the last day of each month, Feb 29 in leap years',
      expr: '0 0 L * *', zone: '', from: '2028-01-15T00:00:00Z', n: 4,
      expected: ['2028-01-31T00:00:00+00:00', '2028-02-29T00:00:00+00:00', '2028-03-31T00:00:00+00:00', '2028-04-30T00:00:00+00:00'],
    },
    {
      name: 'L in a non-leap February, in a zone',
      expr: '30 23 L 2 *', zone: 'America/New_York', from: '2026-01-01T00:00:00Z', n: 3,
      expected: ['2026-02-28T23:30:00-05:00', '2027-02-28T23:30:00-05:00', '2028-02-29T23:30:00-05:00'],
    },
    {
      name: 'Feb 1 on a Monday (*/31 counts as unrestricted, so AND): an 11-year gap',
      expr: '0 0 */31 2 1', zone: 'America/New_York', from: '2026-01-01T00:00:00Z', n: 3,
      expected: ['2027-02-01T00:00:00-05:00', '2038-02-01T00:00:00-05:00', '2044-02-01T00:00:00-05:00'],
    },
    {
      name: 'the 30th skips February',
      expr: '0 0 30 * *', zone: '', from: '2026-01-15T00:00:00Z', n: 3,
      expected: ['2026-01-30T00:00:00+00:00', '2026-03-30T00:00:00+00:00', '2026-04-30T00:00:00+00:00'],
    },
  ])('$name', ({ expr, zone, from, n, expected }) => {
    expect(wall(slotsInRange(cronSpec(expr, zone), ms(from), ms(from) + 30 * 366 * 86_400_000, 0, n, caches), zone)).toEqual(expected);
  });
});

describe('every', () => {
  const created = ms('2026-05-01T10:00:00.250Z');
  it.each([
    {
      name: 'anchored at creation time when no anchor and no start are given',
      spec: everySpec(90_000), after: created - 1, n: 3,
      expected: [created, created + 90_000, created + 180_000],
    },
    {
      name: 'after a slot, the next is exactly one interval later',
      spec: everySpec(90_000), after: created, n: 2,
      expected: [created + 90_000, created + 180_000],
    },
    {
      name: 'mid-interval: the next multiple, never "now + interval"',
      spec: everySpec(HOUR, ms('2026-01-01T00:00:00Z')), after: ms('2026-05-01T10:17:00Z'), n: 2,
      expected: [ms('2026-05-01T11:00:00Z'), ms('2026-05-01T12:00:00Z')],
    },
    {
      name: 'the explicit anchor is the first slot: nothing before it',
      spec: everySpec(MIN, ms('2026-06-01T00:00:30Z')), after: 0, n: 2,
      expected: [ms('2026-06-01T00:00:30Z'), ms('2026-06-01T00:01:30Z')],
    },
    {
      name: 'the start bound anchors when there is no explicit anchor',
      spec: everySpec(MIN, 0, { startUnixMs: ms('2026-06-01T00:00:07Z') }), after: 0, n: 2,
      expected: [ms('2026-06-01T00:00:07Z'), ms('2026-06-01T00:01:07Z')],
    },
    {
      name: 'an explicit anchor before the start bound: first slot on the anchor grid at or after start',
      spec: everySpec(MIN, ms('2026-06-01T00:00:00Z'), { startUnixMs: ms('2026-06-01T00:10:30Z') }), after: 0, n: 2,
      expected: [ms('2026-06-01T00:11:00Z'), ms('2026-06-01T00:12:00Z')],
    },
    {
      name: 'the end bound is exclusive',
      spec: everySpec(MIN, ms('2026-06-01T00:00:00Z'), { endUnixMs: ms('2026-06-01T00:02:00Z') }), after: 0, n: 10,
      expected: [ms('2026-06-01T00:00:00Z'), ms('2026-06-01T00:01:00Z')],
    },
    {
      name: 'far from the anchor (50 years of seconds) stays exact',
      spec: everySpec(1000, 1), after: ms('2076-01-01T00:00:00Z'), n: 1,
      expected: [ms('2076-01-01T00:00:00Z') + 1],
    },
  ])('$name', ({ spec, after, n, expected }) => {
    expect(slotsInRange(spec, after + 1, Number.MAX_SAFE_INTEGER, created, n, caches)).toEqual(expected);
  });
});

describe('one-off (at)', () => {
  const at = ms('2026-06-01T12:00:00Z');
  it.each([
    { name: 'before the slot: the slot', spec: atSpec(at), after: at - 1, expected: at },
    { name: 'at the slot: nothing further', spec: atSpec(at), after: at, expected: undefined },
    { name: 'start bound equal to the slot is inclusive', spec: atSpec(at, { startUnixMs: at }), after: 0, expected: at },
    { name: 'start bound after the slot excludes it', spec: atSpec(at, { startUnixMs: at + 1 }), after: 0, expected: undefined },
    { name: 'end bound equal to the slot is exclusive', spec: atSpec(at, { endUnixMs: at }), after: 0, expected: undefined },
    { name: 'end bound after the slot keeps it', spec: atSpec(at, { endUnixMs: at + 1 }), after: 0, expected: at },
  ])('$name', ({ spec, after, expected }) => {
    expect(nextSlotAfter(spec, after, 0, caches)).toBe(expected);
  });
});

describe('cron bounds', () => {
  const start = ms('2026-06-01T10:00:00Z');
  const end = ms('2026-06-01T10:03:00Z');
  const spec = cronSpec('* * * * *', '', 'shift', 'first', { startUnixMs: start, endUnixMs: end });
  it.each([
    { name: 'long before start: the start itself (inclusive)', after: 0, expected: start },
    { name: 'just before start: the start', after: start - 1, expected: start },
    { name: 'at start: the next minute', after: start, expected: start + MIN },
    { name: 'last slot before the exclusive end', after: start + MIN, expected: start + 2 * MIN },
    { name: 'a slot equal to end is not a slot', after: start + 2 * MIN, expected: undefined },
    { name: 'after end: no slot', after: end + HOUR, expected: undefined },
  ])('$name', ({ after, expected }) => {
    expect(nextSlotAfter(spec, after, 0, caches)).toBe(expected);
  });

  it('a start bound between cron matches: the first match at or after it', () => {
    const s = cronSpec('0 * * * *', '', 'shift', 'first', { startUnixMs: ms('2026-06-01T10:00:00.001Z') });
    expect(nextSlotAfter(s, 0, 0, caches)).toBe(ms('2026-06-01T11:00:00Z'));
  });
});

describe('slotsInRange', () => {
  const spec = cronSpec('*/10 * * * *');
  const from = ms('2026-06-01T10:00:00Z');
  it.each([
    { name: 'from is inclusive, to exclusive', from, to: from + 30 * MIN, limit: 100, count: 3, first: from },
    { name: 'the limit truncates, oldest first', from, to: from + 24 * HOUR, limit: 5, count: 5, first: from },
    { name: 'limit 0 gives nothing', from, to: from + HOUR, limit: 0, count: 0, first: undefined },
    { name: 'an empty range gives nothing', from, to: from, limit: 10, count: 0, first: undefined },
    { name: 'a reversed range gives nothing', from, to: from - HOUR, limit: 10, count: 0, first: undefined },
    { name: 'from between slots starts at the next slot', from: from + 1, to: from + 30 * MIN, limit: 100, count: 2, first: from + 10 * MIN },
  ])('$name', ({ from: f, to, limit, count, first }) => {
    const slots = slotsInRange(spec, f, to, 0, limit, caches);
    expect(slots).toHaveLength(count);
    expect(slots[0]).toBe(first);
    for (let i = 1; i < slots.length; i++) expect(slots[i]! - slots[i - 1]!).toBe(10 * MIN);
  });

  it('agrees with chaining nextSlotAfter', () => {
    const zoned = cronSpec('7 */3 * * *', 'Europe/Berlin', 'shift', 'both');
    const slots = slotsInRange(zoned, ms('2026-03-28T00:00:00Z'), ms('2026-04-02T00:00:00Z'), 0, 1000, caches);
    let t = ms('2026-03-28T00:00:00Z') - 1;
    const chained: number[] = [];
    for (;;) {
      const next = nextSlotAfter(zoned, t, 0, caches);
      if (next === undefined || next >= ms('2026-04-02T00:00:00Z')) break;
      chained.push(next);
      t = next;
    }
    expect(slots).toEqual(chained);
    expect(slots.length).toBe(5 * 8);
  });
});
