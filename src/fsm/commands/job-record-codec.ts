// The Job message in stored job records and apply results, positional (binary-codec.ts) instead
// of protobuf, for the reason run-record-codec.ts gives: a job record is read and rewritten by
// every replica on every fire and every finish. The spec stays protobuf, as bytes encoded once per
// spec object (it changes only with updateJob). Every field of Job is written, in declaration
// order; the codec test fails when the proto grows one. Except consecutive_dead_runs, which job
// records carry in their header (records.ts, format 5) and results leave at 0, created_by /
// updated_by (format 6's header; results write them after the Job) and the request ids (format 7's).
import { JobState, type Job, type JobSpec } from '../../gen/herald/v1/job.js';
import type { ByteReader, ByteWriter } from './binary-codec.js';
import { dispatchHintOf } from './dispatch-hint.js';
import type { DispatchHint } from './results.js';
import { specBytes, specOf } from './spec-bytes.js';
import type { SpecCache } from './spec-cache.js';

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
 * through `specs` (without one, once per job), so a herd created from one template costs a hash
 * and a compare of its spec bytes per job. Only those: a million jobs created with distinct specs,
 * due later, decode none (decoding each cost the leader a create's worth of CPU and, through the
 * shared specs, a lot of memory).
 */
export function readJobHead(r: ByteReader, dispatchBeforeMs = 0, specs?: SpecCache): JobHead {
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
    decoded = specs ? specs.specOf(spec) : specOf(spec.slice());
  } catch {
    decoded = undefined; // a hint is an optimisation: without one the run is claimed from the ready index
  }
  return decoded === undefined ? { id, state, nextFireUnixMs } : { id, state, nextFireUnixMs, dispatch: dispatchHintOf(decoded) };
}

/** `specs`: apply's reads, which may share one decoded spec per job (spec-cache.ts). */
export function readJob(r: ByteReader, specs?: SpecCache): Job {
  const id = r.str();
  const spec = specs ? specs.specOf(r.bytesView()) : specOf(r.bytes());
  const state = r.uint() as JobState;
  const version = r.uint();
  const createdUnixMs = r.int();
  const updatedUnixMs = r.int();
  const nextFireUnixMs = r.int();
  const lastSlotUnixMs = r.int();
  const pauseNote = r.str();
  const activeRuns = r.uint();
  return { id, spec, state, version, createdUnixMs, updatedUnixMs, nextFireUnixMs, lastSlotUnixMs, pauseNote, activeRuns, consecutiveDeadRuns: 0, createdBy: '', updatedBy: '', createdRequestId: '', updatedRequestId: '' };
}
