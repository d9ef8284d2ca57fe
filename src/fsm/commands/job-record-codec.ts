// The Job message in stored job records and apply results, positional (binary-codec.ts) instead
// of protobuf, for the reason run-record-codec.ts gives: a job record is read and rewritten by
// every replica on every fire and every finish. The spec stays protobuf, as bytes encoded once per
// spec object (it changes only with updateJob). Every field of Job is written, in declaration
// order; the codec test fails when the proto grows one.
import { JobSpec, JobState, type Job } from '../../gen/herald/v1/job.js';
import { FsmDecodeError, type ByteReader, type ByteWriter } from './binary-codec.js';
import { dispatchHintOf } from './dispatch-hint.js';
import type { DispatchHint } from './results.js';

/**
 * Encoded specs by spec object. Nothing mutates a spec in place (updateJob installs a new
 * object), so the bytes read with a record are reused instead of re-encoding it on every write.
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

/**
 * Specs decoded inside apply, by content: a job's record is read on every fire, claim and finish
 * of its runs while its spec bytes rarely change, and many jobs share one spec (a herd created
 * from one template), so comparing bytes costs far less than decoding. Keyed by a hash of the
 * bytes and checked byte for byte, so jobs with equal specs share one object. Only apply, the
 * leader's dispatch reads (FsmReads.getJobs) and its fire scheduler's dispatch hints (readJobHead)
 * share these objects (none mutates a spec, and every spec apply hands out in a result is a copy);
 * reads for the API decode their own.
 * Bounded: cleared when full. The bound is a working set (jobs whose runs are being fired, claimed
 * and finished about now), not the jobs stored: a decoded spec takes about 512 bytes of heap even
 * when its encoding is 37 (a daily job with one label), so 100k entries would have pinned some 70 MB
 * on every replica once that many distinct jobs had fired.
 */
const sharedSpecs = new Map<number, { bytes: Buffer; spec: JobSpec }>();
const MAX_SHARED_SPECS = 20_000;
/** Memory bound: large specs (big payloads) are decoded each time instead of pinned. */
const MAX_SHARED_SPEC_BYTES = 4096;
const MAX_SHARED_TOTAL_BYTES = 16 << 20;
let sharedBytes = 0;

/** FNV-1a over the bytes: the shared-spec key (collisions only cost a decode). */
function hashBytes(v: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < v.length; i++) h = Math.imul(h ^ v[i]!, 0x01000193);
  return h >>> 0;
}

/** `view`: the spec bytes inside the record being read (compared in place, copied only when kept). */
function sharedSpecOf(view: Uint8Array): JobSpec | undefined {
  if (view.length === 0) return undefined;
  if (view.length > MAX_SHARED_SPEC_BYTES) return specOf(view.slice());
  const h = hashBytes(view);
  const hit = sharedSpecs.get(h);
  if (hit && hit.bytes.equals(view)) return hit.spec;
  const bytes = view.slice();
  const spec = specOf(bytes);
  if (spec === undefined) return spec;
  if (sharedSpecs.size >= MAX_SHARED_SPECS || sharedBytes + bytes.length > MAX_SHARED_TOTAL_BYTES) {
    sharedSpecs.clear();
    sharedBytes = 0;
  }
  if (hit) sharedBytes -= hit.bytes.length;
  sharedSpecs.set(h, { bytes: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length), spec });
  sharedBytes += bytes.length;
  return spec;
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

export function writeJob(w: ByteWriter, job: Job): void {
  w.str(job.id).bytes(specBytes(job.spec)).uint(job.state).uint(job.version);
  w.int(job.createdUnixMs).int(job.updatedUnixMs).int(job.nextFireUnixMs).int(job.lastSlotUnixMs);
  w.str(job.pauseNote).uint(job.activeRuns);
}

/** What the leader's timing wheel and caches need of a job: no spec (the costly part to decode). */
export interface JobHead {
  readonly id: string;
  readonly state: JobState;
  readonly nextFireUnixMs: number;
  /**
   * With `dispatchBeforeMs`, for an active job whose next slot is before it: how that slot's run is
   * dispatched, so the scheduler can fire it ahead and claim it behind the fire from its first fire on.
   */
  readonly dispatch?: DispatchHint;
}

/**
 * Reads a job written by writeJob as its head only. With `dispatchBeforeMs`, an active job whose
 * next fire is before it also gets its dispatch hint, from its spec: decoded once per distinct spec
 * (sharedSpecOf), so a herd created from one template costs a hash and a compare of its spec bytes
 * per job. Only those: a million jobs created with distinct specs, due later, decode none (decoding
 * each cost the leader a create's worth of CPU and, through the shared specs, hundreds of MB).
 */
export function readJobHead(r: ByteReader, dispatchBeforeMs = 0): JobHead {
  const id = r.str();
  const spec = dispatchBeforeMs > 0 ? r.bytesView() : (r.skipBytes(), undefined);
  const state = r.uint() as JobState;
  r.uint(); // version
  r.int(); // created
  r.int(); // updated
  const nextFireUnixMs = r.int();
  r.int(); // last slot
  r.str(); // pause note
  r.uint(); // active runs
  if (spec === undefined || state !== JobState.JOB_STATE_ACTIVE || nextFireUnixMs === 0 || nextFireUnixMs >= dispatchBeforeMs) return { id, state, nextFireUnixMs };
  let decoded: JobSpec | undefined;
  try {
    decoded = sharedSpecOf(spec);
  } catch {
    decoded = undefined; // a hint is an optimisation: without one the run is claimed from the ready index
  }
  return decoded === undefined ? { id, state, nextFireUnixMs } : { id, state, nextFireUnixMs, dispatch: dispatchHintOf(decoded) };
}

/** `shared`: apply's reads, which may share one decoded spec per job (see sharedSpecs). */
export function readJob(r: ByteReader, shared = false): Job {
  const id = r.str();
  const spec = shared ? sharedSpecOf(r.bytesView()) : specOf(r.bytes());
  const state = r.uint() as JobState;
  const version = r.uint();
  const createdUnixMs = r.int();
  const updatedUnixMs = r.int();
  const nextFireUnixMs = r.int();
  const lastSlotUnixMs = r.int();
  const pauseNote = r.str();
  const activeRuns = r.uint();
  return { id, spec, state, version, createdUnixMs, updatedUnixMs, nextFireUnixMs, lastSlotUnixMs, pauseNote, activeRuns };
}
