// Property: in UTC (no DST involved), our field matching agrees with cron-parser on random 6-field
// expressions. The generator avoids the spots where the two deliberately differ: cron-parser
// treats a day field covering all values (e.g. `1-31`) as a wildcard and `*\/n` as restricted,
// while we follow Vixie cron (a field is unrestricted only when it starts with `*` or is `?`).
import { CronExpressionParser } from 'cron-parser';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseCronExpression, slotsInRange, ScheduleCaches } from '../../../src/fsm/schedule/index.js';
import { cronSpec } from './spec-builders.js';

const caches = new ScheduleCaches();

const list = (min: number, max: number, maxLength: number) =>
  fc.uniqueArray(fc.integer({ min, max }), { minLength: 1, maxLength }).map((xs) => xs.sort((a, b) => a - b).join(','));
const step = (max: number) => fc.integer({ min: 1, max }).map((n) => `*/${n}`);
const range = (min: number, max: number) =>
  fc.tuple(fc.integer({ min, max }), fc.integer({ min, max })).map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`);

const expressions = fc
  .tuple(
    fc.oneof(fc.constant('0'), list(0, 59, 3), step(30)),
    fc.oneof(fc.constant('*'), list(0, 59, 3), step(30), range(0, 59)),
    fc.oneof(fc.constant('*'), list(0, 23, 3), step(12), range(0, 23)),
    fc.oneof(fc.constant('*'), list(1, 31, 4)),
    fc.oneof(fc.constant('*'), list(1, 12, 4)),
    fc.oneof(fc.constant('*'), list(0, 6, 3)),
  )
  .map((fields) => fields.join(' '))
  // Drop the impossible dates (e.g. Feb 30) that we reject up front and cron-parser searches for.
  .filter((expr) => {
    try {
      parseCronExpression(expr);
      return true;
    } catch {
      return false;
    }
  });

describe('UTC field matching agrees with cron-parser', () => {
  it('the next 5 slots from a random instant', () => {
    fc.assert(
      fc.property(expressions, fc.integer({ min: Date.UTC(2000, 0, 1) / 1000, max: Date.UTC(2060, 0, 1) / 1000 }), (expr, fromSec) => {
        const from = fromSec * 1000;
        const ours = slotsInRange(cronSpec(expr), from + 1, Number.MAX_SAFE_INTEGER, 0, 5, caches);
        const theirs = CronExpressionParser.parse(expr, { currentDate: new Date(from), tz: 'UTC' });
        const expected = Array.from({ length: 5 }, () => theirs.next().getTime());
        expect(ours).toEqual(expected);
      }),
      { numRuns: 150, seed: 42 },
    );
  });
});
