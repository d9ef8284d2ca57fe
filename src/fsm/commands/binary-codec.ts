// A small hand-written binary codec for FSM commands, results and internal records.
// Why not protobuf: the FSM's private messages change with the FSM, and a positional codec with a
// leading version byte is compact (varints, no field tags), exact (every value round-trips) and
// needs no generated code outside src/fsm. Readers throw FsmDecodeError on truncated or
// malformed input, never return garbage, so apply can reject a bad entry instead of crashing.

import { uninitializedBytes } from '../../uninitialized-bytes.js';

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder('utf-8', { fatal: true });

export class FsmDecodeError extends Error {
  override readonly name = 'FsmDecodeError';
}

const MAX_SCRATCH = 64 * 1024;
const FINISHED = new Uint8Array(0);

/** Small results are carved out of slabs of this size (WriteBuffers). */
export const SLAB_BYTES = 8192;
/** Larger results get an exact buffer of their own. */
export const MAX_SLAB_SLICE = 1024;
/** What an empty bytes field reads as: one shared, zero-length (so nothing can be written into it). */
const NO_BYTES = new Uint8Array(0);

/**
 * The working memory of one state machine's writers, so that machines in one process share none.
 *
 * A scratch buffer: every run and job record written by apply (three per run on every replica)
 * would otherwise allocate a working buffer besides its exact-size result. A writer takes it when
 * free and gives it back in finish(); encoding is synchronous, so it is free again before the next
 * record starts (a writer that lives across an await, like a snapshot chunk's, is larger than this
 * and never takes it).
 *
 * Slabs: small results (records, idempotency entries, results) are carved out of a slab instead
 * of each getting an ArrayBuffer of its own: every replica writes five records per run, and
 * allocating, tracking and freeing an off-heap buffer for each cost more than encoding them. A
 * slice keeps its whole slab alive, so the record cache, which keeps slices longest, counts each
 * slab it pins once, at full size (record-cache.ts); other holders keep theirs briefly (batches,
 * results). Commands, which the leader's in-memory Raft log keeps until compaction, get buffers of
 * their own.
 */
export class WriteBuffers {
  /** Undefined while a writer holds it. */
  scratch: Uint8Array | undefined = new Uint8Array(4096);
  private slab = new Uint8Array(SLAB_BYTES);
  private slabPos = 0;

  /** `n` bytes for a result: a slice of the current slab when small. */
  alloc(n: number): Uint8Array {
    if (n > MAX_SLAB_SLICE) return uninitializedBytes(n);
    if (this.slabPos + n > SLAB_BYTES) {
      this.slab = new Uint8Array(SLAB_BYTES);
      this.slabPos = 0;
    }
    const out = this.slab.subarray(this.slabPos, this.slabPos + n);
    this.slabPos += n;
    return out;
  }
}

/**
 * Writes one message. With `buffers` (apply's writers: the state machine's WriteBuffers) it works
 * in their scratch and returns a slab slice; without (commands, snapshots, tests) it allocates its
 * own working buffer and an exact result.
 */
export class ByteWriter {
  private buf: Uint8Array;
  private pos = 0;
  private pooled = false;

  constructor(initial = 256, private readonly buffers?: WriteBuffers) {
    const scratch = buffers?.scratch;
    if (scratch !== undefined && initial <= scratch.length) {
      this.buf = scratch;
      buffers!.scratch = undefined;
      this.pooled = true;
    } else {
      this.buf = uninitializedBytes(initial);
    }
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    if (this.buf === FINISHED) throw new Error('ByteWriter used after finish()');
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = uninitializedBytes(size);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
  }

  u8(v: number): this {
    this.ensure(1);
    this.buf[this.pos++] = v & 0xff;
    return this;
  }

  /** Unsigned integer up to 2^53 - 1 as a LEB128 varint. */
  uint(v: number): this {
    if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`not an unsigned safe integer: ${v}`);
    this.ensure(8);
    while (v >= 0x80) {
      this.buf[this.pos++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.pos++] = v;
    return this;
  }

  /** Signed safe integer, zig-zag encoded (small negatives stay small). */
  int(v: number): this {
    if (!Number.isSafeInteger(v)) throw new RangeError(`not a safe integer: ${v}`);
    return this.uint(v >= 0 ? v * 2 : -v * 2 - 1);
  }

  bool(v: boolean): this {
    return this.u8(v ? 1 : 0);
  }

  f64(v: number): this {
    this.ensure(8);
    new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 8).setFloat64(0, v, false);
    this.pos += 8;
    return this;
  }

  /** Bytes written so far. */
  get length(): number {
    return this.pos;
  }

  /**
   * Room for an unsigned integer written later with patchUint (a length known only once what it
   * measures is written): a fixed five-byte varint, which ByteReader.uint reads like any other.
   */
  reserveUint(): number {
    this.ensure(5);
    const at = this.pos;
    this.pos += 5;
    return at;
  }

  /** Writes `v` (below 2^35) into the room reserveUint returned. */
  patchUint(at: number, v: number): void {
    if (!Number.isSafeInteger(v) || v < 0 || v >= 2 ** 35) throw new RangeError(`not a five-byte unsigned integer: ${v}`);
    for (let i = 0; i < 4; i++) {
      this.buf[at + i] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[at + 4] = v;
  }

  bytes(v: Uint8Array): this {
    this.uint(v.length);
    this.ensure(v.length);
    this.buf.set(v, this.pos);
    this.pos += v.length;
    return this;
  }

  str(v: string): this {
    // ASCII (ids, keys, most messages) is copied straight in: the same bytes UTF-8 gives,
    // without a temporary array per string.
    const n = v.length;
    if (n < 128) {
      this.ensure(n + 1);
      const start = this.pos;
      this.buf[this.pos++] = n;
      let i = 0;
      for (; i < n; i++) {
        const c = v.charCodeAt(i);
        if (c > 0x7f) break;
        this.buf[this.pos++] = c;
      }
      if (i === n) return this;
      this.pos = start;
    }
    return this.bytes(textEncoder.encode(v));
  }

  /** An array with a length prefix, each item written by `fn`. */
  list<T>(items: readonly T[], fn: (w: this, item: T) => void): this {
    this.uint(items.length);
    // Indexed: a for-of here allocated an iterator result per item wherever it was not optimized.
    for (let i = 0; i < items.length; i++) fn(this, items[i]!);
    return this;
  }

  /**
   * The bytes written: an exact-size copy (a slice of a slab of the writer's buffers when small,
   * unless `ownBuffer`: for results kept long by holders that do not count slabs). The writer
   * cannot be used afterwards.
   */
  finish(ownBuffer = false): Uint8Array {
    const buffers = this.buffers;
    const out = ownBuffer || buffers === undefined ? uninitializedBytes(this.pos) : buffers.alloc(this.pos);
    out.set(this.buf.subarray(0, this.pos));
    // The working buffer (grown or not) becomes the scratch again unless it is huge. A writer
    // that did not have the scratch donates its own when there is none (one abandoned by a
    // throw mid-encode never gives it back).
    if (buffers !== undefined && (this.pooled || buffers.scratch === undefined)) {
      buffers.scratch = this.buf.length <= MAX_SCRATCH ? this.buf : new Uint8Array(4096);
    }
    this.pooled = false;
    this.buf = FINISHED;
    return out;
  }
}

export class ByteReader {
  private pos = 0;
  /** The input as a Buffer, made on the first short string (its latin1 decode is native). */
  private asBuffer: Buffer | undefined;

  constructor(private readonly buf: Uint8Array) {}

  /** Bytes left to read (optional trailing fields). */
  get more(): boolean {
    return this.pos < this.buf.length;
  }

  private need(n: number): void {
    if (this.pos + n > this.buf.length) throw new FsmDecodeError('truncated input');
  }

  u8(): number {
    this.need(1);
    return this.buf[this.pos++]!;
  }

  uint(): number {
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 8; i++) {
      const b = this.u8();
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) {
        if (!Number.isSafeInteger(result)) throw new FsmDecodeError('varint out of range');
        return result;
      }
      mul *= 0x80;
    }
    throw new FsmDecodeError('varint too long');
  }

  int(): number {
    const z = this.uint();
    return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
  }

  bool(): boolean {
    const b = this.u8();
    if (b > 1) throw new FsmDecodeError(`bad bool byte ${b}`);
    return b === 1;
  }

  f64(): number {
    this.need(8);
    const v = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 8).getFloat64(0, false);
    this.pos += 8;
    return v;
  }

  bytes(): Uint8Array {
    const view = this.bytesView();
    return view.length === 0 ? NO_BYTES : view.slice();
  }

  /** A bytes field as a view of the input, no copy: only for bytes not kept beyond the input's life. */
  bytesView(): Uint8Array {
    const n = this.uint();
    // Empty fields (most outputs, payloads and notes) share one: a view or a copy each cost ~100 bytes.
    if (n === 0) return NO_BYTES;
    this.need(n);
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  /** Steps over a bytes field without copying it. */
  skipBytes(): void {
    const n = this.uint();
    this.need(n);
    this.pos += n;
  }

  str(): string {
    const n = this.uint();
    this.need(n);
    const start = this.pos;
    this.pos += n;
    if (n < 128) {
      // Short ASCII without a copy or a decoder call; anything else takes the strict decoder.
      let ascii = true;
      for (let i = start; i < start + n; i++) {
        if (this.buf[i]! > 0x7f) {
          ascii = false;
          break;
        }
      }
      if (ascii) {
        // ASCII is latin1: Node's native decode, far cheaper than building a view per string.
        this.asBuffer ??= Buffer.from(this.buf.buffer, this.buf.byteOffset, this.buf.length);
        return this.asBuffer.toString('latin1', start, start + n);
      }
    }
    try {
      return textDecoder.decode(this.buf.subarray(start, start + n));
    } catch {
      throw new FsmDecodeError('invalid utf-8 string');
    }
  }

  list<T>(fn: (r: this) => T): T[] {
    const n = this.uint();
    // Every item takes at least one byte: a length beyond the rest of the input is corrupt, and
    // refusing it early avoids allocating huge arrays from a hostile length prefix.
    if (n > this.buf.length - this.pos) throw new FsmDecodeError('list length exceeds input');
    const out: T[] = [];
    for (let i = 0; i < n; i++) out.push(fn(this));
    return out;
  }

  /** Bytes not read yet. */
  remaining(): number {
    return this.buf.length - this.pos;
  }

  done(): boolean {
    return this.pos === this.buf.length;
  }

  end(): void {
    if (!this.done()) throw new FsmDecodeError(`${this.buf.length - this.pos} trailing bytes`);
  }
}
