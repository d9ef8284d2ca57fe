import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { formatDuration, parseDuration } from '../../src/client/duration.js';
import { InvalidSpecError } from '../../src/client/errors.js';

describe('parseDuration', () => {
  it.each([
    ['0', 0],
    ['250ms', 250],
    ['30s', 30_000],
    ['5m', 300_000],
    ['1h30m', 5_400_000],
    ['1d2h3m4s5ms', 93_784_005],
    ['1.5s', 1_500],
    ['1.1s', 1_100],
    [' 10s ', 10_000],
    [42, 42],
  ] as const)('parses %j as %d ms', (input, ms) => {
    expect(parseDuration(input)).toBe(ms);
  });

  it.each([
    ['', /empty duration/],
    ['10', /missing unit after "10"/],
    ['5x', /unexpected "5x"/],
    ['1h 30m', /unexpected " 30m"/],
    ['-5s', /negative/],
    ['30m1h', /largest to smallest/],
    ['1m1m', /largest to smallest/],
    ['0.5ms', /whole number of milliseconds/],
    ['abc', /unexpected "abc"/],
    [-1, /non-negative whole number/],
    [1.5, /non-negative whole number/],
  ] as const)('rejects %j with a clear message', (input, message) => {
    expect(() => parseDuration(input, 'timeout')).toThrow(InvalidSpecError);
    expect(() => parseDuration(input, 'timeout')).toThrow(message);
    expect(() => parseDuration(input, 'timeout')).toThrow(/^timeout: /);
  });

  it('round-trips formatDuration for any whole number of ms', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 ** 12 }), (ms) => {
        expect(parseDuration(formatDuration(ms))).toBe(ms);
      }),
    );
  });
});
