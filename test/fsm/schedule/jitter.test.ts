// Deterministic jitter: same (job, slot) → same offset on every replica; within [0, jitter) and
// never reaching the next slot; spread over the window.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fnv1a64HexOfBytes, fnv1a64Hex } from '../../../src/fsm/schedule/fnv1a64.js';
import { jitterOffsetMs } from '../../../src/fsm/schedule/index.js';

describe('FNV-1a 64 (the hash behind jitter and backoff)', () => {
  const utf8 = (s: string) => new TextEncoder().encode(s);
  it.each([
    // Published FNV-1a 64-bit test vectors.
    { input: '', hex: 'cbf29ce484222325' },
    { input: 'a', hex: 'af63dc4c8601ec8c' },
    { input: 'foobar', hex: '85944171f73967e8' },
  ])('fnv1a64("$input") = $hex', ({ input, hex }) => {
    expect(fnv1a64HexOfBytes(utf8(input))).toBe(hex);
  });

  it('(key, n) hashing is fixed: a change here changes every stored jitter', () => {
    // Bytes: "job-1", 0x00, then 1_780_000_000_000 = 0x0000019e70448800 as int64 big-endian.
    expect(fnv1a64Hex('job-1', 1_780_000_000_000)).toBe(
      fnv1a64HexOfBytes(new Uint8Array([...utf8('job-1'), 0, 0, 0, 0x01, 0x9e, 0x70, 0x44, 0x88, 0x00])),
    );
  });
});

describe('jitterOffsetMs', () => {
  it.each([
    { name: 'no jitter configured', jitter: 0, next: undefined, expected: 0 },
    { name: 'a 1 ms window has only offset 0', jitter: 1, next: undefined, expected: 0 },
    { name: 'next slot 1 ms later leaves no room', jitter: 60_000, next: 1_780_000_000_001, expected: 0 },
    { name: 'next slot not after this one (defensive)', jitter: 60_000, next: 1_780_000_000_000, expected: 0 },
  ])('$name → $expected', ({ jitter, next, expected }) => {
    expect(jitterOffsetMs('job-1', 1_780_000_000_000, jitter, next)).toBe(expected);
  });

  it.each([
    // Golden values: every replica and every future version must compute exactly these, or a
    // rolling upgrade would fire the same slot at different instants on different leaders.
    { jobId: 'billing.nightly', slot: 1_780_000_000_000, jitter: 600_000, next: undefined, expected: 407_688 },
    { jobId: 'job-1', slot: 1_780_000_060_000, jitter: 60_000, next: 1_780_000_090_000, expected: 12_870 },
  ])('is fixed for ($jobId, $slot, $jitter): $expected', ({ jobId, slot, jitter, next, expected }) => {
    expect(jitterOffsetMs(jobId, slot, jitter, next)).toBe(expected);
  });

  it('differs between jobs and between slots (it spreads a herd)', () => {
    const byJob = new Set(Array.from({ length: 200 }, (_, i) => jitterOffsetMs(`job-${i}`, 1_780_000_000_000, 60_000, undefined)));
    const bySlot = new Set(Array.from({ length: 200 }, (_, i) => jitterOffsetMs('job', 1_780_000_000_000 + i * 60_000, 60_000, undefined)));
    expect(byJob.size).toBeGreaterThan(190);
    expect(bySlot.size).toBeGreaterThan(190);
  });

  it('is roughly uniform over the window (each tenth gets 5–15% of 2000 jobs)', () => {
    const buckets = new Array<number>(10).fill(0);
    for (let i = 0; i < 2000; i++) buckets[Math.floor(jitterOffsetMs(`job-${i}`, 1_780_000_000_000, 1000, undefined) / 100)]!++;
    for (const b of buckets) {
      expect(b).toBeGreaterThan(100);
      expect(b).toBeLessThan(300);
    }
  });

  it('property: an integer in [0, jitter), strictly before the next slot, deterministic', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 128 }),
        fc.integer({ min: 0, max: 2 ** 47 }),
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.option(fc.integer({ min: 1, max: 2 ** 40 }), { nil: undefined }),
        (jobId, slot, jitter, gapToNext) => {
          const next = gapToNext === undefined ? undefined : slot + gapToNext;
          const off = jitterOffsetMs(jobId, slot, jitter, next);
          expect(Number.isInteger(off)).toBe(true);
          expect(off).toBeGreaterThanOrEqual(0);
          if (jitter > 0) expect(off).toBeLessThan(jitter);
          else expect(off).toBe(0);
          if (next !== undefined) expect(slot + off).toBeLessThan(next);
          expect(jitterOffsetMs(jobId, slot, jitter, next)).toBe(off);
        },
      ),
      { numRuns: 500, seed: 7 },
    );
  });
});
