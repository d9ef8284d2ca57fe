// Binary encoding of apply results: [format version][result tag][fields...]. The empty byte
// array is the result of no-op and config entries (the StateMachine contract).
import type { Job } from '../../gen/herald/v1/job.js';
import type { Run } from '../../gen/herald/v1/run.js';
import { TaskTypeConfig } from '../../gen/herald/v1/task_type_service.js';
import type { ErrorCode } from '../../herald-error.js';
import { ByteReader, ByteWriter, FsmDecodeError, type WriteBuffers } from './binary-codec.js';
import { readJob, readJobHead, writeJob, type JobHead } from './job-record-codec.js';
import type { SpecCache } from './spec-cache.js';
import { readTokenRecord, writeTokenRecord } from './token-record.js';
import { readRun, readRunCaller, readRunRedrive, writeRun, writeRunCaller, writeRunRedrive } from './run-record-codec.js';
import type { CancelSignal, ClaimedRun, ClaimItemResult, DispatchHint, FsmResult, ItemError } from './results.js';

export const RESULT_FORMAT_VERSION = 1;

const TAGS = {
  job: 1,
  delete: 2,
  trigger: 3,
  backfill: 4,
  fire: 5,
  claim: 6,
  runItems: 7,
  cancel: 8,
  trim: 9,
  rejected: 10,
  jobs: 11,
  retry: 12,
  alerts: 13,
  taskType: 14,
  token: 15,
} as const;
type Tagged = Exclude<FsmResult, { type: 'empty' }>;
const TYPE_OF_TAG = new Map<number, Tagged['type']>(
  Object.entries(TAGS).map(([k, v]) => [v, k as Tagged['type']]),
);
/** The tag table itself, for applied-result.ts's typed view (its one definition is here). */
export { TAGS as RESULT_TAGS };

function writeError(w: ByteWriter, e: ItemError | undefined): void {
  if (e === undefined) {
    w.bool(false);
    return;
  }
  w.bool(true).str(e.code).str(e.message).str(e.reason);
}

function readError(r: ByteReader): ItemError | undefined {
  if (!r.bool()) return undefined;
  return { code: r.str() as ErrorCode, message: r.str(), reason: r.str() };
}

// Jobs and runs in results use the stored records' positional codecs: a result is decoded only
// by this build's server (results are never replicated or stored), and a claim or create batch
// carries thousands of them.
// A job's consecutive DEAD count, who created / changed it and the request ids follow it: stored
// records carry them in their header instead.
function writeOptJob(w: ByteWriter, j: Job | undefined): void {
  if (j === undefined) w.bool(false);
  else {
    writeJob(w.bool(true), j);
    w.uint(j.consecutiveDeadRuns).str(j.createdBy).str(j.updatedBy).str(j.createdRequestId).str(j.updatedRequestId);
  }
}
function readOptJob(r: ByteReader): Job | undefined {
  if (!r.bool()) return undefined;
  const job = readJob(r);
  job.consecutiveDeadRuns = r.uint();
  job.createdBy = r.str();
  job.updatedBy = r.str();
  job.createdRequestId = r.str();
  job.updatedRequestId = r.str();
  return job;
}
function writeOptRun(w: ByteWriter, x: Run | undefined): void {
  if (x === undefined) w.bool(false);
  else {
    writeRun(w.bool(true), x);
    writeRunRedrive(w, x);
    writeRunCaller(w, x);
  }
}
function readOptRun(r: ByteReader): Run | undefined {
  if (!r.bool()) return undefined;
  const run = readRun(r);
  readRunRedrive(r, run);
  readRunCaller(r, run);
  return run;
}
function readClaimedRun(r: ByteReader): ClaimedRun | undefined {
  if (!r.bool()) return undefined;
  return {
    id: r.str(),
    jobId: r.str(),
    taskType: r.str(),
    slotUnixMs: r.int(),
    scheduledUnixMs: r.int(),
    notBeforeUnixMs: r.int(),
    attempt: r.uint(),
    fencingToken: r.uint(),
    latenessMs: r.uint(),
    leaseDeadlineUnixMs: r.int(),
    leaseDurationMs: r.uint(),
    executionTimeoutMs: r.uint(),
    payload: r.bytes(),
    manual: r.bool(),
    backfilled: r.bool(),
  };
}

function writeSignals(w: ByteWriter, s: readonly CancelSignal[]): void {
  w.list(s, (w, x) => w.str(x.runId).str(x.workerId).uint(x.fencingToken));
}

function readSignals(r: ByteReader): CancelSignal[] {
  return r.list((r) => ({ runId: r.str(), workerId: r.str(), fencingToken: r.uint() }));
}

const writeIds = (w: ByteWriter, ids: readonly string[]): void => void w.list(ids, (w, s) => w.str(s));
const readIds = (r: ByteReader): string[] => r.list((r) => r.str());

/** `buffers`: the state machine's when apply encodes (binary-codec.ts); without, an exact buffer. */
export function encodeResult(res: FsmResult, buffers?: WriteBuffers): Uint8Array {
  if (res.type === 'empty') return new Uint8Array();
  const w = new ByteWriter(256, buffers);
  w.u8(RESULT_FORMAT_VERSION).u8(TAGS[res.type]);
  switch (res.type) {
    case 'job':
      writeError(w, res.error);
      writeOptJob(w, res.job);
      w.bool(res.created);
      break;
    case 'jobs':
      w.list(res.items, (w, i) => {
        writeError(w, i.error);
        writeOptJob(w, i.job);
        w.bool(i.created);
      });
      break;
    case 'delete':
      writeError(w, res.error);
      w.uint(res.cancelledRuns);
      writeSignals(w, res.signals);
      break;
    case 'trigger':
      writeError(w, res.error);
      writeOptRun(w, res.run);
      w.bool(res.created);
      // Trailing and only when some: results written before triggers could replace end here.
      if (res.signals && res.signals.length > 0) writeSignals(w, res.signals);
      break;
    case 'backfill':
      writeError(w, res.error);
      writeIds(w, res.runIds);
      break;
    case 'fire':
      w.list(res.items, (w, i) => {
        writeError(w, i.error);
        writeIds(w, i.created);
        writeIds(w, i.missed);
        writeIds(w, i.skipped);
        w.int(i.nextFireMs);
        const d = i.dispatch;
        if (d === undefined) w.bool(false);
        else w.bool(true).str(d.taskType).int(d.priority).bool(d.jittered).bool(d.allowsOverlap).int(d.jitterWindowMs);
        w.uint(i.backlogFull ?? 0);
      });
      writeSignals(w, res.signals);
      break;
    case 'claim':
      w.list(res.items, (w, i) => {
        writeError(w, i.error);
        const c = i.run;
        if (c === undefined) w.bool(false);
        else {
          w.bool(true).str(c.id).str(c.jobId).str(c.taskType).int(c.slotUnixMs).int(c.scheduledUnixMs).int(c.notBeforeUnixMs);
          w.uint(c.attempt).uint(c.fencingToken).uint(c.latenessMs).int(c.leaseDeadlineUnixMs).uint(c.leaseDurationMs).uint(c.executionTimeoutMs);
          w.bytes(c.payload).bool(c.manual).bool(c.backfilled);
        }
      });
      break;
    case 'runItems':
      w.list(res.items, (w, i) => {
        writeError(w, i.error);
        w.uint(i.state);
      });
      break;
    case 'cancel':
      w.list(res.items, (w, i) => {
        writeError(w, i.error);
        writeOptRun(w, i.run);
      });
      writeSignals(w, res.signals);
      break;
    case 'trim':
      w.uint(res.runsTrimmed).uint(res.idempotencyKeysTrimmed);
      break;
    case 'retry':
      w.list(res.items, (w, i) => {
        writeError(w, i.error);
        writeOptRun(w, i.run);
      });
      break;
    case 'alerts':
      w.list(res.items, (w, i) => {
        writeError(w, i.error);
        w.str(i.runId);
      });
      break;
    case 'taskType':
      writeError(w, res.error);
      if (res.config === undefined) w.bool(false);
      else w.bool(true).bytes(TaskTypeConfig.encode(res.config).finish());
      break;
    case 'token':
      writeError(w, res.error);
      if (res.token === undefined) w.bool(false);
      else writeTokenRecord(w.bool(true), res.token);
      break;
    case 'rejected':
      writeError(w, res.error);
      break;
  }
  return w.finish();
}

/**
 * The jobs a job or jobs result holds, as heads (id, state, next fire), without decoding their
 * specs: what the leader's timing wheel and job cache need after every create or change, at a
 * fraction of decodeResult's cost. `dispatchBeforeMs` adds the dispatch hint of each active job
 * whose next fire is before it (the fire scheduler's, for the jobs its wheel holds): 0, the
 * default, for none. Those specs are decoded through `specs` (the state machine's specCache: one
 * decode per distinct spec), or once per job without it. Empty for any other result.
 */
export function decodeJobHeads(bytes: Uint8Array, dispatchBeforeMs = 0, specs?: SpecCache): JobHead[] {
  if (bytes.length < 2 || bytes[0] !== RESULT_FORMAT_VERSION || (bytes[1] !== TAGS.job && bytes[1] !== TAGS.jobs)) return [];
  const r = new ByteReader(bytes);
  r.u8();
  const tag = r.u8();
  const heads: JobHead[] = [];
  const item = (r: ByteReader): void => {
    readError(r);
    if (r.bool()) {
      heads.push(readJobHead(r, dispatchBeforeMs, specs));
      r.uint(); // consecutive DEAD runs
      r.skipBytes(); // created_by, updated_by, the request ids: strings are length-prefixed like bytes
      r.skipBytes();
      r.skipBytes();
      r.skipBytes();
    }
    r.bool(); // created
  };
  if (tag === TAGS.job) item(r);
  else r.list((r) => item(r));
  return heads;
}

/**
 * The type of an encoded result from its header alone: for callers that only check what came
 * back (the leader's fire commands, whose effects it reads from the applied entry instead).
 */
export function resultTypeOf(bytes: Uint8Array): FsmResult['type'] {
  if (bytes.length === 0) return 'empty';
  if (bytes.length < 2 || bytes[0] !== RESULT_FORMAT_VERSION) throw new FsmDecodeError(`unknown result format version ${bytes[0]}`);
  const type = TYPE_OF_TAG.get(bytes[1]!);
  if (type === undefined) throw new FsmDecodeError(`unknown result tag ${bytes[1]}`);
  return type;
}

function skipError(r: ByteReader): boolean {
  if (!r.bool()) return false;
  r.skipBytes(); // code, message, reason: strings are length-prefixed like bytes
  r.skipBytes();
  r.skipBytes();
  return true;
}

/** Steps over a writeIds list, returning its length. */
function skipIds(r: ByteReader): number {
  const n = r.uint();
  for (let i = 0; i < n; i++) r.skipBytes();
  return n;
}

/** One item of a fire result as counts: what the leader's fire scheduler and metrics need. */
export interface FireOutcome {
  readonly failed: boolean;
  readonly created: number;
  readonly missed: number;
  readonly skipped: number;
  readonly nextFireMs: number;
  readonly dispatch: DispatchHint | undefined;
  /** Of `missed`, those recorded because the job's backlog was full. */
  readonly backlogFull: number;
}

function readDispatchHint(r: ByteReader): DispatchHint | undefined {
  return r.bool() ? { taskType: r.str(), priority: r.int(), jittered: r.bool(), allowsOverlap: r.bool(), jitterWindowMs: r.int() } : undefined;
}

/**
 * The items of a fire result without their run ids (a herd's fire carries a thousand): the
 * leader reads every applied fire to re-arm its wheel, and the ids would be garbage at once.
 * Empty for any other result.
 */
export function decodeFireOutcomes(bytes: Uint8Array): FireOutcome[] {
  if (bytes.length < 2 || bytes[0] !== RESULT_FORMAT_VERSION || bytes[1] !== TAGS.fire) return [];
  const r = new ByteReader(bytes);
  r.u8();
  r.u8();
  const n = r.uint();
  const out: FireOutcome[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const failed = skipError(r);
    const created = skipIds(r);
    const missed = skipIds(r);
    const skipped = skipIds(r);
    const nextFireMs = r.int();
    const dispatch = readDispatchHint(r);
    out[i] = { failed, created, missed, skipped, nextFireMs, dispatch, backlogFull: r.uint() };
  }
  return out;
}

/**
 * The cancel signals of a delete, fire or cancel result (empty for any other). A fire's items
 * are stepped over rather than decoded: every fire is read for its signals, which it rarely has.
 */
export function decodeSignals(bytes: Uint8Array): readonly CancelSignal[] {
  if (bytes.length < 2 || bytes[0] !== RESULT_FORMAT_VERSION) return [];
  if (bytes[1] === TAGS.fire) {
    const r = new ByteReader(bytes);
    r.u8();
    r.u8();
    const n = r.uint();
    for (let i = 0; i < n; i++) {
      skipError(r);
      skipIds(r);
      skipIds(r);
      skipIds(r);
      r.int();
      readDispatchHint(r);
      r.uint(); // backlog full
    }
    const signals = readSignals(r);
    r.end();
    return signals;
  }
  if (bytes[1] !== TAGS.delete && bytes[1] !== TAGS.cancel && bytes[1] !== TAGS.trigger) return [];
  const res = decodeResult(bytes);
  if (res.type === 'trigger') return res.signals ?? [];
  return res.type === 'delete' || res.type === 'cancel' ? res.signals : [];
}

export function decodeResult(bytes: Uint8Array): FsmResult {
  if (bytes.length === 0) return { type: 'empty' };
  const r = new ByteReader(bytes);
  const version = r.u8();
  if (version !== RESULT_FORMAT_VERSION) throw new FsmDecodeError(`unknown result format version ${version}`);
  const tag = r.u8();
  const type = TYPE_OF_TAG.get(tag);
  if (type === undefined) throw new FsmDecodeError(`unknown result tag ${tag}`);
  let res: FsmResult;
  switch (type) {
    case 'job': {
      const error = readError(r);
      const job = readOptJob(r);
      res = { type, ...(error && { error }), ...(job && { job }), created: r.bool() };
      break;
    }
    case 'jobs': {
      const items = r.list((r) => {
        const error = readError(r);
        const job = readOptJob(r);
        return { ...(error && { error }), ...(job && { job }), created: r.bool() };
      });
      res = { type, items };
      break;
    }
    case 'delete': {
      const error = readError(r);
      res = { type, ...(error && { error }), cancelledRuns: r.uint(), signals: readSignals(r) };
      break;
    }
    case 'trigger': {
      const error = readError(r);
      const run = readOptRun(r);
      const created = r.bool();
      const signals = r.more ? readSignals(r) : undefined;
      res = { type, ...(error && { error }), ...(run && { run }), created, ...(signals && { signals }) };
      break;
    }
    case 'backfill': {
      const error = readError(r);
      res = { type, ...(error && { error }), runIds: readIds(r) };
      break;
    }
    case 'fire': {
      const items = r.list((r) => {
        const error = readError(r);
        const created = readIds(r);
        const missed = readIds(r);
        const skipped = readIds(r);
        const nextFireMs = r.int();
        const dispatch = readDispatchHint(r);
        const backlogFull = r.uint();
        return { ...(error && { error }), created, missed, skipped, nextFireMs, ...(backlogFull > 0 && { backlogFull }), ...(dispatch && { dispatch }) };
      });
      res = { type, items, signals: readSignals(r) };
      break;
    }
    case 'claim': {
      // Built without spreads: a claim carries thousands of items, decoded on the leader's
      // dispatch path.
      const items = r.list((r): ClaimItemResult => {
        const error = readError(r);
        const run = readClaimedRun(r);
        if (error === undefined) return run === undefined ? {} : { run };
        return run === undefined ? { error } : { error, run };
      });
      res = { type, items };
      break;
    }
    case 'runItems': {
      const items = r.list((r) => {
        const error = readError(r);
        const state = r.uint();
        return error === undefined ? { state } : { error, state };
      });
      res = { type, items };
      break;
    }
    case 'cancel': {
      const items = r.list((r) => {
        const error = readError(r);
        const run = readOptRun(r);
        return { ...(error && { error }), ...(run && { run }) };
      });
      res = { type, items, signals: readSignals(r) };
      break;
    }
    case 'trim':
      res = { type, runsTrimmed: r.uint(), idempotencyKeysTrimmed: r.uint() };
      break;
    case 'retry': {
      const items = r.list((r) => {
        const error = readError(r);
        const run = readOptRun(r);
        return { ...(error && { error }), ...(run && { run }) };
      });
      res = { type, items };
      break;
    }
    case 'alerts': {
      const items = r.list((r) => {
        const error = readError(r);
        const runId = r.str();
        return error ? { error, runId } : { runId };
      });
      res = { type, items };
      break;
    }
    case 'taskType': {
      const error = readError(r);
      const config = r.bool() ? TaskTypeConfig.decode(r.bytes()) : undefined;
      res = { type, ...(error && { error }), ...(config && { config }) };
      break;
    }
    case 'token': {
      const error = readError(r);
      const token = r.bool() ? readTokenRecord(r) : undefined;
      res = { type, ...(error && { error }), ...(token && { token }) };
      break;
    }
    case 'rejected': {
      const error = readError(r);
      if (!error) throw new FsmDecodeError('rejected result without error');
      res = { type, error };
      break;
    }
  }
  r.end();
  return res;
}
