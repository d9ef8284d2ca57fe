// A job spec's protobuf bytes, encoded once per spec object. Nothing mutates a spec in place
// (updateJob installs a new object), so the bytes a spec was decoded from, or first encoded to,
// serve every later write of it instead of encoding it again.
import { JobSpec } from '../../gen/herald/v1/job.js';
import { FsmDecodeError } from './binary-codec.js';

/**
 * A memo cache of immutable values (a spec's encoding) keyed by the spec object: it holds no
 * settings and is bounded by the specs alive (a WeakMap entry goes with its key), so state
 * machines in one process may share it.
 */
const specBytesCache = new WeakMap<JobSpec, Uint8Array>();
const NO_SPEC = new Uint8Array();

export function specBytes(spec: JobSpec | undefined): Uint8Array {
  if (spec === undefined) return NO_SPEC;
  let b = specBytesCache.get(spec);
  if (b === undefined) {
    b = JobSpec.encode(spec).finish();
    specBytesCache.set(spec, b);
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
  specBytesCache.set(spec, bytes);
  return spec;
}
