// Finding the next wall-clock time that matches a cron expression, with no time zone involved.
//
// A "wall time" here is a local date-time encoded as milliseconds as if it were UTC
// (Date.UTC(year, month, day, hour, minute, second)). Cron fields are evaluated on wall time; the
// zone only comes in later when a wall time is resolved to instants (cron-schedule.ts). The search
// jumps field by field (month, then day, hour, minute, second), so sparse schedules such as
// `0 0 29 2 *` cost a handful of steps per year, never a scan over seconds.
import type { CronExpression } from './cron-expression.js';

const DAY_MS = 86_400_000;

function isLeapYear(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

/** month is 0-based */
export function daysInMonth(y: number, month: number): number {
  if (month === 1) return isLeapYear(y) ? 29 : 28;
  return month === 3 || month === 5 || month === 8 || month === 10 ? 30 : 31;
}

/** The smallest allowed value >= from in table[from..max], or -1. */
function nextAllowed(table: readonly boolean[], from: number, max: number): number {
  for (let v = from; v <= max; v++) if (table[v]) return v;
  return -1;
}

function dayMatches(c: CronExpression, y: number, month: number, day: number): boolean {
  const dom = c.daysOfMonth[day] === true || (c.lastDayOfMonth && day === daysInMonth(y, month));
  // Day of week from days since the epoch (1970-01-01 was a Thursday).
  const dow = ((Math.floor(Date.UTC(y, month, day) / DAY_MS) % 7) + 11) % 7;
  const dowOk = c.daysOfWeek[dow] === true;
  if (c.daysOfMonthStar || c.daysOfWeekStar) return dom && dowOk;
  return dom || dowOk;
}

/**
 * The first wall time >= fromWall (rounded up to a whole second) whose fields match, or undefined
 * when there is none before the end of `maxYear`.
 */
export function nextWallMatch(c: CronExpression, fromWall: number, maxYear: number): number | undefined {
  const start = Math.ceil(fromWall / 1000) * 1000;
  const d = new Date(start);
  let y = d.getUTCFullYear();
  let mo = d.getUTCMonth();
  let day = d.getUTCDate();
  let h = d.getUTCHours();
  let mi = d.getUTCMinutes();
  let s = d.getUTCSeconds();

  // Each `continue` below moves to a strictly later candidate and resets the smaller fields.
  for (;;) {
    if (y > maxYear) return undefined;
    if (!c.months[mo + 1]) {
      const next = nextAllowed(c.months, mo + 2, 12);
      if (next === -1) {
        y++;
        mo = nextAllowed(c.months, 1, 12) - 1;
      } else {
        mo = next - 1;
      }
      day = 1;
      h = mi = s = 0;
      continue;
    }
    const dim = daysInMonth(y, mo);
    if (day > dim || !dayMatches(c, y, mo, day)) {
      // Fast path when only day-of-month restricts the day: jump to the next allowed value.
      let nextDay = day + 1;
      if (c.daysOfWeekStar && !c.lastDayOfMonth && day <= dim) {
        const v = nextAllowed(c.daysOfMonth, day + 1, 31);
        nextDay = v === -1 ? dim + 1 : v;
      }
      if (nextDay > dim) {
        if (++mo > 11) {
          mo = 0;
          y++;
        }
        day = 1;
      } else {
        day = nextDay;
      }
      h = mi = s = 0;
      continue;
    }
    if (!c.hours[h]) {
      const next = nextAllowed(c.hours, h + 1, 23);
      if (next === -1) {
        day++;
        h = 0;
      } else {
        h = next;
      }
      mi = s = 0;
      continue;
    }
    if (!c.minutes[mi]) {
      const next = nextAllowed(c.minutes, mi + 1, 59);
      if (next === -1) {
        h++;
        mi = 0;
        if (h > 23) {
          h = 0;
          day++;
        }
      } else {
        mi = next;
      }
      s = 0;
      continue;
    }
    if (!c.seconds[s]) {
      const next = nextAllowed(c.seconds, s + 1, 59);
      if (next === -1) {
        s = 0;
        mi++;
        if (mi > 59) {
          mi = 0;
          h++;
          if (h > 23) {
            h = 0;
            day++;
          }
        }
      } else {
        s = next;
      }
      continue;
    }
    return Date.UTC(y, mo, day, h, mi, s);
  }
}
