// A job spec's protobuf bytes, encoded once per spec object. Nothing mutates a spec in place
// (updateJob installs a new object), so the bytes a spec was decoded from, or first encoded to,
// serve every later write of it instead of encoding it again.
import { JobSpec } from '../../gen/herald/v1/job.js';
import { FsmDecodeError } from './binary-codec.js';

/**
 * The encoding travels with the spec object it belongs to, as a hidden (non-enumerable) field: no
 * table outside the objects, so nothing here is shared between state machines, a copy (`{...spec}`)
 * never inherits bytes that may no longer match it, and the bytes go when the spec goes.
 */
const BYTES = Symbol('JobSpec bytes');
type WithBytes = JobSpec & { [BYTES]?: Uint8Array };
const NO_SPEC = new Uint8Array();

function remember(spec: JobSpec, bytes: Uint8Array): void {
  // A frozen spec (a caller's constant) is encoded each time instead.
  if (Object.isExtensible(spec)) Object.defineProperty(spec, BYTES, { value: bytes, enumerable: false, configurable: false, writable: false });
}

export function specBytes(spec: JobSpec | undefined): Uint8Array {
  if (spec === undefined) return NO_SPEC;
  let b = (spec as WithBytes)[BYTES];
  if (b === undefined) {
    b = JobSpec.encode(spec).finish();
    remember(spec, b);
  }
  return b;
}

/** Decodes spec bytes (empty = no spec) and remembers them for the next encode. */
export function specOf(bytes: Uint8Array): JobSpec | undefined {
  if (bytes.length === 0) return undefined;
  let spec: JobSpec;
  try {
    spec = JobSpec.decode(bytes);
  } catch (e) {
    throw new FsmDecodeError(`bad job spec: ${(e as Error).message}`);
  }
  remember(spec, bytes);
  return spec;
}
