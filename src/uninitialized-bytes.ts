// Buffers that are written in full before anything reads them need not be zeroed. A zeroed one
// (`new Uint8Array(n)`) is a calloc, and jemalloc (which `herald server` preloads) zeroes a
// recycled large extent by handing its pages back to the kernel: every page then faults in again
// on first write, which on the VMs this runs on costs ~60 times as much as writing the page
// (bench/README.md, "Page faults"). An uninitialized one (a malloc) reuses the allocator's pages as
// they are.
import { BinaryWriter } from '@bufbuild/protobuf/wire';

/** Below this a zeroed allocation is cheap (a small size class: zeroed with memset). */
const ZEROED_BELOW = 4096;

/**
 * `n` bytes of undefined content, as a plain Uint8Array (not a Buffer, whose slice() does not
 * copy). The caller writes every byte it exposes.
 */
export function uninitializedBytes(n: number): Uint8Array {
  if (n < ZEROED_BELOW) return new Uint8Array(n);
  const b = Buffer.allocUnsafeSlow(n);
  return new Uint8Array(b.buffer, b.byteOffset, n);
}

/** The BinaryWriter state the overrides below use (TypeScript-private in @bufbuild/protobuf 2.x). */
interface WriterInternals {
  buffer: Uint8Array;
  pos: number;
  stackPos: number[];
}

function hasInternals(w: unknown): w is WriterInternals {
  const x = w as Partial<WriterInternals>;
  return x.buffer instanceof Uint8Array && typeof x.pos === 'number' && Array.isArray(x.stackPos) && typeof (BinaryWriter.prototype as unknown as Record<string, unknown>)['ensureCapacity'] === 'function';
}

/**
 * The protobuf writer of the generated encoders (ts-proto), growing into and finishing with
 * uninitialized buffers: the gRPC serializers (rewritten by scripts/gen-proto.mjs) encode every
 * message with one, so a CreateJobs answer or a peer batch of megabytes is not written into
 * freshly faulted pages two or three times over. Where the library's internals are not what this
 * expects (another version), it is the stock writer; test/foundation/uninitialized-bytes.test.ts
 * says so.
 */
export class UninitializedWriter extends BinaryWriter {
  /** Whether the overrides are in place (tests). */
  static readonly active: boolean = hasInternals(new BinaryWriter());
}

if (UninitializedWriter.active) {
  Object.defineProperties(UninitializedWriter.prototype, {
    // Doubling as the library does; `view()` builds its DataView over the whole ArrayBuffer, which
    // uninitializedBytes gives exactly (offset 0, length n).
    ensureCapacity: {
      value(this: WriterInternals, size: number): void {
        const required = this.pos + size;
        if (required <= this.buffer.length) return;
        let n = this.buffer.length || 128;
        while (n < required) n *= 2;
        const next = uninitializedBytes(n);
        if (this.pos > 0) next.set(this.buffer.subarray(0, this.pos));
        this.buffer = next;
      },
    },
    finish: {
      value(this: WriterInternals): Uint8Array {
        const out = uninitializedBytes(this.pos);
        out.set(this.buffer.subarray(0, this.pos));
        this.pos = 0;
        this.stackPos = [];
        return out;
      },
    },
  });
}
