// Binary encoding of apply results: [format version][result tag][fields...]. The empty byte
// array is the result of no-op and config entries (the StateMachine contract).
import { Job } from '../gen/herald/v1/job.js';
import { Run } from '../gen/herald/v1/run.js';
import type { ErrorCode } from '../herald-error.js';
import { ByteReader, ByteWriter, FsmDecodeError } from './binary-codec.js';
import type { CancelSignal, FsmResult, ItemError } from './results.js';

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
} as const;
type Tagged = Exclude<FsmResult, { type: 'empty' }>;
const TYPE_OF_TAG = new Map<number, Tagged['type']>(
  Object.entries(TAGS).map(([k, v]) => [v, k as Tagged['type']]),
);

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

function writeOpt<T>(w: ByteWriter, v: T | undefined, enc: (v: T) => Uint8Array): void {
  if (v === undefined) w.bool(false);
  else w.bool(true).bytes(enc(v));
}

function readOpt<T>(r: ByteReader, dec: (b: Uint8Array) => T): T | undefined {
  return r.bool() ? dec(r.bytes()) : undefined;
}

const encJob = (j: Job): Uint8Array => Job.encode(j).finish();
const encRun = (x: Run): Uint8Array => Run.encode(x).finish();
const decJob = (b: Uint8Array): Job => Job.decode(b);
const decRun = (b: Uint8Array): Run => Run.decode(b);

function writeSignals(w: ByteWriter, s: readonly CancelSignal[]): void {
  w.list(s, (w, x) => w.str(x.runId).str(x.workerId).uint(x.fencingToken));
}

function readSignals(r: ByteReader): CancelSignal[] {
  return r.list((r) => ({ runId: r.str(), workerId: r.str(), fencingToken: r.uint() }));
}

const writeIds = (w: ByteWriter, ids: readonly string[]): void => void w.list(ids, (w, s) => w.str(s));
const readIds = (r: ByteReader): string[] => r.list((r) => r.str());

export function encodeResult(res: FsmResult): Uint8Array {
  if (res.type === 'empty') return new Uint8Array();
  const w = new ByteWriter();
  w.u8(RESULT_FORMAT_VERSION).u8(TAGS[res.type]);
  switch (res.type) {
    case 'job':
      writeError(w, res.error);
      writeOpt(w, res.job, encJob);
      w.bool(res.created);
      break;
    case 'jobs':
      w.list(res.items, (w, i) => {
        writeError(w, i.error);
        writeOpt(w, i.job, encJob);
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
      writeOpt(w, res.run, encRun);
      w.bool(res.created);
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
      });
      writeSignals(w, res.signals);
      break;
    case 'claim':
      w.list(res.items, (w, i) => {
        writeError(w, i.error);
        writeOpt(w, i.run, encRun);
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
        writeOpt(w, i.run, encRun);
      });
      writeSignals(w, res.signals);
      break;
    case 'trim':
      w.uint(res.runsTrimmed).uint(res.idempotencyKeysTrimmed);
      break;
    case 'rejected':
      writeError(w, res.error);
      break;
  }
  return w.finish();
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
      const job = readOpt(r, decJob);
      res = { type, ...(error && { error }), ...(job && { job }), created: r.bool() };
      break;
    }
    case 'jobs': {
      const items = r.list((r) => {
        const error = readError(r);
        const job = readOpt(r, decJob);
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
      const run = readOpt(r, decRun);
      res = { type, ...(error && { error }), ...(run && { run }), created: r.bool() };
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
        return {
          ...(error && { error }),
          created: readIds(r),
          missed: readIds(r),
          skipped: readIds(r),
          nextFireMs: r.int(),
        };
      });
      res = { type, items, signals: readSignals(r) };
      break;
    }
    case 'claim': {
      const items = r.list((r) => {
        const error = readError(r);
        const run = readOpt(r, decRun);
        return { ...(error && { error }), ...(run && { run }) };
      });
      res = { type, items };
      break;
    }
    case 'runItems': {
      const items = r.list((r) => {
        const error = readError(r);
        return { ...(error && { error }), state: r.uint() };
      });
      res = { type, items };
      break;
    }
    case 'cancel': {
      const items = r.list((r) => {
        const error = readError(r);
        const run = readOpt(r, decRun);
        return { ...(error && { error }), ...(run && { run }) };
      });
      res = { type, items, signals: readSignals(r) };
      break;
    }
    case 'trim':
      res = { type, runsTrimmed: r.uint(), idempotencyKeysTrimmed: r.uint() };
      break;
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
