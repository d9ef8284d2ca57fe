// The Run message in stored run records, positional (binary-codec.ts) instead of protobuf.
// Why: a run record is decoded and re-encoded by every replica on fire, claim and finish, and the
// generated protobuf code turns each of its dozen int64 fields into a BigInt and then a string on
// decode; this codec reads them as plain varints. Every field of Run, Attempt and RunError is
// written, in declaration order; the test "covers every field" fails when the proto grows one.
// The re-drive fields (21–22) come apart (writeRunRedrive): a run never re-driven keeps the
// record format it had before they existed (records.ts).
// Except Run.payload (alert runs only): records carry it after the rest (records.ts, formats 3 and 4),
// and Run.requested_by / request_id (runs a person acted on: writeRunCaller, format 5 and results).
import type { Attempt, AttemptOutcome, Run, RunError, RunState } from '../../gen/herald/v1/run.js';
import type { ByteReader, ByteWriter } from './binary-codec.js';

function writeAttempt(w: ByteWriter, a: Attempt): void {
  w.uint(a.number).str(a.workerId).uint(a.fencingToken).int(a.startedUnixMs).int(a.endedUnixMs).uint(a.outcome);
  if (a.error === undefined) w.bool(false);
  else w.bool(true).str(a.error.type).str(a.error.message).bool(a.error.retryable);
}

function readAttempt(r: ByteReader): Attempt {
  const number = r.uint();
  const workerId = r.str();
  const fencingToken = r.uint();
  const startedUnixMs = r.int();
  const endedUnixMs = r.int();
  const outcome = r.uint() as AttemptOutcome;
  const error: RunError | undefined = r.bool() ? { type: r.str(), message: r.str(), retryable: r.bool() } : undefined;
  return { number, workerId, fencingToken, startedUnixMs, endedUnixMs, outcome, error };
}

export function writeRun(w: ByteWriter, run: Run): void {
  w.str(run.id).str(run.jobId).str(run.taskType).int(run.slotUnixMs).int(run.scheduledUnixMs).uint(run.state).uint(run.attempt);
  w.list(run.attempts, writeAttempt);
  w.bool(run.backfilled).bool(run.manual).int(run.notBeforeUnixMs).int(run.createdUnixMs).int(run.finishedUnixMs);
  w.str(run.workerId).uint(run.fencingToken).int(run.leaseDeadlineUnixMs).str(run.reason).bytes(run.output);
  w.int(run.priority).int(run.latenessMs);
}

/** The re-drive fields, after writeRun's (run record format 3, results). */
export function writeRunRedrive(w: ByteWriter, run: Run): void {
  w.uint(run.redriveCount).int(run.redrivenUnixMs);
}

/** Reads what writeRunRedrive wrote into `run`. */
export function readRunRedrive(r: ByteReader, run: Run): void {
  run.redriveCount = r.uint();
  run.redrivenUnixMs = r.int();
}

/** Who last acted on the run by hand (Run.requested_by, request_id): run record format 5, results. */
export function writeRunCaller(w: ByteWriter, run: Run): void {
  w.str(run.requestedBy).str(run.requestId);
}

/** Reads what writeRunCaller wrote into `run`. */
export function readRunCaller(r: ByteReader, run: Run): void {
  run.requestedBy = r.str();
  run.requestId = r.str();
}

/** The output of a run without one, shared (never written into: a finish replaces the buffer). */
export const NO_OUTPUT = Buffer.alloc(0);

export function readRun(r: ByteReader): Run {
  const id = r.str();
  const jobId = r.str();
  const taskType = r.str();
  const slotUnixMs = r.int();
  const scheduledUnixMs = r.int();
  const state = r.uint() as RunState;
  const attempt = r.uint();
  const attempts = r.list(readAttempt);
  const backfilled = r.bool();
  const manual = r.bool();
  const notBeforeUnixMs = r.int();
  const createdUnixMs = r.int();
  const finishedUnixMs = r.int();
  const workerId = r.str();
  const fencingToken = r.uint();
  const leaseDeadlineUnixMs = r.int();
  const reason = r.str();
  const view = r.bytesView();
  // Most runs have no output: they share one empty buffer.
  const output = view.length === 0 ? NO_OUTPUT : Buffer.from(view);
  const priority = r.int();
  const latenessMs = r.int();
  return {
    id,
    jobId,
    taskType,
    slotUnixMs,
    scheduledUnixMs,
    state,
    attempt,
    attempts,
    backfilled,
    manual,
    notBeforeUnixMs,
    createdUnixMs,
    finishedUnixMs,
    workerId,
    fencingToken,
    leaseDeadlineUnixMs,
    reason,
    output,
    priority,
    latenessMs,
    redriveCount: 0,
    redrivenUnixMs: 0,
    payload: NO_OUTPUT,
    // Never stored: filled on reads (job-service.ts) from the leader's dispatch limits.
    waitingFor: '',
    requestedBy: '',
    requestId: '',
  };
}
