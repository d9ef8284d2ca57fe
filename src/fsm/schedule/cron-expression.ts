// Parsing of classic cron expressions into per-field lookup tables.
//
// We parse ourselves instead of using cron-parser's iterator because the DST policy must be ours
// and exact (cron-parser resolves wall times through its own date library), and because matching on
// plain tables is small and fast. The accepted syntax is the classic Vixie one plus a few widely
// used extensions:
//   - 5 fields (minute hour day-of-month month day-of-week) or 6 fields (seconds first);
//   - `*`, `?` (day fields only, same as `*`), values, ranges `a-b`, steps `*/n`, `a-b/n`, `a/n`,
//     lists `a,b-c,*/n`; month names JAN–DEC and weekday names SUN–SAT (case-insensitive);
//     day-of-week 7 means Sunday;
//   - `L` in day-of-month: the last day of the month (also inside lists, e.g. `1,15,L`);
//   - macros @yearly @annually @monthly @weekly @daily @midnight @hourly.
// Not supported (rejected with INVALID_CRON): `W`, `#`, `nL` in day-of-week, `L-n`, wrap-around
// ranges such as `22-2`, @reboot.
import { HeraldError } from '../../herald-error.js';

export const CRON_FIELD_PATH = 'spec.schedule.cron.expression';
/** Generous for any real schedule; bounds parse cost and what a job record stores. */
export const MAX_EXPRESSION_LENGTH = 1024;

/** A parsed cron expression: for each field, a table of the allowed values. */
export interface CronExpression {
  readonly source: string;
  /** allowed[v] for v in 0..59 */
  readonly seconds: readonly boolean[];
  readonly minutes: readonly boolean[];
  /** 0..23 */
  readonly hours: readonly boolean[];
  /** 1..31 (index 0 unused) */
  readonly daysOfMonth: readonly boolean[];
  /** `L` was given: the last day of each month matches. */
  readonly lastDayOfMonth: boolean;
  /** 1..12 (index 0 unused) */
  readonly months: readonly boolean[];
  /** 0..6, Sunday = 0 */
  readonly daysOfWeek: readonly boolean[];
  /**
   * Vixie cron's rule: when both day fields are restricted a day matches if EITHER matches; when
   * one of them starts with `*` (or is `?`) a day must match both. We keep the flags, not just
   * the tables, because `*\/2` restricts values yet still counts as "star" in that rule.
   */
  readonly daysOfMonthStar: boolean;
  readonly daysOfWeekStar: boolean;
}

interface FieldDef {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  readonly names?: Readonly<Record<string, number>>;
}

const MONTH_NAMES: Record<string, number> = {
  JAN: 1, FEB: 2, MAR: 3, APR: 4, MAY: 5, JUN: 6, JUL: 7, AUG: 8, SEP: 9, OCT: 10, NOV: 11, DEC: 12,
};
const WEEKDAY_NAMES: Record<string, number> = { SUN: 0, MON: 1, TUE: 2, WED: 3, THU: 4, FRI: 5, SAT: 6 };

const SECOND: FieldDef = { name: 'second', min: 0, max: 59 };
const MINUTE: FieldDef = { name: 'minute', min: 0, max: 59 };
const HOUR: FieldDef = { name: 'hour', min: 0, max: 23 };
const DAY_OF_MONTH: FieldDef = { name: 'day-of-month', min: 1, max: 31 };
const MONTH: FieldDef = { name: 'month', min: 1, max: 12, names: MONTH_NAMES };
// 7 is accepted as Sunday and folded onto 0 after parsing.
const DAY_OF_WEEK: FieldDef = { name: 'day-of-week', min: 0, max: 7, names: WEEKDAY_NAMES };

const MACROS: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

/** Days in each month of a leap year: the most a month can ever have. */
const MAX_DAYS_IN_MONTH = [0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function invalid(message: string): never {
  throw new HeraldError('INVALID_CRON', message, { field: CRON_FIELD_PATH });
}

/** Parses and validates a cron expression; throws INVALID_CRON saying what is wrong and where. */
export function parseCronExpression(expression: string): CronExpression {
  const trimmed = expression.trim();
  if (trimmed === '') invalid('cron expression is empty');
  if (trimmed.length > MAX_EXPRESSION_LENGTH) {
    invalid(`cron expression is ${trimmed.length} characters long; at most ${MAX_EXPRESSION_LENGTH} are allowed`);
  }
  let text = trimmed;
  if (text.startsWith('@')) {
    const macro = MACROS[text.toLowerCase()];
    if (macro === undefined) {
      invalid(`unknown cron macro "${text}" (supported: ${Object.keys(MACROS).join(', ')})`);
    }
    text = macro;
  }
  const parts = text.split(/\s+/);
  if (parts.length !== 5 && parts.length !== 6) {
    invalid(
      `cron expression "${trimmed}" has ${parts.length} field(s); expected 5 ` +
        '(minute hour day-of-month month day-of-week) or 6 (second minute hour day-of-month month day-of-week)',
    );
  }
  const fields = parts.length === 6 ? parts : ['0', ...parts];
  const offset = parts.length === 6 ? 0 : 1; // for 1-based field numbers in messages
  const at = (i: number) => ({ position: i + 1 - offset, text: fields[i]! });

  const seconds = parseField(SECOND, at(0), false);
  const minutes = parseField(MINUTE, at(1), false);
  const hours = parseField(HOUR, at(2), false);
  const dom = parseField(DAY_OF_MONTH, at(3), true);
  const months = parseField(MONTH, at(4), false);
  const dow = parseField(DAY_OF_WEEK, at(5), false);
  if (dow.allowed[7]) dow.allowed[0] = true;
  dow.allowed.length = 7;

  const cron: CronExpression = {
    source: trimmed,
    seconds: seconds.allowed,
    minutes: minutes.allowed,
    hours: hours.allowed,
    daysOfMonth: dom.allowed,
    lastDayOfMonth: dom.last,
    months: months.allowed,
    daysOfWeek: dow.allowed,
    daysOfMonthStar: dom.star,
    daysOfWeekStar: dow.star,
  };
  checkCanFire(cron);
  return cron;
}

interface ParsedField {
  allowed: boolean[];
  star: boolean;
  last: boolean;
}

function parseField(def: FieldDef, where: { position: number; text: string }, allowLast: boolean): ParsedField {
  const { text } = where;
  const ctx = `field ${where.position} (${def.name}) "${text}"`;
  const allowed = new Array<boolean>(def.max + 1).fill(false);
  let last = false;
  const isDayField = def === DAY_OF_MONTH || def === DAY_OF_WEEK;
  if (text === '?') {
    if (!isDayField) invalid(`${ctx}: "?" is only allowed in day-of-month and day-of-week`);
    for (let v = def.min; v <= def.max; v++) allowed[v] = true;
    return { allowed, star: true, last };
  }
  for (const item of text.split(',')) {
    if (item === '') invalid(`${ctx}: empty list item`);
    const upper = item.toUpperCase();
    if (upper === 'L') {
      if (!allowLast) invalid(`${ctx}: "L" is only supported in day-of-month`);
      last = true;
      continue;
    }
    if (/[LW#]/.test(upper) && !def.names) {
      invalid(`${ctx}: "${item}" uses an unsupported extension (only a plain "L" in day-of-month is supported)`);
    }
    if (/#/.test(upper) || (def === DAY_OF_WEEK && /^\d+L$/.test(upper))) {
      invalid(`${ctx}: "${item}" uses an unsupported extension (nth/last weekday is not supported)`);
    }
    const slash = item.split('/');
    if (slash.length > 2) invalid(`${ctx}: "${item}" has more than one "/"`);
    const [rangeText, stepText] = slash as [string, string | undefined];
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText)) invalid(`${ctx}: step "${stepText}" is not a positive integer`);
      step = Number(stepText);
      if (step < 1) invalid(`${ctx}: step must be at least 1`);
      if (step > def.max) invalid(`${ctx}: step ${step} is larger than the field's maximum ${def.max}`);
    }
    let lo: number;
    let hi: number;
    if (rangeText === '*') {
      lo = def.min;
      hi = def === DAY_OF_WEEK ? 6 : def.max;
    } else {
      const dash = rangeText.split('-');
      if (dash.length > 2) invalid(`${ctx}: "${rangeText}" is not a value or a range a-b`);
      lo = parseValue(def, ctx, dash[0]!);
      if (dash.length === 2) {
        hi = parseValue(def, ctx, dash[1]!);
        if (hi < lo) invalid(`${ctx}: range ${rangeText} runs backwards (wrap-around ranges are not supported)`);
      } else {
        // "a/n" means a, a+n, ... up to the field's maximum.
        hi = stepText !== undefined ? (def === DAY_OF_WEEK ? 6 : def.max) : lo;
      }
    }
    for (let v = lo; v <= hi; v += step) allowed[v] = true;
  }
  return { allowed, star: text.startsWith('*'), last };
}

function parseValue(def: FieldDef, ctx: string, raw: string): number {
  if (raw === '') invalid(`${ctx}: missing value`);
  let v: number;
  if (/^\d+$/.test(raw)) {
    v = Number(raw);
  } else {
    const named = def.names?.[raw.toUpperCase()];
    if (named === undefined) {
      invalid(`${ctx}: "${raw}" is not a number${def.names ? ' or a ' + def.name + ' name' : ''}`);
    }
    v = named;
  }
  if (v < def.min || v > def.max) invalid(`${ctx}: value ${v} is out of range ${def.min}-${def.max}`);
  return v;
}

/**
 * Rejects expressions that can never fire (e.g. `0 0 30 2 *`, `0 0 31 4 *`), which would
 * otherwise make every search run to its horizon. Any day-of-month that exists in some allowed
 * month eventually falls on every weekday, so only the (month, day-of-month) pairing matters.
 */
function checkCanFire(c: CronExpression): void {
  // Both day fields restricted: OR semantics, and every month has every weekday.
  if (!c.daysOfMonthStar && !c.daysOfWeekStar) return;
  if (!c.daysOfWeek.some(Boolean)) invalid(`cron expression "${c.source}" has no day-of-week`);
  for (let m = 1; m <= 12; m++) {
    if (!c.months[m]) continue;
    if (c.lastDayOfMonth) return;
    for (let d = 1; d <= MAX_DAYS_IN_MONTH[m]!; d++) if (c.daysOfMonth[d]) return;
  }
  invalid(`cron expression "${c.source}" never fires: no allowed month has the given day-of-month`);
}
