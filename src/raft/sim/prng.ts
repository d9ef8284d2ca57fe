// A small, fast, seeded PRNG for the deterministic simulator: sfc32 (Chris Doty-Humphrey's
// Small Fast Counting generator, 128-bit state, passes PractRand) seeded through splitmix32 so
// that nearby seeds (1, 2, 3...) still give unrelated streams.
//
// Why not Math.random: a simulation run must be replayable bit-for-bit from its seed.
//
// fork(label) derives a sub-stream from this stream's *seed material* and the label, never from
// its current position. So `rng.fork('network')` is the same stream no matter how many numbers
// the parent (or another fork) has drawn: adding a draw in the disk model cannot perturb the
// network's faults, which keeps a failing seed reproducible across unrelated code changes.

export interface Prng {
  /** Uniform float in [0, 1), 32 bits of randomness. */
  next(): number;
  /** Uniform integer in [lo, hiExclusive). Throws when the range is empty. */
  int(lo: number, hiExclusive: number): number;
  /** true with probability p (p <= 0: never, p >= 1: always; neither consumes a draw). */
  chance(p: number): boolean;
  /** A uniformly chosen element. Throws on an empty array. */
  pick<T>(arr: readonly T[]): T;
  /** In-place Fisher-Yates shuffle; returns the same array. */
  shuffle<T>(arr: T[]): T[];
  /** An independent sub-stream, a pure function of (this stream's seed, label). */
  fork(label: string): Prng;
  /** The seed this stream was built from (a fork reports its derived 32-bit seed words). */
  readonly seed: number;
}

/** Largest seed accepted: a safe integer, so a seed survives JSON and CLI round trips. */
const TWO_32 = 0x1_0000_0000;

/** splitmix32: a well-mixing 32-bit step used only to expand seeds into sfc32 state. */
function splitmix32(state: { s: number }): number {
  state.s = (state.s + 0x9e3779b9) | 0;
  let z = state.s;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/** FNV-1a over UTF-16 code units: a stable label hash for fork(). */
function hashLabel(label: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < label.length; i++) {
    h ^= label.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

class Sfc32 implements Prng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(
    readonly seed: number,
    // Two 32-bit words of seed material: fork() mixes the label into these.
    private readonly lo: number,
    private readonly hi: number,
  ) {
    const sm = { s: (lo ^ Math.imul(hi, 0x27d4eb2d)) | 0 };
    this.a = splitmix32(sm);
    this.b = splitmix32(sm);
    this.c = splitmix32(sm);
    this.d = 1; // sfc32's counter starts at 1 by convention.
    // Discard the first outputs: sfc32's state needs a few rounds to diffuse.
    for (let i = 0; i < 12; i++) this.nextU32();
  }

  private nextU32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  next(): number {
    return this.nextU32() / TWO_32;
  }

  int(lo: number, hiExclusive: number): number {
    if (!Number.isInteger(lo) || !Number.isInteger(hiExclusive) || hiExclusive <= lo) {
      throw new RangeError(`prng.int: empty or non-integer range [${lo}, ${hiExclusive})`);
    }
    const span = hiExclusive - lo;
    if (span <= TWO_32) {
      // Rejection sampling removes the modulo bias (matters for spans that are not powers of 2).
      const limit = TWO_32 - (TWO_32 % span);
      let x = this.nextU32();
      while (x >= limit) x = this.nextU32();
      return lo + (x % span);
    }
    // Spans beyond 2^32 are rare (timestamps); 53 bits from two draws is plenty.
    const x = (this.nextU32() >>> 5) * 0x4000000 + (this.nextU32() >>> 6);
    return lo + Math.floor((x / 2 ** 53) * span);
  }

  chance(p: number): boolean {
    if (p <= 0) return false;
    if (p >= 1) return true;
    return this.next() < p;
  }

  pick<T>(arr: readonly T[]): T {
    if (arr.length === 0) throw new RangeError('prng.pick: empty array');
    return arr[this.int(0, arr.length)] as T;
  }

  shuffle<T>(arr: T[]): T[] {
    for (let i = arr.length - 1; i > 0; i--) {
      const j = this.int(0, i + 1);
      const tmp = arr[i] as T;
      arr[i] = arr[j] as T;
      arr[j] = tmp;
    }
    return arr;
  }

  fork(label: string): Prng {
    const h = hashLabel(label);
    const sm = { s: (this.lo ^ h) | 0 };
    const lo = splitmix32(sm);
    const hi = (splitmix32(sm) ^ this.hi) >>> 0;
    return new Sfc32(lo, lo, hi);
  }
}

/**
 * A PRNG from an integer seed in [0, 2^53). Negative or fractional seeds are rejected rather than
 * silently truncated: a seed printed by a failing run must map to exactly one stream.
 */
export function createPrng(seed: number): Prng {
  if (!Number.isSafeInteger(seed) || seed < 0) {
    throw new RangeError(`createPrng: seed must be a non-negative safe integer, got ${seed}`);
  }
  const lo = seed % TWO_32 >>> 0;
  const hi = Math.floor(seed / TWO_32) >>> 0;
  return new Sfc32(seed, lo, hi);
}
