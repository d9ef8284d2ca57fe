import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TimingWheel } from '../../src/server/leader/fire/timing-wheel.js';

const T0 = 1_700_000_000_000;

describe('TimingWheel', () => {
  it('returns entries once they are due, in fire-time order, and only once', () => {
    const wheel = new TimingWheel({ resolutionMs: 10, horizonMs: 60_000 }, T0);
    wheel.schedule({ jobId: 'b', slotMs: T0 + 1000, fireAtMs: T0 + 1000 });
    wheel.schedule({ jobId: 'a', slotMs: T0 + 500, fireAtMs: T0 + 505 });
    wheel.schedule({ jobId: 'c', slotMs: T0 + 1000, fireAtMs: T0 + 1003 });
    expect(wheel.advance(T0 + 504)).toEqual([]);
    expect(wheel.advance(T0 + 505).map((e) => e.jobId)).toEqual(['a']);
    expect(wheel.advance(T0 + 1001).map((e) => e.jobId)).toEqual(['b']);
    expect(wheel.advance(T0 + 5000).map((e) => e.jobId)).toEqual(['c']);
    expect(wheel.advance(T0 + 6000)).toEqual([]);
    expect(wheel.size).toBe(0);
  });

  it('refuses entries past the horizon so memory stays bounded by the window', () => {
    const wheel = new TimingWheel({ resolutionMs: 10, horizonMs: 1000 }, T0);
    expect(wheel.schedule({ jobId: 'far', slotMs: T0 + 1000, fireAtMs: T0 + 1000 })).toBe(false);
    expect(wheel.schedule({ jobId: 'near', slotMs: T0 + 999, fireAtMs: T0 + 999 })).toBe(true);
    expect(wheel.size).toBe(1);
    wheel.advance(T0 + 500);
    expect(wheel.horizonEndMs).toBe(T0 + 1500);
    expect(wheel.schedule({ jobId: 'far', slotMs: T0 + 1000, fireAtMs: T0 + 1000 })).toBe(true);
  });

  it('holds an entry whose slot is inside the horizon but whose fire time (slot plus jitter) is past it, until it is due', () => {
    const wheel = new TimingWheel({ resolutionMs: 10, horizonMs: 1000 }, T0);
    expect(wheel.schedule({ jobId: 'jittered', slotMs: T0 + 900, fireAtMs: T0 + 5000 })).toBe(true);
    expect(wheel.has('jittered')).toBe(true);
    expect(wheel.advance(T0 + 4990)).toEqual([]);
    expect(wheel.advance(T0 + 5000).map((e) => e.jobId)).toEqual(['jittered']);
    wheel.schedule({ jobId: 'gone', slotMs: T0 + 5500, fireAtMs: T0 + 7000 });
    wheel.cancel('gone');
    expect(wheel.advance(T0 + 8000)).toEqual([]);
    expect(wheel.size).toBe(0);
  });

  it('fires overdue entries on the next advance instead of dropping them', () => {
    const wheel = new TimingWheel({ resolutionMs: 10, horizonMs: 1000 }, T0);
    wheel.advance(T0 + 300);
    wheel.schedule({ jobId: 'late', slotMs: T0 + 100, fireAtMs: T0 + 100 });
    expect(wheel.advance(T0 + 300).map((e) => e.jobId)).toEqual(['late']);
  });

  it('replaces a job entry on reschedule and forgets it on cancel', () => {
    const wheel = new TimingWheel({ resolutionMs: 10, horizonMs: 10_000 }, T0);
    wheel.schedule({ jobId: 'j', slotMs: T0 + 100, fireAtMs: T0 + 100 });
    wheel.schedule({ jobId: 'j', slotMs: T0 + 2000, fireAtMs: T0 + 2000 });
    expect(wheel.advance(T0 + 1000)).toEqual([]);
    expect(wheel.advance(T0 + 2000).map((e) => e.slotMs)).toEqual([T0 + 2000]);
    wheel.schedule({ jobId: 'k', slotMs: T0 + 3000, fireAtMs: T0 + 3000 });
    wheel.cancel('k');
    expect(wheel.advance(T0 + 4000)).toEqual([]);
  });

  it('matches a reference model for random schedules and advances (property)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            // A jitter puts the fire time after the slot, past the horizon at times.
            fc.record({ op: fc.constant('schedule' as const), job: fc.integer({ min: 0, max: 20 }), at: fc.integer({ min: 0, max: 5000 }), jitter: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3000 })) }),
            fc.record({ op: fc.constant('advance' as const), by: fc.integer({ min: 0, max: 700 }) }),
            fc.record({ op: fc.constant('cancel' as const), job: fc.integer({ min: 0, max: 20 }) }),
          ),
          { maxLength: 80 },
        ),
        (ops) => {
          const horizon = 2000;
          const wheel = new TimingWheel({ resolutionMs: 7, horizonMs: horizon }, T0);
          const model = new Map<string, number>();
          let now = T0;
          for (const o of ops) {
            if (o.op === 'schedule') {
              const id = `j${o.job}`;
              const slot = now - 1000 + o.at;
              const at = slot + o.jitter;
              model.delete(id);
              if (wheel.schedule({ jobId: id, slotMs: slot, fireAtMs: at })) model.set(id, at);
              else expect(slot).toBeGreaterThanOrEqual(wheel.horizonEndMs);
            } else if (o.op === 'cancel') {
              wheel.cancel(`j${o.job}`);
              model.delete(`j${o.job}`);
            } else {
              now += o.by;
              const got = wheel.advance(now).map((e) => e.jobId).sort();
              const want = [...model].filter(([, at]) => at <= now).map(([id]) => id).sort();
              for (const id of want) model.delete(id);
              expect(got).toEqual(want);
            }
            expect(wheel.size).toBe(model.size);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
