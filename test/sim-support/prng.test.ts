import { describe, expect, it } from 'vitest';
import { createPrng } from '../../src/raft/sim/prng.js';

const draw = (seed: number, n: number): number[] => {
  const r = createPrng(seed);
  return Array.from({ length: n }, () => r.next());
};

describe('prng', () => {
  it('replays the same stream from the same seed, and a different one from the next seed', () => {
    expect(draw(42, 50)).toEqual(draw(42, 50));
    expect(draw(42, 50)).not.toEqual(draw(43, 50));
    // Seeds above 2^32 use their high word too.
    expect(draw(2 ** 32 + 7, 20)).not.toEqual(draw(7, 20));
  });

  it('next() stays in [0,1) and int() in its range, roughly uniformly', () => {
    const r = createPrng(7);
    const buckets = new Array<number>(10).fill(0);
    let outOfRange = 0;
    for (let i = 0; i < 20_000; i++) {
      const x = r.next();
      if (!(x >= 0 && x < 1)) outOfRange++;
      const k = r.int(3, 13);
      if (!(Number.isInteger(k) && k >= 3 && k < 13)) outOfRange++;
      else buckets[k - 3]! += 1;
    }
    expect(outOfRange).toBe(0);
    // 2,000 expected per bucket; 5 sigma is ~210.
    for (const b of buckets) expect(Math.abs(b - 2000)).toBeLessThan(250);
  });

  it('chance(p) hits about p of the time; 0 and 1 are exact', () => {
    const r = createPrng(9);
    let hits = 0;
    for (let i = 0; i < 10_000; i++) if (r.chance(0.3)) hits++;
    expect(Math.abs(hits - 3000)).toBeLessThan(250);
    expect(Array.from({ length: 100 }, () => r.chance(0)).some(Boolean)).toBe(false);
    expect(Array.from({ length: 100 }, () => r.chance(1)).every(Boolean)).toBe(true);
  });

  it('pick and shuffle cover the array; invalid inputs throw', () => {
    const r = createPrng(1);
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) seen.add(r.pick(['a', 'b', 'c']));
    expect([...seen].sort()).toEqual(['a', 'b', 'c']);
    expect(r.shuffle([1, 2, 3, 4, 5]).sort()).toEqual([1, 2, 3, 4, 5]);
    expect(() => r.pick([])).toThrow(RangeError);
    expect(() => r.int(5, 5)).toThrow(RangeError);
    expect(() => createPrng(-1)).toThrow(RangeError);
    expect(() => createPrng(1.5)).toThrow(RangeError);
  });

  it('a fork does not depend on how much the parent has drawn, and labels give distinct streams', () => {
    const a = createPrng(5);
    const b = createPrng(5);
    for (let i = 0; i < 100; i++) b.next();
    const fa = a.fork('network');
    const fb = b.fork('network');
    const xs = Array.from({ length: 10 }, () => fa.next());
    expect(Array.from({ length: 10 }, () => fb.next())).toEqual(xs);
    const other = a.fork('disk');
    expect(Array.from({ length: 10 }, () => other.next())).not.toEqual(xs);
    // Nested forks are reproducible too.
    expect(a.fork('n1').fork('timeout').next()).toBe(createPrng(5).fork('n1').fork('timeout').next());
    expect(a.fork('n1').fork('timeout').next()).not.toBe(a.fork('n2').fork('timeout').next());
  });
});
