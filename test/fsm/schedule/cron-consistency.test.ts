// Properties over many zones and years (not just known transitions): chained slots increase
// strictly, each one is the first slot after the instant before it, each one's local wall time
// matches the cron fields (or it is the instant right after a spring-forward gap), and a wall
// time fires twice only under fold BOTH.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nextSlotAfter, ScheduleCaches } from '../../../src/fsm/schedule/index.js';
import { cronSpec, type Fold, type Gap } from './spec-builders.js';

const caches = new ScheduleCaches();

const zones = [
  'UTC', 'America/New_York', 'Europe/Berlin', 'Australia/Lord_Howe', 'Asia/Kolkata', 'America/Santiago',
  'Pacific/Chatham', 'Europe/Dublin', 'Africa/Casablanca', 'America/St_Johns', 'Asia/Kathmandu',
];

const formats = new Map<string, Intl.DateTimeFormat>();
function wallFields(zone: string, t: number) {
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric',
      second: 'numeric', weekday: 'short',
    });
    formats.set(zone, f);
  }
  const p = Object.fromEntries(f.formatToParts(t).map((x) => [x.type, x.value]));
  return {
    key: `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}`,
    minute: Number(p.minute), hour: Number(p.hour), day: Number(p.day), month: Number(p.month),
    weekday: ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'].indexOf(p.weekday!),
  };
}
/** Wall time minus UTC, from Intl, to detect the instant right after a spring-forward gap. */
function offsetAt(zone: string, t: number): number {
  const w = wallFields(zone, t);
  const [date, time] = w.key.split(' ') as [string, string];
  const [y, mo, d] = date.split('-').map(Number) as [number, number, number];
  const [h, mi, s] = time.split(':').map(Number) as [number, number, number];
  return Date.UTC(y, mo - 1, d, h, mi, s) - Math.floor(t / 1000) * 1000;
}

const cronFields = fc.record({
  minutes: fc.uniqueArray(fc.integer({ min: 0, max: 59 }), { minLength: 1, maxLength: 4 }),
  hours: fc.option(fc.uniqueArray(fc.integer({ min: 0, max: 23 }), { minLength: 1, maxLength: 4 }), { nil: undefined }),
  days: fc.option(fc.uniqueArray(fc.integer({ min: 1, max: 28 }), { minLength: 1, maxLength: 3 }), { nil: undefined }),
  weekdays: fc.option(fc.uniqueArray(fc.integer({ min: 0, max: 6 }), { minLength: 1, maxLength: 3 }), { nil: undefined }),
});

describe('cron slots across zones and years', () => {
  it('increase, are idempotent, match the fields (or end a gap), repeat a wall time only under BOTH', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...zones),
        cronFields,
        fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2045, 0, 1) }),
        fc.constantFrom<Gap>('shift', 'skip'),
        fc.constantFrom<Fold>('first', 'last', 'both'),
        (zone, f, from, gap, fold) => {
          const list = (xs: number[] | undefined) => (xs ? xs.join(',') : '*');
          const spec = cronSpec(`${list(f.minutes)} ${list(f.hours)} ${list(f.days)} * ${list(f.weekdays)}`, zone, gap, fold);
          const seen = new Set<string>();
          let t = from;
          for (let i = 0; i < 8; i++) {
            const slot = nextSlotAfter(spec, t, 0, caches);
            expect(slot).toBeDefined();
            if (slot === undefined) return;
            expect(slot).toBeGreaterThan(t);
            expect(slot % 60_000).toBe(0);
            expect(nextSlotAfter(spec, slot - 1, 0, caches)).toBe(slot);
            const w = wallFields(zone, slot);
            const dayOk = f.days && f.weekdays
              ? f.days.includes(w.day) || f.weekdays.includes(w.weekday)
              : (!f.days || f.days.includes(w.day)) && (!f.weekdays || f.weekdays.includes(w.weekday));
            const matches = f.minutes.includes(w.minute) && (!f.hours || f.hours.includes(w.hour)) && dayOk;
            if (!matches) {
              // Only a shifted slot may not match: it sits exactly where the offset grows.
              expect(gap).toBe('shift');
              expect(offsetAt(zone, slot)).toBeGreaterThan(offsetAt(zone, slot - 1000));
            }
            if (fold !== 'both') expect(seen.has(w.key)).toBe(false);
            seen.add(w.key);
            t = slot;
          }
        },
      ),
      { numRuns: 80, seed: 99 },
    );
  });
});
