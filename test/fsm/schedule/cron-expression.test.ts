// Cron syntax: what is accepted, what is rejected (with a message saying what and where), and the
// day-of-month / day-of-week OR rule of classic cron.
import { describe, expect, it } from 'vitest';
import { parseCronExpression, slotsInRange, ScheduleCaches } from '../../../src/fsm/schedule/index.js';
import { isHeraldError } from '../../../src/herald-error.js';
import { cronSpec, ms, wall } from './spec-builders.js';

const caches = new ScheduleCaches();

describe('rejected expressions', () => {
  it.each([
    { expr: '', message: /empty/ },
    { expr: '* * * *', message: /has 4 field\(s\); expected 5/ },
    { expr: '* * * * * * *', message: /has 7 field\(s\)/ },
    { expr: '60 * * * *', message: /field 1 \(minute\) "60": value 60 is out of range 0-59/ },
    { expr: '* 24 * * *', message: /field 2 \(hour\) "24": value 24 is out of range 0-23/ },
    { expr: '* * 0 * *', message: /field 3 \(day-of-month\) "0": value 0 is out of range 1-31/ },
    { expr: '* * * 13 *', message: /field 4 \(month\) "13": value 13 is out of range 1-12/ },
    { expr: '* * * * 8', message: /field 5 \(day-of-week\) "8": value 8 is out of range 0-7/ },
    { expr: '60 * * * * *', message: /field 1 \(second\) "60": value 60 is out of range 0-59/ },
    { expr: '0 60 * * * *', message: /field 2 \(minute\) "60": value 60 is out of range 0-59/ },
    { expr: '*/0 * * * *', message: /field 1 \(minute\) "\*\/0": step must be at least 1/ },
    { expr: '*/x * * * *', message: /step "x" is not a positive integer/ },
    { expr: '5-2 * * * *', message: /range 5-2 runs backwards/ },
    { expr: '1,,2 * * * *', message: /empty list item/ },
    { expr: 'a * * * *', message: /field 1 \(minute\) "a": "a" is not a number/ },
    { expr: '* * * FOO *', message: /"FOO" is not a number or a month name/ },
    { expr: '* * 15W * *', message: /unsupported extension/ },
    { expr: '* * * * 5L', message: /nth\/last weekday is not supported/ },
    { expr: '* * * * 1#2', message: /nth\/last weekday is not supported/ },
    { expr: '* * * L *', message: /"L" is only supported in day-of-month/ },
    { expr: '? * * * *', message: /"\?" is only allowed in day-of-month and day-of-week/ },
    { expr: '@reboot', message: /unknown cron macro "@reboot"/ },
    { expr: '0 0 30 2 *', message: /never fires/ },
    { expr: `${'1,'.repeat(600)}1 * * * *`, message: /is 1209 characters long; at most 1024 are allowed/ },
    { expr: '0 0 31 4,6,9,11 *', message: /never fires/ },
  ])('"$expr" → INVALID_CRON $message', ({ expr, message }) => {
    let error: unknown;
    try {
      parseCronExpression(expr);
    } catch (e) {
      error = e;
    }
    expect(isHeraldError(error, 'INVALID_CRON')).toBe(true);
    if (!isHeraldError(error)) return;
    expect(error.message).toMatch(message);
    expect(error.details.field).toBe('spec.schedule.cron.expression');
  });
});

describe('accepted syntax (UTC)', () => {
  const from = ms('2026-01-01T00:00:00Z'); // a Thursday
  it.each([
    { expr: '0 0 * * MON', n: 2, expected: ['2026-01-05T00:00:00+00:00', '2026-01-12T00:00:00+00:00'] },
    { expr: '0 0 * * 7', n: 2, expected: ['2026-01-04T00:00:00+00:00', '2026-01-11T00:00:00+00:00'] },
    { expr: '0 0 * * sun', n: 1, expected: ['2026-01-04T00:00:00+00:00'] },
    { expr: '0 0 * * 5-7', n: 3, expected: ['2026-01-02T00:00:00+00:00', '2026-01-03T00:00:00+00:00', '2026-01-04T00:00:00+00:00'] },
    { expr: '0 0 1 jan-mar/2 *', n: 2, expected: ['2026-01-01T00:00:00+00:00', '2026-03-01T00:00:00+00:00'] },
    { expr: '10/20 3 1 1 *', n: 3, expected: ['2026-01-01T03:10:00+00:00', '2026-01-01T03:30:00+00:00', '2026-01-01T03:50:00+00:00'] },
    { expr: '0 0-12/6 1 1 *', n: 3, expected: ['2026-01-01T00:00:00+00:00', '2026-01-01T06:00:00+00:00', '2026-01-01T12:00:00+00:00'] },
    { expr: '  0   0  1 1 ?  ', n: 1, expected: ['2026-01-01T00:00:00+00:00'] },
    { expr: '@yearly', n: 2, expected: ['2026-01-01T00:00:00+00:00', '2027-01-01T00:00:00+00:00'] },
    { expr: '@monthly', n: 2, expected: ['2026-01-01T00:00:00+00:00', '2026-02-01T00:00:00+00:00'] },
    { expr: '@weekly', n: 1, expected: ['2026-01-04T00:00:00+00:00'] },
    { expr: '@hourly', n: 2, expected: ['2026-01-01T00:00:00+00:00', '2026-01-01T01:00:00+00:00'] },
  ])('$expr', ({ expr, n, expected }) => {
    expect(wall(slotsInRange(cronSpec(expr), from, from + 800 * 86_400_000, 0, n, caches), '')).toEqual(expected);
  });
});

describe('day-of-month / day-of-week (Vixie cron rule)', () => {
  // January 2026: the 1st is a Thursday; Mondays are the 5th, 12th, 19th, 26th.
  const from = ms('2026-01-01T00:00:00Z');
  const to = ms('2026-02-01T00:00:00Z');
  const days = (expr: string) => wall(slotsInRange(cronSpec(expr), from, to, 0, 100, caches), '').map((w) => w.slice(8, 10));
  it.each([
    { rule: 'both restricted: either matches (the 13th OR any Monday)', expr: '0 0 13 * 1', days: ['05', '12', '13', '19', '26'] },
    { rule: 'day-of-week is *: only day-of-month counts', expr: '0 0 13 * *', days: ['13'] },
    { rule: 'day-of-month is *: only day-of-week counts', expr: '0 0 * * 1', days: ['05', '12', '19', '26'] },
    { rule: 'day-of-month is ?: only day-of-week counts', expr: '0 0 ? * 1', days: ['05', '12', '19', '26'] },
    { rule: 'a field starting with * counts as unrestricted: */10 AND Monday', expr: '0 0 */10 * 1', days: [] },
    { rule: '*/2 AND Monday: odd days that are Mondays', expr: '0 0 */2 * 1', days: ['05', '19'] },
    { rule: 'L OR Friday', expr: '0 0 L * 5', days: ['02', '09', '16', '23', '30', '31'] },
  ])('$rule', ({ expr, days: expected }) => {
    expect(days(expr)).toEqual(expected);
  });
});
