// FNV-1a 64-bit over bytes, computed with 16-bit limbs so that it is exact in plain JS numbers
// (no BigInt: this runs for every fired slot). Used where DESIGN I5 needs "random" choices that
// every replica computes identically (jitter, retry backoff).

const encoder = new TextEncoder();

/** A 64-bit FNV-1a state as four 16-bit limbs, least significant first. */
class Fnv1a64 {
  private h0 = 0x2325;
  private h1 = 0x8422;
  private h2 = 0x9ce4;
  private h3 = 0xcbf2; // offset basis 0xcbf29ce484222325

  byte(b: number): void {
    this.h0 ^= b & 0xff;
    // Multiply by the FNV prime 0x100000001b3 = 2^40 + 0x1b3, modulo 2^64.
    const p = 0x1b3;
    let t0 = this.h0 * p;
    let t1 = this.h1 * p;
    let t2 = this.h2 * p;
    let t3 = this.h3 * p;
    // + (h << 40): limb 0 shifts into limb 2 (bits 40..55) and limb 1 into limb 3.
    t2 += this.h0 << 8;
    t3 += this.h1 << 8;
    t1 += t0 >>> 16;
    this.h0 = t0 & 0xffff;
    t2 += Math.floor(t1 / 65536);
    this.h1 = t1 & 0xffff;
    t3 += Math.floor(t2 / 65536);
    this.h2 = t2 & 0xffff;
    this.h3 = t3 & 0xffff;
  }

  bytes(data: Uint8Array): void {
    for (const b of data) this.byte(b);
  }

  /** A non-negative integer as 8 big-endian bytes (exact for safe integers). */
  int64(n: number): void {
    const hi = Math.floor(n / 2 ** 32);
    const lo = n - hi * 2 ** 32;
    for (let s = 24; s >= 0; s -= 8) this.byte((hi >>> s) & 0xff);
    for (let s = 24; s >= 0; s -= 8) this.byte((lo >>> s) & 0xff);
  }

  /** The top 53 bits (FNV's best-mixed ones) as an integer in [0, 2^53). */
  top53(): number {
    return (this.h3 * 2 ** 37) + (this.h2 * 2 ** 21) + (this.h1 * 2 ** 5) + (this.h0 >>> 11);
  }

  hex(): string {
    return [this.h3, this.h2, this.h1, this.h0].map((x) => x.toString(16).padStart(4, '0')).join('');
  }
}

/** FNV-1a 64 of (UTF-8 of key, a 0 separator, n as int64 big-endian), as hex (for tests). */
export function fnv1a64Hex(key: string, n: number): string {
  return hashOf(key, n).hex();
}

/** A uniform-looking number in [0, 1) determined by (key, n): the top 53 bits over 2^53. */
export function unitHash(key: string, n: number): number {
  return hashOf(key, n).top53() / 2 ** 53;
}

/** FNV-1a 64 of raw bytes, as hex; for checking against the published test vectors. */
export function fnv1a64HexOfBytes(data: Uint8Array): string {
  const h = new Fnv1a64();
  h.bytes(data);
  return h.hex();
}

function hashOf(key: string, n: number): Fnv1a64 {
  const h = new Fnv1a64();
  h.bytes(encoder.encode(key));
  h.byte(0);
  h.int64(n);
  return h;
}
