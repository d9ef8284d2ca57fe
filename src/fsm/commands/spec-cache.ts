// Decoded job specs shared by content, one cache per state machine.
//
// A job's record is read on every fire, claim and finish of its runs while its spec bytes rarely
// change, and many jobs share one spec (a herd created from one template), so comparing bytes
// costs far less than decoding. Keyed by a hash of the bytes and checked byte for byte, so jobs
// with equal specs share one object. Only apply, the leader's dispatch reads (FsmReads.getJobs)
// and its fire scheduler's dispatch hints (decodeJobHeads) use these objects (none mutates a spec,
// and every spec apply hands out in a result is a copy); reads for the API decode their own.
import type { JobSpec } from '../../gen/herald/v1/job.js';
import { specOf } from './spec-bytes.js';

/**
 * The bound is a working set (jobs whose runs are being fired, claimed and finished about now),
 * not the jobs stored: a decoded spec takes many times the heap of its encoding, so a bound near
 * the jobs stored would pin a lot of memory on every replica once that many distinct jobs fired.
 */
export const MAX_SHARED_SPECS = 20_000;
/** Memory bound: large specs (big payloads) are decoded each time instead of pinned. */
const MAX_SHARED_SPEC_BYTES = 4096;
const MAX_SHARED_TOTAL_BYTES = 16 << 20;

/** FNV-1a over the bytes: the cache key (collisions only cost a decode). */
function hashBytes(v: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < v.length; i++) h = Math.imul(h ^ v[i]!, 0x01000193);
  return h >>> 0;
}

/** Bounded: cleared when full (MAX_SHARED_SPECS entries or MAX_SHARED_TOTAL_BYTES of spec bytes). */
export class SpecCache {
  private readonly specs = new Map<number, { bytes: Buffer; spec: JobSpec }>();
  private bytes = 0;

  /** Entries held (tests). */
  get size(): number {
    return this.specs.size;
  }

  /** `view`: the spec bytes inside the record being read (compared in place, copied only when kept). */
  specOf(view: Uint8Array): JobSpec | undefined {
    if (view.length === 0) return undefined;
    if (view.length > MAX_SHARED_SPEC_BYTES) return specOf(view.slice());
    const h = hashBytes(view);
    const hit = this.specs.get(h);
    if (hit && hit.bytes.equals(view)) return hit.spec;
    const bytes = view.slice();
    const spec = specOf(bytes);
    if (spec === undefined) return spec;
    if (this.specs.size >= MAX_SHARED_SPECS || this.bytes + bytes.length > MAX_SHARED_TOTAL_BYTES) {
      this.specs.clear();
      this.bytes = 0;
    }
    if (hit) this.bytes -= hit.bytes.length;
    this.specs.set(h, { bytes: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length), spec });
    this.bytes += bytes.length;
    return spec;
  }
}
