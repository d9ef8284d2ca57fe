// Binary encoding of FSM commands: [format version][command tag][fields...] (binary-codec.ts).
// The version byte lets a future format coexist with entries already in logs and snapshots;
// tags are append-only — never renumber one.
import { JobSpec } from '../../gen/herald/v1/job.js';
import { TaskTypeConfig } from '../../gen/herald/v1/task_type_service.js';
import { ByteReader, ByteWriter, FsmDecodeError } from './binary-codec.js';
import { specOf } from './spec-bytes.js';
import { readTokenRecord, writeTokenRecord } from './token-record.js';
import type { FsmCommand, FsmCommandType, MarkItem } from './commands.js';
import { FsmUnsupportedError, SUPPORTED_FEATURE_LEVEL } from './feature-levels.js';

export const COMMAND_FORMAT_VERSION = 1;

const TAGS: Record<FsmCommandType, number> = {
  putJob: 1,
  updateJob: 2,
  deleteJob: 3,
  pauseJob: 4,
  resumeJob: 5,
  triggerJob: 6,
  backfillJob: 7,
  fireRuns: 8,
  claimRuns: 9,
  finishRuns: 10,
  // tag 11 reserved: renewLeases, removed (no server ever proposed it: heartbeats renew leases in
  // the leader's memory). Decoding it fails like any unknown tag.
  expireLeases: 12,
  cancelRuns: 13,
  markRuns: 14,
  trimHistory: 15,
  putJobs: 16,
  // 17 is taken: builds that carried apply effects in the log wrote it. Decoding it now fails,
  // which every replica answers alike with a rejected result that changes nothing.
  retryRuns: 18,
  raiseAlerts: 19,
  putTaskType: 20,
  deleteTaskType: 21,
  putToken: 22,
  deleteToken: 23,
  // 24 and 25 are reserved (other branches).
  setFeatureLevel: 26,
};
/**
 * Tags no build proposes any more, whose entries every build since answers alike with a rejected
 * result (older logs may hold them). Any other unknown tag is a newer format: not a result.
 */
const OBSOLETE_TAGS: ReadonlySet<number> = new Set([11, 17]);
const TYPE_OF_TAG = new Map<number, FsmCommandType>(
  Object.entries(TAGS).map(([k, v]) => [v, k as FsmCommandType]),
);

/** Encoded afresh: the caller's spec object may be reused and changed between commands. */
function specBytes(spec: JobSpec): Uint8Array {
  return JobSpec.encode(spec).finish();
}

// A decoded command's spec keeps the bytes it came in (spec-bytes.ts), so storing the job
// does not encode it again.
function decodeSpec(bytes: Uint8Array): JobSpec {
  const spec = specOf(bytes);
  if (spec === undefined) return JobSpec.fromPartial({});
  return spec;
}

/** Bad proto bytes are a decode error like any other malformed command (a rejected result). */
function decodeConfig(bytes: Uint8Array): TaskTypeConfig {
  try {
    return TaskTypeConfig.decode(bytes);
  } catch (e) {
    throw new FsmDecodeError(`bad task type config: ${(e as Error).message}`);
  }
}

/**
 * The job commands' principal (level 2) and request id (level 3): trailing and only when set, so
 * a command without them keeps the bytes it had before the fields existed, and those entries
 * decode without them. [principal] alone (never empty), or [principal, possibly empty][request id]
 * (never empty): one command has one encoding. A level-2 build meets bytes after the principal
 * (or an empty one) and stops applying (feature-levels.ts) rather than drop the request id.
 */
function writeJobWho(w: ByteWriter, principal: string | undefined, requestId: string | undefined): void {
  if (requestId) w.str(principal ?? '').str(requestId);
  else if (principal) w.str(principal);
}
function readJobWho(r: ByteReader): { principal?: string; requestId?: string } {
  if (!r.more) return {};
  const principal = r.str();
  if (!r.more) {
    if (principal === '') throw new FsmDecodeError('trailing bytes after the command: an empty principal');
    return { principal };
  }
  const requestId = r.str();
  if (requestId === '') throw new FsmDecodeError('trailing bytes after the command: an empty request id');
  return principal === '' ? { requestId } : { principal, requestId };
}

/**
 * The run commands' caller (trigger, backfill, retry, cancel; level 3): [principal][request id]
 * trailing, written when either is set (not both empty), absent otherwise.
 */
function writeRunWho(w: ByteWriter, principal: string | undefined, requestId: string | undefined): void {
  if (principal || requestId) w.str(principal ?? '').str(requestId ?? '');
}
function readRunWho(r: ByteReader): { principal?: string; requestId?: string } {
  if (!r.more) return {};
  const principal = r.str();
  const requestId = r.str();
  if (principal === '' && requestId === '') throw new FsmDecodeError('trailing bytes after the command: an empty caller');
  return { ...(principal !== '' ? { principal } : {}), ...(requestId !== '' ? { requestId } : {}) };
}

export function encodeCommand(cmd: FsmCommand): Uint8Array {
  const w = new ByteWriter();
  w.u8(COMMAND_FORMAT_VERSION).u8(TAGS[cmd.type]).int(cmd.nowMs);
  switch (cmd.type) {
    case 'putJob':
      w.str(cmd.jobId).bytes(specBytes(cmd.spec)).str(cmd.idempotencyKey);
      writeJobWho(w, cmd.principal, cmd.requestId);
      break;
    case 'putJobs':
      w.list(cmd.items, (w, i) => w.str(i.jobId).bytes(specBytes(i.spec)).str(i.idempotencyKey));
      writeJobWho(w, cmd.principal, cmd.requestId);
      break;
    case 'updateJob':
      w.str(cmd.jobId).bytes(specBytes(cmd.spec)).uint(cmd.expectedVersion);
      writeJobWho(w, cmd.principal, cmd.requestId);
      break;
    case 'deleteJob':
      w.str(cmd.jobId).uint(cmd.expectedVersion);
      writeJobWho(w, cmd.principal, cmd.requestId);
      break;
    case 'pauseJob':
      w.str(cmd.jobId).str(cmd.note);
      writeJobWho(w, cmd.principal, cmd.requestId);
      break;
    case 'resumeJob':
      w.str(cmd.jobId);
      writeJobWho(w, cmd.principal, cmd.requestId);
      break;
    case 'triggerJob':
      // The overlap flag is trailing and always written: an entry without it predates the rule.
      w.str(cmd.jobId).str(cmd.idempotencyKey).bool(cmd.ignoreOverlap);
      writeRunWho(w, cmd.principal, cmd.requestId);
      break;
    case 'backfillJob':
      w.str(cmd.jobId).int(cmd.fromMs).int(cmd.toMs).uint(cmd.maxRuns).bool(cmd.ignoreOverlap);
      writeRunWho(w, cmd.principal, cmd.requestId);
      break;
    case 'fireRuns':
      w.uint(cmd.misfireThresholdMs).list(cmd.items, (w, i) => w.str(i.jobId).int(i.slotMs));
      break;
    case 'claimRuns':
      w.list(cmd.items, (w, i) => w.str(i.runId).str(i.workerId).int(i.leaseDeadlineMs));
      // Trailing and only when set: entries written before the fields existed decode as 0.
      if (cmd.aheadMs || cmd.defaultLeaseMs) w.uint(cmd.aheadMs ?? 0).uint(cmd.defaultLeaseMs ?? 0);
      break;
    case 'finishRuns':
      w.list(cmd.items, (w, i) => {
        w.str(i.runId).uint(i.fencingToken).bool(i.succeeded);
        if (i.succeeded) w.bytes(i.output);
        else w.str(i.errorType).str(i.errorMessage).bool(i.retryable).bool(i.timedOut);
      });
      break;
    case 'expireLeases':
      w.list(cmd.items, (w, i) => w.str(i.runId).uint(i.fencingToken));
      break;
    case 'cancelRuns':
      w.list(cmd.items, (w, i) => w.str(i.runId).str(i.reason));
      writeRunWho(w, cmd.principal, cmd.requestId);
      break;
    case 'markRuns':
      w.list(cmd.items, (w, i) => w.str(i.runId).u8(i.outcome === 'missed' ? 1 : 2).str(i.reason));
      break;
    case 'trimHistory':
      w.list(cmd.jobIds, (w, id) => w.str(id)).uint(cmd.maxIdempotencyKeys);
      break;
    case 'retryRuns':
      w.list(cmd.runIds, (w, id) => w.str(id)).uint(cmd.onlyState).bool(cmd.ignoreOverlap);
      writeRunWho(w, cmd.principal, cmd.requestId);
      break;
    case 'raiseAlerts':
      w.list(cmd.items, (w, i) => w.str(i.jobId).int(i.slotMs).str(i.reason));
      break;
    case 'putTaskType':
      w.bytes(TaskTypeConfig.encode(cmd.config).finish());
      break;
    case 'deleteTaskType':
      w.str(cmd.taskType);
      break;
    case 'putToken':
      writeTokenRecord(w, cmd.token).bool(cmd.bootstrap);
      break;
    case 'deleteToken':
      w.str(cmd.nameOrId);
      break;
    case 'setFeatureLevel':
      w.uint(cmd.level);
      break;
  }
  // Own buffer: the leader's in-memory Raft log keeps every command until the next compaction,
  // and a slab slice would keep its whole slab (and the records beside it) alive that long.
  return w.finish(true);
}

/** An obsolete tag (OBSOLETE_TAGS): the one decode failure apply still answers with 'rejected'. */
export class FsmObsoleteCommandError extends FsmDecodeError {}

/**
 * Throws FsmUnsupportedError for a newer format (unknown version or tag, a setFeatureLevel above
 * SUPPORTED_FEATURE_LEVEL), FsmObsoleteCommandError for an obsolete tag, FsmDecodeError on
 * anything else malformed. Apply answers only the obsolete tags with a result; for the others
 * it stops (feature-levels.ts): bytes past what this build knows may be a newer format.
 */
export function decodeCommand(bytes: Uint8Array): FsmCommand {
  const r = new ByteReader(bytes);
  const version = r.u8();
  if (version !== COMMAND_FORMAT_VERSION) throw new FsmUnsupportedError(undefined, `unknown command format version ${version}`);
  const tag = r.u8();
  const type = TYPE_OF_TAG.get(tag);
  if (type === undefined) {
    if (OBSOLETE_TAGS.has(tag)) throw new FsmObsoleteCommandError(`obsolete command tag ${tag}`);
    throw new FsmUnsupportedError(undefined, `unknown command tag ${tag}`);
  }
  const nowMs = r.int();
  let cmd: FsmCommand;
  switch (type) {
    case 'putJob':
      cmd = { type, nowMs, jobId: r.str(), spec: decodeSpec(r.bytes()), idempotencyKey: r.str(), ...readJobWho(r) };
      break;
    case 'putJobs':
      cmd = { type, nowMs, items: r.list((r) => ({ jobId: r.str(), spec: decodeSpec(r.bytes()), idempotencyKey: r.str() })), ...readJobWho(r) };
      break;
    case 'updateJob':
      cmd = { type, nowMs, jobId: r.str(), spec: decodeSpec(r.bytes()), expectedVersion: r.uint(), ...readJobWho(r) };
      break;
    case 'deleteJob':
      cmd = { type, nowMs, jobId: r.str(), expectedVersion: r.uint(), ...readJobWho(r) };
      break;
    case 'pauseJob':
      cmd = { type, nowMs, jobId: r.str(), note: r.str(), ...readJobWho(r) };
      break;
    case 'resumeJob':
      cmd = { type, nowMs, jobId: r.str(), ...readJobWho(r) };
      break;
    case 'triggerJob':
      cmd = { type, nowMs, jobId: r.str(), idempotencyKey: r.str(), ignoreOverlap: r.more ? r.bool() : true, ...readRunWho(r) };
      break;
    case 'backfillJob':
      cmd = { type, nowMs, jobId: r.str(), fromMs: r.int(), toMs: r.int(), maxRuns: r.uint(), ignoreOverlap: r.more ? r.bool() : true, ...readRunWho(r) };
      break;
    case 'fireRuns':
      cmd = {
        type,
        nowMs,
        misfireThresholdMs: r.uint(),
        items: r.list((r) => ({ jobId: r.str(), slotMs: r.int() })),
      };
      break;
    case 'claimRuns':
      {
        const items = r.list((r) => ({ runId: r.str(), workerId: r.str(), leaseDeadlineMs: r.int() }));
        cmd = r.more ? { type, nowMs, items, aheadMs: r.uint(), defaultLeaseMs: r.uint() } : { type, nowMs, items };
      }
      break;
    case 'finishRuns':
      cmd = {
        type,
        nowMs,
        items: r.list((r) => {
          const runId = r.str();
          const fencingToken = r.uint();
          const succeeded = r.bool();
          if (succeeded) {
            return { runId, fencingToken, succeeded, output: r.bytes(), errorType: '', errorMessage: '', retryable: false, timedOut: false };
          }
          return {
            runId,
            fencingToken,
            succeeded,
            output: new Uint8Array(),
            errorType: r.str(),
            errorMessage: r.str(),
            retryable: r.bool(),
            timedOut: r.bool(),
          };
        }),
      };
      break;
    case 'expireLeases':
      cmd = { type, nowMs, items: r.list((r) => ({ runId: r.str(), fencingToken: r.uint() })) };
      break;
    case 'cancelRuns':
      cmd = { type, nowMs, items: r.list((r) => ({ runId: r.str(), reason: r.str() })), ...readRunWho(r) };
      break;
    case 'markRuns':
      cmd = {
        type,
        nowMs,
        items: r.list((r): MarkItem => {
          const runId = r.str();
          const o = r.u8();
          if (o !== 1 && o !== 2) throw new FsmDecodeError(`bad mark outcome ${o}`);
          return { runId, outcome: o === 1 ? 'missed' : 'skipped', reason: r.str() };
        }),
      };
      break;
    case 'trimHistory':
      cmd = { type, nowMs, jobIds: r.list((r) => r.str()), maxIdempotencyKeys: r.uint() };
      break;
    case 'retryRuns':
      cmd = { type, nowMs, runIds: r.list((r) => r.str()), onlyState: r.uint(), ignoreOverlap: r.bool(), ...readRunWho(r) };
      break;
    case 'raiseAlerts':
      cmd = { type, nowMs, items: r.list((r) => ({ jobId: r.str(), slotMs: r.int(), reason: r.str() })) };
      break;
    case 'putTaskType':
      cmd = { type, nowMs, config: decodeConfig(r.bytes()) };
      break;
    case 'deleteTaskType':
      cmd = { type, nowMs, taskType: r.str() };
      break;
    case 'putToken':
      cmd = { type, nowMs, token: readTokenRecord(r), bootstrap: r.bool() };
      break;
    case 'deleteToken':
      cmd = { type, nowMs, nameOrId: r.str() };
      break;
    case 'setFeatureLevel': {
      const level = r.uint();
      if (level > SUPPORTED_FEATURE_LEVEL) throw new FsmUnsupportedError(level, `setFeatureLevel ${level}`);
      cmd = { type, nowMs, level };
      break;
    }
  }
  r.end();
  return cmd;
}
