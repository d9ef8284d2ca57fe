// Human durations ("30s", "1h30m", "250ms") for job specs and options. The wire format is integer
// milliseconds; this module is the single place that turns text into those numbers, so every
// option that takes a duration reports bad input the same way.
import { InvalidSpecError } from './errors.js';

/** A duration as text ("1h30m") or as a number of milliseconds. */
export type Duration = string | number;

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};
// Units must appear largest first and at most once ("1h30m", not "30m1h" or "1m1m"): anything
// else is almost always a typo, and rejecting it keeps "what did I mean" questions out of specs.
const UNIT_ORDER = ['d', 'h', 'm', 's', 'ms'];
const TOKEN = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/y;

/**
 * Parses a duration into milliseconds. Accepts "0", a sequence of <number><unit> with units
 * d, h, m, s, ms (e.g. "1h30m", "1.5s", "250ms"), or a non-negative integer number of ms.
 * Throws InvalidSpecError with a message that says what was wrong.
 */
export function parseDuration(input: Duration, field = 'duration'): number {
  if (typeof input === 'number') {
    if (!Number.isSafeInteger(input) || input < 0) {
      throw new InvalidSpecError(`${field}: ${input} is not a non-negative whole number of milliseconds`, field);
    }
    return input;
  }
  if (typeof input !== 'string') {
    throw new InvalidSpecError(`${field}: expected a duration like "30s" or "1h30m", got ${typeof input}`, field);
  }
  const text = input.trim();
  if (text === '') throw new InvalidSpecError(`${field}: empty duration (use e.g. "30s", "5m", "1h30m")`, field);
  if (text === '0') return 0;
  if (text.startsWith('-')) throw new InvalidSpecError(`${field}: negative duration "${input}"`, field);

  let total = 0;
  let pos = 0;
  let lastUnitRank = -1;
  while (pos < text.length) {
    TOKEN.lastIndex = pos;
    const m = TOKEN.exec(text);
    if (!m) {
      const rest = text.slice(pos);
      const hint = /^\d+(\.\d+)?$/.test(rest)
        ? `missing unit after "${rest}"`
        : `unexpected "${rest}"`;
      throw new InvalidSpecError(
        `${field}: invalid duration "${input}": ${hint} (units: d, h, m, s, ms; e.g. "1h30m")`,
        field,
      );
    }
    const [, num, unit] = m as unknown as [string, string, string];
    const rank = UNIT_ORDER.indexOf(unit);
    if (rank <= lastUnitRank) {
      throw new InvalidSpecError(
        `${field}: invalid duration "${input}": units must go from largest to smallest, each once`,
        field,
      );
    }
    lastUnitRank = rank;
    total += Number(num) * UNIT_MS[unit]!;
    pos = TOKEN.lastIndex;
  }
  // Float arithmetic: "1.1s" is 1100.0000000000002; snap values within a rounding error.
  const rounded = Math.round(total);
  if (Math.abs(total - rounded) > 1e-6) {
    throw new InvalidSpecError(`${field}: "${input}" is not a whole number of milliseconds`, field);
  }
  if (!Number.isSafeInteger(rounded)) {
    throw new InvalidSpecError(`${field}: "${input}" is too large`, field);
  }
  return rounded;
}

/** Formats milliseconds as the shortest duration text parseDuration reads back ("1h30m"). */
export function formatDuration(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError(`not a duration: ${ms}`);
  if (ms === 0) return '0';
  let rest = ms;
  let out = '';
  for (const unit of UNIT_ORDER) {
    const size = UNIT_MS[unit]!;
    const n = Math.floor(rest / size);
    if (n > 0) {
      out += `${n}${unit}`;
      rest -= n * size;
    }
  }
  return out;
}
