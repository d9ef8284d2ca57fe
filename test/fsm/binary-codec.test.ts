import { describe, expect, it } from 'vitest';
import { ByteReader, ByteWriter, MAX_SLAB_SLICE, SLAB_BYTES, WriteBuffers } from '../../src/fsm/commands/binary-codec.js';

const read = (b: Uint8Array) => {
  const r = new ByteReader(b);
  return [r.str(), r.uint()];
};

/** One state machine's writers: they share its scratch buffer and slabs (WriteBuffers). */
const buffers = new WriteBuffers();
const writer = (initial?: number): ByteWriter => new ByteWriter(initial, buffers);

describe('ByteWriter (shared scratch buffer)', () => {
  it('hands out independent results: a later writer never changes an earlier result', () => {
    const a = writer().str('first').uint(1).finish();
    const b = writer().str('second-longer').uint(2).finish();
    expect(read(a)).toEqual(['first', 1]);
    expect(read(b)).toEqual(['second-longer', 2]);
  });

  it('gives writers alive at the same time their own buffers', () => {
    const outer = writer().str('outer');
    const inner = writer().str('inner').uint(7).finish();
    const done = outer.uint(9).finish();
    expect(read(done)).toEqual(['outer', 9]);
    expect(read(inner)).toEqual(['inner', 7]);
    // And after both: still correct.
    expect(read(writer().str('next').uint(3).finish())).toEqual(['next', 3]);
  });

  it('grows past the scratch size and keeps working after a writer was abandoned mid-encode', () => {
    const big = 'x'.repeat(100);
    const w = writer(16);
    for (let i = 0; i < 200; i++) w.str(big);
    const out = w.finish();
    const r = new ByteReader(out);
    for (let i = 0; i < 200; i++) expect(r.str()).toBe(big);
    const abandoned = writer().str('half');
    expect(() => abandoned.uint(-1)).toThrow(RangeError);
    expect(read(writer().str('after').uint(5).finish())).toEqual(['after', 5]);
    expect(read(writer().str('again').uint(6).finish())).toEqual(['again', 6]);
  });

  it("refuses writes after finish (its buffer may be another writer's by then)", () => {
    const w = writer().str('x');
    w.finish();
    expect(() => w.str('more')).toThrow(/after finish/);
  });
});

describe('ByteWriter results (shared slabs)', () => {
  it('carves small results out of shared slabs, exact in length and untouched by every later result', () => {
    const outs = Array.from({ length: 600 }, (_, i) => writer().str(`record-${i}`.repeat(1 + (i % 5))).uint(i).finish());
    outs.forEach((o, i) => expect(read(o)).toEqual([`record-${i}`.repeat(1 + (i % 5)), i]));
    // ~40 bytes each: several per slab, and more than one slab for 600 of them.
    const slabs = new Set(outs.map((o) => o.buffer));
    expect(slabs.size).toBeGreaterThan(1);
    expect(slabs.size).toBeLessThan(outs.length / 10);
    for (const o of outs) expect(o.buffer.byteLength).toBe(SLAB_BYTES);
  });

  it("never hands two machines' writers the same slab, and gives writers without buffers exact ones", () => {
    const other = new WriteBuffers();
    const mine = writer().str('mine').uint(1).finish();
    const theirs = new ByteWriter(256, other).str('theirs').uint(2).finish();
    expect(mine.buffer).not.toBe(theirs.buffer);
    expect(theirs.buffer.byteLength).toBe(SLAB_BYTES);
    const own = new ByteWriter().str('own').uint(3).finish();
    expect(own.byteOffset).toBe(0);
    expect(own.buffer.byteLength).toBe(own.byteLength);
    expect([read(mine), read(theirs), read(own)]).toEqual([['mine', 1], ['theirs', 2], ['own', 3]]);
  });

  it('gives a result larger than a slab slice an exact buffer of its own', () => {
    const big = writer().bytes(new Uint8Array(MAX_SLAB_SLICE + 1).fill(3)).finish();
    expect(big.byteOffset).toBe(0);
    expect(big.buffer.byteLength).toBe(big.byteLength);
    const r = new ByteReader(big);
    expect(r.bytes()).toEqual(new Uint8Array(MAX_SLAB_SLICE + 1).fill(3));
  });
});

describe('ByteWriter.reserveUint / patchUint (a length written after what it measures)', () => {
  it('fills in a five-byte varint that ByteReader.uint reads back, at every 7-bit boundary', () => {
    for (const v of [0, 1, 127, 128, 16_383, 16_384, 2_097_151, 2_097_152, 2 ** 28, 2 ** 35 - 1]) {
      const w = new ByteWriter().u8(9);
      const at = w.reserveUint();
      w.str('after');
      w.patchUint(at, v);
      const r = new ByteReader(w.finish());
      expect([r.u8(), r.uint(), r.str()]).toEqual([9, v, 'after']);
      r.end();
    }
  });

  it('refuses what five bytes cannot hold', () => {
    const w = new ByteWriter();
    const at = w.reserveUint();
    expect(() => w.patchUint(at, 2 ** 35)).toThrow(RangeError);
    expect(() => w.patchUint(at, -1)).toThrow(RangeError);
  });
});
