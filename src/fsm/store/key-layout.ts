// The LevelDB key layout of the scheduler state machine.
//
// Keys are ASCII strings; components are separated by NUL ("\0" below), which sorts below every
// character an id may contain, so a prefix range "<p>\0<id>\0" holds exactly that id's keys and
// ids sort as plain strings. User-provided ids are validated to [A-Za-z0-9._:-]{1,128} before they
// reach a key (validation.ts), idempotency keys to printable ASCII: neither can contain NUL, so no
// input can break out of its component. Times are zero-padded 15-digit decimal milliseconds
// (0 ≤ t ≤ 999,999,999,999,999) so byte order = time order.
//
//   m\0applied                                 applied Raft index (decimal), written in every batch
//   m\0schema                                  schema version
//   m\0feature_level                           cluster feature level (decimal; absent = 1, feature-levels.ts)
//   m\0restoring                               present only while a restore is half done
//   c\0<state:2>                               count of runs in a RunState (metrics)
//   j\0<jobId>                                 job record (records.ts)
//   d\0<nextFire:15>\0<jobId>                  due index: ACTIVE jobs by next fire time (I6)
//   h\0<trimDue:15>\0<jobId>                   trim index: jobs with terminal runs, by when their
//                                              history is next due for a trim (schema 4)
//   r\0<jobId>\0<slot:15>\0<suffix>            run record: history by job and slot
//   s\0<state:2>\0<jobId>\0<slot:15>\0<suffix> runs by state (ListRuns filters)
//   i\0c\0<idempotencyKey>                     CreateJob idempotency → job id + expiry
//   i\0t\0<jobId>\0<idempotencyKey>            TriggerJob idempotency → run id + expiry
//   x\0<expiry:15>\0<idempotency record key>   idempotency keys by expiry (trim)
//   y\0t\0<taskType>                           task type config (limits; value: task-type-record.ts)
//   y\0j\0<jobId>\0<maxConcurrent>             jobs with JobSpec.max_concurrent > 0 (a job index key),
//                                              so the leader loads every limit with one short range read
//   k\0t\0<tokenId>                            bearer token (salted hash, never the secret; token-record.ts)
//   k\0bootstrap                               present once a bootstrap admin token was put (never again)
//   n\0<tokenName>                             token name → token id (names are unique)
//
// Values of index keys are empty (everything needed is in the key) except where noted.
//
// Every index key is written (and later deleted) by every replica for every run transition, so
// the layout keeps only indexes some read needs at scale. Schema 1 also kept a\0<jobId>\0<runId>
// (a job's runs not yet terminal) and l\0<leaseDeadline:15>\0<runId> (RUNNING by deadline): a
// job's active runs are the s\0 ranges of the non-terminal states under its id, and the leader
// keeps leases in memory, reading RUNNING runs from s\0 only when it takes over. Dropping them
// cut 4 of 19 writes per run; a schema-1 store or snapshot loses those keys when opened.
// Schema 2 also kept q\0<1000-prio:4>\0<notBefore:15>\0<runId> and
// t\0<taskType>\0<1000-prio:4>\0<notBefore:15>\0<runId> (ready runs, global and per task type):
// schema 3 keeps that index in memory on every replica (ready-index.ts), rebuilt from the s\0
// PENDING and FAILED ranges at open and restore. That cut 4 of the remaining 15 writes per run;
// a schema-1 or -2 store or snapshot loses those keys when opened.
// Schema 4 added the trim index (and job records that carry what it is derived from): a store or
// snapshot of an older schema gets both derived when opened or restored (retention-upgrade.ts).
import type { ParsedRunId } from '../commands/run-id.js';

export const SEP = '\0';
/** One past SEP: the exclusive upper bound of a "<prefix>\0" range. */
export const SEP_END = '\x01';

/** One past every key starting with `prefix` (which ends with SEP): the `lt` bound of its range. */
export function prefixEnd(prefix: string): string {
  return prefix.slice(0, -1) + SEP_END;
}

export const SCHEMA_VERSION = 4;
/** Schema versions whose stores and snapshots this build reads (upgrading them on the way in). */
export const READABLE_SCHEMAS: readonly number[] = [1, 2, 3, 4];
/** The first schema with the trim index: older stores and snapshots derive it on the way in. */
export const TRIM_INDEX_SCHEMA = 4;
/** Prefixes of indexes that older schemas kept and this one dropped (deleted on upgrade). */
export const DROPPED_INDEX_PREFIXES = [`a${SEP}`, `l${SEP}`, `q${SEP}`, `t${SEP}`] as const;

export const META_APPLIED = `m${SEP}applied`;
export const META_SCHEMA = `m${SEP}schema`;
export const META_FEATURE_LEVEL = `m${SEP}feature_level`;
export const META_RESTORING = `m${SEP}restoring`;
/**
 * The highest command time (nowMs) applied so far, decimal: a new leader never stamps below it
 * (cluster time never runs back across leaders, DESIGN §5a). Absent in a store from before it: 0.
 */
export const META_COMMAND_TIME = `m${SEP}command_time`;

export function padTime(ms: number): string {
  return String(Math.max(0, Math.trunc(ms))).padStart(15, '0');
}

/** Two-digit state strings, built once: state keys are built on every run transition. */
const PADDED_STATES = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));

function padState(state: number): string {
  return PADDED_STATES[state] ?? String(state).padStart(2, '0');
}

export function counterKey(state: number): string {
  return `c${SEP}${padState(state)}`;
}
export const COUNTER_PREFIX = `c${SEP}`;

export function jobKey(jobId: string): string {
  return `j${SEP}${jobId}`;
}
export const JOB_PREFIX = `j${SEP}`;

/** [gte, lt) of the job keys whose id starts with `idPrefix` (ids are ASCII below DEL). */
export function jobIdRange(idPrefix: string): { gte: string; lt: string } {
  return idPrefix === '' ? { gte: JOB_PREFIX, lt: prefixEnd(JOB_PREFIX) } : { gte: JOB_PREFIX + idPrefix, lt: `${JOB_PREFIX}${idPrefix}\x7f` };
}

export function dueKey(nextFireMs: number, jobId: string): string {
  return `d${SEP}${padTime(nextFireMs)}${SEP}${jobId}`;
}
export const DUE_PREFIX = `d${SEP}`;

/** [gte, lt) of due keys with fire time in [fromMs, toMs). */
export function dueRange(fromMs: number, toMs: number): { gte: string; lt: string } {
  return { gte: `d${SEP}${padTime(fromMs)}`, lt: `d${SEP}${padTime(toMs)}` };
}

export function trimKey(dueMs: number, jobId: string): string {
  return `h${SEP}${padTime(dueMs)}${SEP}${jobId}`;
}
export const TRIM_PREFIX = `h${SEP}`;

/** [gte, lt) of trim index keys due at or before `nowMs`. */
export function trimDueRange(nowMs: number): { gte: string; lt: string } {
  return { gte: TRIM_PREFIX, lt: `h${SEP}${padTime(nowMs + 1)}` };
}

/** The job id of a trim index key ("h\0<15>\0" is 18 characters). */
export function jobIdOfTrimKey(key: string): string {
  return key.slice(2 + 15 + 1);
}

/**
 * Splits a due key ("d\0<15 digits>\0<job id>") into (time, job id). A due window hands every
 * key of a timing-wheel horizon through here (thousands per read), so the time is read digit by
 * digit and the id sliced off, rather than splitting into an array of three new strings.
 */
export function parseDueKey(key: string): { slotMs: number; jobId: string } {
  let slotMs = 0;
  for (let i = 2; i < 17; i++) {
    const d = key.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return parseDueKeySlow(key);
    slotMs = slotMs * 10 + d;
  }
  if (key.charCodeAt(17) !== 0) return parseDueKeySlow(key);
  return { slotMs, jobId: key.slice(18) };
}

function parseDueKeySlow(key: string): { slotMs: number; jobId: string } {
  const parts = key.split(SEP);
  return { slotMs: Number(parts[1]), jobId: parts[2]! };
}

/** "<jobId>\0<slot:15>\0<suffix>": the run's position in history, shared by several indexes. */
export function runTail(p: ParsedRunId): string {
  return `${p.jobId}${SEP}${padTime(p.slotMs)}${SEP}${p.suffix}`;
}

/** Inverse of runTail: the run id. */
export function runIdOfTail(tail: string): string {
  const [jobId, slot, suffix] = tail.split(SEP);
  const id = `${jobId}@${Number(slot)}`;
  return suffix ? `${id}~${suffix}` : id;
}

export function runKey(p: ParsedRunId): string {
  return `r${SEP}${runTail(p)}`;
}

export const RUN_PREFIX = `r${SEP}`;

export function jobRunsPrefix(jobId: string): string {
  return `r${SEP}${jobId}${SEP}`;
}

/** The state key of the run stored under `runKeyStr` (a runKey): the same tail behind "s\0<state>\0". */
export function stateKeyOfRunKey(state: number, runKeyStr: string): string {
  return `s${SEP}${padState(state)}${SEP}${runKeyStr.slice(RUN_PREFIX.length)}`;
}

/** The run key a state key points at: "s\0<state:2>\0" is 5 characters, the rest is the run's tail. */
export function runKeyOfStateKey(stateKeyStr: string): string {
  return `${RUN_PREFIX}${stateKeyStr.slice(5)}`;
}

export function statePrefix(state: number): string {
  return `s${SEP}${padState(state)}${SEP}`;
}

/** The s\0 range of one state for one job: "s\0<state>\0<jobId>\0". */
export function jobStatePrefix(state: number, jobId: string): string {
  return `${statePrefix(state)}${jobId}${SEP}`;
}

export function createIdemKey(key: string): string {
  return `i${SEP}c${SEP}${key}`;
}

export function triggerIdemKey(jobId: string, key: string): string {
  return `i${SEP}t${SEP}${jobId}${SEP}${key}`;
}

export function expiryKey(expiresMs: number, idemRecordKey: string): string {
  return `x${SEP}${padTime(expiresMs)}${SEP}${idemRecordKey}`;
}
export const EXPIRY_PREFIX = `x${SEP}`;

/** The idempotency record key an expiry key points at. */
export function idemKeyOfExpiry(key: string): string {
  // "x\0<15>\0" is 19 characters long.
  return key.slice(2 + 15 + 1);
}

export const LIMITS_PREFIX = `y${SEP}`;
export const TASK_TYPE_PREFIX = `y${SEP}t${SEP}`;
export const JOB_LIMIT_PREFIX = `y${SEP}j${SEP}`;

export const TOKEN_PREFIX = `k${SEP}t${SEP}`;
export const TOKEN_BOOTSTRAP_KEY = `k${SEP}bootstrap`;
export const TOKEN_NAME_PREFIX = `n${SEP}`;

export function tokenKey(id: string): string {
  return `${TOKEN_PREFIX}${id}`;
}

export function tokenNameKey(name: string): string {
  return `${TOKEN_NAME_PREFIX}${name}`;
}

export function taskTypeKey(taskType: string): string {
  return `${TASK_TYPE_PREFIX}${taskType}`;
}

/** A job's max_concurrent, kept in the key itself (index keys have empty values). */
export function jobLimitKey(jobId: string, maxConcurrent: number): string {
  return `${JOB_LIMIT_PREFIX}${jobId}${SEP}${maxConcurrent}`;
}

/** Inverse of jobLimitKey. */
export function parseJobLimitKey(key: string): { jobId: string; maxConcurrent: number } {
  const rest = key.slice(JOB_LIMIT_PREFIX.length);
  const i = rest.indexOf(SEP);
  return { jobId: rest.slice(0, i), maxConcurrent: Number(rest.slice(i + 1)) };
}
