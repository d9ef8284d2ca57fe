// Stored records: the public Job / Run messages plus the few internal fields the FSM needs,
// behind a record-format version byte. Index keys are a pure function of a record
// (jobIndexKeys / runIndexKey), so the transaction (apply-txn.ts) keeps every index exact by
// diffing the keys of a record before and after a change — no index is updated by hand.
import { Job, JobState } from '../../gen/herald/v1/job.js';
import { Run, RunState } from '../../gen/herald/v1/run.js';
import { ByteReader, ByteWriter, FsmDecodeError, type WriteBuffers } from '../commands/binary-codec.js';
import { dueKey, jobLimitKey, stateKeyOfRunKey, trimKey } from './key-layout.js';
import type { ReadyEntry } from './ready-index.js';
import { readRun, readRunCaller, readRunRedrive, writeRun, writeRunCaller, writeRunRedrive } from '../commands/run-record-codec.js';
import { readJob, writeJob } from '../commands/job-record-codec.js';
import { specBytes, specOf } from '../commands/spec-bytes.js';
import type { SpecCache } from '../commands/spec-cache.js';

/** Format 1 records: [1][internal fields][protobuf message to the end] (still read). */
const RECORD_FORMAT_VERSION = 1;

export interface JobRecord {
  job: Job;
  /** Manual triggers so far: the next manual run is "~m<manualSeq>". */
  manualSeq: number;
  /** BUFFER_ONE: the run queued behind the active one ('' when none). */
  heldRunId: string;
  /**
   * Retention (apply-trim.ts): the job's stored terminal runs (kept by the transaction as runs
   * become terminal or are deleted; recounted by each trim), and when its history is next due
   * for a trim (0: no terminal run stored). A job with trimDueMs has a trim index key.
   */
  terminalRuns: number;
  trimDueMs: number;
  /**
   * Runs of the job held (not dispatchable) behind its active ones: the BUFFER_ONE run and the
   * backfill runs queued under FORBID / BUFFER_ONE. Released one at a time, when no unheld run
   * of the job is active (run-transitions.ts). Absent (undefined) means heldRunId's one or none.
   */
  heldRuns?: number;
  /**
   * The latest due slot the leader's watchdog raised an alert for (applyWatchdogEvents): one
   * alert per stalled slot, however many checks see it. Absent (undefined) means none.
   */
  watchdogSlotMs?: number;
  /**
   * Retention's horizon (feature level 4, apply-trim.ts): the highest slot of a scheduled or
   * backfill run of the job that retention deleted, so a backfill can tell "never ran" from "ran,
   * record trimmed" (apply-manual-runs.ts). Only rises. Absent (undefined) means none.
   */
  trimmedThroughSlotMs?: number;
}

export interface RunRecord {
  run: Run;
  /** BUFFER_ONE: pending but not dispatchable until the job's active run ends. */
  held: boolean;
  /**
   * Attempts made before the run's last re-drive (apply-retry-runs.ts): they do not count toward
   * the retry budget. Absent (0) for a run never re-driven.
   */
  attemptBase?: number;
}

/** Attempts of the run that count toward its job's max_attempts: those since its last re-drive. */
export function budgetAttempts(rec: RunRecord): number {
  return rec.run.attempt - (rec.attemptBase ?? 0);
}

/**
 * Job records: format 1 was [1][manualSeq][heldRunId][spec bytes][protobuf Job]; format 2 was
 * [2][manualSeq][heldRunId][positional Job] (job-record-codec.ts); format 3 (written since) is
 * [3][manualSeq][heldRunId][terminalRuns][trimDueMs][positional Job], and format 4 the same with
 * [heldRuns] after trimDueMs, written only while a job holds more runs than its BUFFER_ONE one (a
 * queued backfill). All are read; the older ones without retention state, which the schema-4
 * upgrade derives (retention-upgrade.ts).
 */
const JOB_RECORD_FORMAT_VERSION = 3;
const JOB_RECORD_FORMAT_2 = 2;
const JOB_RECORD_QUEUE_FORMAT_VERSION = 4;
/**
 * Format 5 (alerts): format 4's fields, [heldRuns] always, then [consecutive DEAD runs]
 * [watchdog alert slot] before the positional Job. Written only while a job has either (a job
 * without them keeps the bytes of format 3 / 4): Job.consecutive_dead_runs travels in this
 * header, not in the positional Job, so job records of every other job do not change.
 */
const JOB_RECORD_ALERTS_FORMAT_VERSION = 5;
/**
 * Format 6 (who): format 5's fields, then [created_by][updated_by] before the positional Job.
 * Written only for a job with either (one created or changed with auth on): every other job keeps
 * the bytes of format 3 / 4 / 5, and Job.created_by / updated_by travel in this header only.
 */
const JOB_RECORD_WHO_FORMAT_VERSION = 6;
/**
 * Format 7 (request ids, feature level 3): format 6's fields, then [created request id][updated
 * request id] before the positional Job. Written only for a job with either; every other job keeps
 * the bytes of the formats above.
 */
const JOB_RECORD_REQUEST_FORMAT_VERSION = 7;
/**
 * Format 8 (trim horizon, feature level 4): format 7's fields, all present, then
 * [trimmedThroughSlotMs] before the positional Job. Written only for a job with a horizon (only
 * retention at level 4 sets one); every other job keeps the bytes of the formats above, as record
 * bytes are replicated to followers as they are and must be a function of the record alone.
 */
const JOB_RECORD_HORIZON_FORMAT_VERSION = 8;

/** How many runs of the job are held (JobRecord.heldRuns, with its default). */
export function heldRunsOf(rec: JobRecord): number {
  return rec.heldRuns ?? (rec.heldRunId === '' ? 0 : 1);
}

/** `buffers`: the state machine's (apply's writes); without, the record gets an exact buffer of its own. */
export function encodeJobRecord(rec: JobRecord, buffers?: WriteBuffers): Uint8Array {
  const w = new ByteWriter(160 + specBytes(rec.job.spec).length, buffers);
  const held = heldRunsOf(rec);
  const queued = held !== (rec.heldRunId === '' ? 0 : 1);
  const dead = rec.job.consecutiveDeadRuns;
  const watchdog = rec.watchdogSlotMs ?? 0;
  const horizon = rec.trimmedThroughSlotMs ?? 0;
  const trimmed = horizon > 0;
  const requests = trimmed || rec.job.createdRequestId !== '' || rec.job.updatedRequestId !== '';
  const who = requests || rec.job.createdBy !== '' || rec.job.updatedBy !== '';
  const alerts = who || dead > 0 || watchdog > 0;
  const version = trimmed ? JOB_RECORD_HORIZON_FORMAT_VERSION : requests ? JOB_RECORD_REQUEST_FORMAT_VERSION : who ? JOB_RECORD_WHO_FORMAT_VERSION : alerts ? JOB_RECORD_ALERTS_FORMAT_VERSION : queued ? JOB_RECORD_QUEUE_FORMAT_VERSION : JOB_RECORD_FORMAT_VERSION;
  w.u8(version).uint(rec.manualSeq).str(rec.heldRunId).uint(rec.terminalRuns).int(rec.trimDueMs);
  if (queued || alerts) w.uint(held);
  if (alerts) w.uint(dead).int(watchdog);
  if (who) w.str(rec.job.createdBy).str(rec.job.updatedBy);
  if (requests) w.str(rec.job.createdRequestId).str(rec.job.updatedRequestId);
  if (trimmed) w.int(horizon);
  writeJob(w, rec.job);
  return w.finish();
}

/** The rest of the record: the protobuf message. */
function rest(bytes: Uint8Array, r: ByteReader): Uint8Array {
  return bytes.subarray(bytes.length - r.remaining());
}

/** `specs`: the state machine's shared decoded specs, for apply and the leader's reads only (spec-cache.ts). */
export function decodeJobRecord(bytes: Uint8Array, specs?: SpecCache): JobRecord {
  const r = new ByteReader(bytes);
  const v = r.u8();
  if (v >= JOB_RECORD_FORMAT_2 && v <= JOB_RECORD_HORIZON_FORMAT_VERSION) {
    const manualSeq = r.uint();
    const heldRunId = r.str();
    const terminalRuns = v === JOB_RECORD_FORMAT_2 ? 0 : r.uint();
    const trimDueMs = v === JOB_RECORD_FORMAT_2 ? 0 : r.int();
    // Each format from 5 on carries the header fields of the one before it.
    const requests = v >= JOB_RECORD_REQUEST_FORMAT_VERSION;
    const who = v >= JOB_RECORD_WHO_FORMAT_VERSION;
    const alerts = v >= JOB_RECORD_ALERTS_FORMAT_VERSION;
    const heldRuns = v === JOB_RECORD_QUEUE_FORMAT_VERSION || alerts ? r.uint() : undefined;
    if (alerts) {
      const dead = r.uint();
      const watchdogSlotMs = r.int();
      const createdBy = who ? r.str() : '';
      const updatedBy = who ? r.str() : '';
      const createdRequestId = requests ? r.str() : '';
      const updatedRequestId = requests ? r.str() : '';
      const horizon = v === JOB_RECORD_HORIZON_FORMAT_VERSION ? r.int() : 0;
      const job = readJob(r, specs);
      r.end();
      job.consecutiveDeadRuns = dead;
      job.createdBy = createdBy;
      job.updatedBy = updatedBy;
      job.createdRequestId = createdRequestId;
      job.updatedRequestId = updatedRequestId;
      const rec: JobRecord = { job, manualSeq, heldRunId, terminalRuns, trimDueMs, heldRuns: heldRuns! };
      if (watchdogSlotMs > 0) rec.watchdogSlotMs = watchdogSlotMs;
      // Format 8 with no horizon is never written: read back, it would encode as format 7.
      if (v === JOB_RECORD_HORIZON_FORMAT_VERSION && horizon <= 0) throw new FsmDecodeError('job record format 8 without a trim horizon');
      if (horizon > 0) rec.trimmedThroughSlotMs = horizon;
      return rec;
    }
    const job = readJob(r, specs);
    r.end();
    return heldRuns === undefined ? { job, manualSeq, heldRunId, terminalRuns, trimDueMs } : { job, manualSeq, heldRunId, terminalRuns, trimDueMs, heldRuns };
  }
  if (v !== RECORD_FORMAT_VERSION) throw new FsmDecodeError(`unknown job record version ${v}`);
  const manualSeq = r.uint();
  const heldRunId = r.str();
  const spec = specOf(r.bytes());
  const job = Job.decode(rest(bytes, r));
  if (spec) job.spec = spec;
  return { job, manualSeq, heldRunId, terminalRuns: 0, trimDueMs: 0 };
}

/**
/**
 * Run records: format 1 held the protobuf Run; format 2 the positional encoding of
 * run-record-codec.ts, which is several times cheaper to decode. Format 3 (re-drive), written only
 * for a run that was re-driven, is [3][held][attemptBase][positional Run][redrive fields][payload];
 * format 4 (alerts), written only for a run with a payload (an alert run) never re-driven, is
 * format 2 followed by Run.payload. Every other run keeps format 2's bytes. All are read.
 */
const RUN_RECORD_FORMAT_VERSION = 2;
const RUN_RECORD_REDRIVEN_FORMAT = 3;
const RUN_RECORD_PAYLOAD_FORMAT_VERSION = 4;
/**
 * Format 5 (caller, feature level 3): format 3's fields, then [requested_by][request_id]. Written
 * only for a run a person acted on (trigger, backfill, retry, cancel) at level 3.
 */
const RUN_RECORD_CALLER_FORMAT = 5;

/** `buffers`: as for encodeJobRecord. */
export function encodeRunRecord(rec: RunRecord, buffers?: WriteBuffers): Uint8Array {
  const run = rec.run;
  const payload = run.payload;
  const w = new ByteWriter(192 + run.output.length + payload.length + 64 * run.attempts.length, buffers);
  const caller = run.requestedBy !== '' || run.requestId !== '';
  if (caller || run.redriveCount > 0 || (rec.attemptBase ?? 0) > 0) {
    w.u8(caller ? RUN_RECORD_CALLER_FORMAT : RUN_RECORD_REDRIVEN_FORMAT).bool(rec.held).uint(rec.attemptBase ?? 0);
    writeRun(w, run);
    writeRunRedrive(w, run);
    w.bytes(payload);
    if (caller) writeRunCaller(w, run);
  } else {
    w.u8(payload.length > 0 ? RUN_RECORD_PAYLOAD_FORMAT_VERSION : RUN_RECORD_FORMAT_VERSION).bool(rec.held);
    writeRun(w, run);
    if (payload.length > 0) w.bytes(payload);
  }
  return w.finish();
}

export function decodeRunRecord(bytes: Uint8Array): RunRecord {
  const r = new ByteReader(bytes);
  const v = r.u8();
  if (v === RUN_RECORD_FORMAT_VERSION || v === RUN_RECORD_PAYLOAD_FORMAT_VERSION) {
    const held = r.bool();
    const run = readRun(r);
    if (v === RUN_RECORD_PAYLOAD_FORMAT_VERSION) run.payload = Buffer.from(r.bytesView());
    r.end();
    return { run, held };
  }
  if (v === RUN_RECORD_REDRIVEN_FORMAT || v === RUN_RECORD_CALLER_FORMAT) {
    const held = r.bool();
    const attemptBase = r.uint();
    const run = readRun(r);
    readRunRedrive(r, run);
    const payload = r.bytesView();
    if (payload.length > 0) run.payload = Buffer.from(payload);
    if (v === RUN_RECORD_CALLER_FORMAT) readRunCaller(r, run);
    r.end();
    return { run, held, attemptBase };
  }
  if (v !== RECORD_FORMAT_VERSION) throw new FsmDecodeError(`unknown run record version ${v}`);
  const held = r.bool();
  return { run: Run.decode(rest(bytes, r)), held };
}

export const TERMINAL_STATES: ReadonlySet<RunState> = new Set([
  RunState.RUN_STATE_SUCCEEDED,
  RunState.RUN_STATE_DEAD,
  RunState.RUN_STATE_CANCELLED,
  RunState.RUN_STATE_SKIPPED,
  RunState.RUN_STATE_MISSED,
]);

export function isTerminal(state: RunState): boolean {
  return TERMINAL_STATES.has(state);
}

/** Waiting for a worker: PENDING, or FAILED with a retry scheduled. */
export function isDispatchable(rec: RunRecord): boolean {
  const s = rec.run.state;
  return !rec.held && (s === RunState.RUN_STATE_PENDING || s === RunState.RUN_STATE_FAILED);
}

/** Shared by every job without index keys (each fired one-off job, every paused one). */
const NO_INDEX_KEYS: readonly string[] = Object.freeze([]);

/**
 * Secondary index keys of a job: the due index entry while ACTIVE with a next fire time, and the
 * trim index entry while it has terminal runs (whatever its state: paused and completed jobs age).
 */
export function jobIndexKeys(rec: JobRecord): readonly string[] {
  const job = rec.job;
  const due = job.state === JobState.JOB_STATE_ACTIVE && job.nextFireUnixMs > 0;
  const limit = job.spec?.maxConcurrent ?? 0;
  let keys: readonly string[];
  if (rec.trimDueMs <= 0) keys = due ? [dueKey(job.nextFireUnixMs, job.id)] : NO_INDEX_KEYS;
  else keys = due ? [dueKey(job.nextFireUnixMs, job.id), trimKey(rec.trimDueMs, job.id)] : [trimKey(rec.trimDueMs, job.id)];
  // Only limited jobs get the key: unlimited ones (nearly all) write nothing more.
  return limit > 0 ? [...keys, jobLimitKey(job.id, limit)] : keys;
}

/** Run states that are not terminal: a job's active runs are its s\0 keys in these states. */
export const ACTIVE_STATES: readonly RunState[] = [RunState.RUN_STATE_PENDING, RunState.RUN_STATE_RUNNING, RunState.RUN_STATE_FAILED];

/**
 * The one secondary index key of a run in `state` stored under `key` (its runKey): by state (the
 * ready index lives in memory, ready-index.ts). Built from the key, whose tail is the state key's
 * tail. A function of the state alone, so the transaction diffs states, not key lists.
 */
export function runIndexKey(state: RunState, key: string): string {
  return stateKeyOfRunKey(state, key);
}

/** The run's entry in the in-memory ready index while it is dispatchable. */
export function readyEntryOf(rec: RunRecord): ReadyEntry | undefined {
  if (!isDispatchable(rec)) return undefined;
  const run = rec.run;
  return { runId: run.id, jobId: run.jobId, taskType: run.taskType, priority: run.priority, notBeforeMs: run.notBeforeUnixMs };
}
