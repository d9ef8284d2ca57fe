// Read paths the server uses. All are range reads over an index, so their cost follows what they
// return (I6), never the number of jobs stored — except listJobs with filters, which scans job
// records under a per-page budget and hands back a page token where it stopped.
import { readMany, readOne } from '../store/store-reads.js';
import { Job, JobState } from '../../gen/herald/v1/job.js';
import { Run, RunState } from '../../gen/herald/v1/run.js';
import { HeraldError } from '../../herald-error.js';
import type { Db } from '../store/apply-txn.js';
import { decodeCount } from '../store/index-key-writes.js';
import {
  COUNTER_PREFIX,
  dueRange,
  trimDueRange,
  JOB_LIMIT_PREFIX,
  jobIdRange,
  jobKey,
  LIMITS_PREFIX,
  parseJobLimitKey,
  TASK_TYPE_PREFIX,
  taskTypeKey,
  TOKEN_PREFIX,
  tokenKey,
  jobRunsPrefix,
  parseDueKey,
  prefixEnd,
  RUN_PREFIX,
  runIdOfTail,
  runKey,
  runKeyOfStateKey,
  SEP,
  statePrefix,
} from '../store/key-layout.js';
import { decodeJobRecord, decodeRunRecord } from '../store/records.js';
import { decodeTaskTypeRecord } from '../commands/task-type-config.js';
import { decodeTokenRecord, isValidTokenId, type TokenRecord } from '../commands/token-record.js';
import type { TaskTypeConfig } from '../../gen/herald/v1/task_type_service.js';
import type { ReadyEntry, ReadyIndex } from '../store/ready-index.js';
import type { RecordCache } from '../store/record-cache.js';
import type { SpecCache } from '../commands/spec-cache.js';
import { parseRunId } from '../commands/run-id.js';
import { isValidId } from '../commands/validation.js';
import { decodeToken, encodeToken } from './page-token.js';
import { redriveCandidates, type RedriveCandidates, type RedriveQuery } from './redrive-candidates.js';
import { scanKeys } from '../store/key-scan.js';

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;
/** Job records a filtered listJobs page may examine before it returns (possibly short). */
export const LIST_JOBS_SCAN_BUDGET = 10_000;

export interface DueSlot {
  readonly jobId: string;
  readonly slotMs: number;
}

export interface ListJobsQuery {
  pageSize?: number;
  pageToken?: string;
  state?: JobState;
  labelSelector?: Readonly<Record<string, string>>;
  taskType?: string;
  /** Only ids starting with this: narrows the scan to that key range. */
  idPrefix?: string;
}

export interface ListRunsQuery {
  jobId?: string;
  state?: RunState;
  pageSize?: number;
  pageToken?: string;
}

export interface Page<T> {
  readonly items: T[];
  /** '' when there is nothing more. */
  readonly nextPageToken: string;
}

export interface ReadyQuery {
  readonly limit: number;
  /** Only these task types (merged in dispatch order); all when absent. */
  readonly taskTypes?: readonly string[];
  /** Only runs whose not-before is at or before this instant; all when absent. */
  readonly nowMs?: number;
}

function pageSizeOf(n: number | undefined): number {
  if (n === undefined || n === 0) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(n) || n < 1 || n > MAX_PAGE_SIZE) {
    throw new HeraldError('INVALID_ARGUMENT', `page_size: must be between 1 and ${MAX_PAGE_SIZE} (got ${n})`, { field: 'page_size' });
  }
  return n;
}

export class FsmReads {
  /**
   * `ready`: the in-memory ready index the state machine keeps (ready-index.ts); `records`: its
   * record cache, which always holds what the store holds (record-cache.ts); `specCache`: the
   * decoded specs its apply shares (spec-cache.ts), which the leader's fire scheduler also reads
   * job heads through (decodeJobHeads).
   */
  constructor(
    private readonly db: Db,
    protected readonly ready: ReadyIndex,
    private readonly records: RecordCache | undefined,
    readonly specCache: SpecCache,
  ) {}

  /** One task type's config (undefined: none, or not a valid name). */
  async getTaskType(taskType: string): Promise<TaskTypeConfig | undefined> {
    if (!isValidId(taskType)) return undefined;
    const v = readOne(this.db, taskTypeKey(taskType));
    return v === undefined ? undefined : decodeTaskTypeRecord(v);
  }

  /** Every task type config, by name (at most MAX_TASK_TYPE_CONFIGS exist). */
  /** A bearer token's record by id (undefined when absent: never created, or revoked). */
  async getToken(id: string): Promise<TokenRecord | undefined> {
    if (!isValidTokenId(id)) return undefined;
    const v = readOne(this.db, tokenKey(id));
    return v === undefined ? undefined : decodeTokenRecord(v);
  }

  /** Every token, by id (at most MAX_TOKENS). */
  async listTokens(): Promise<TokenRecord[]> {
    const values = await this.db.values({ gte: TOKEN_PREFIX, lt: prefixEnd(TOKEN_PREFIX) }).all();
    return values.map(decodeTokenRecord);
  }

  async listTaskTypes(): Promise<TaskTypeConfig[]> {
    const values = await this.db.values({ gte: TASK_TYPE_PREFIX, lt: prefixEnd(TASK_TYPE_PREFIX) }).all();
    return values.map(decodeTaskTypeRecord);
  }

  /**
   * Every limit the dispatcher enforces, in one short range read (y\0): task type configs and
   * the max_concurrent of every job that sets one (jobs without a limit have no key).
   */
  async limits(): Promise<{ taskTypes: TaskTypeConfig[]; jobs: Map<string, number> }> {
    const taskTypes: TaskTypeConfig[] = [];
    const jobs = new Map<string, number>();
    for await (const [k, v] of this.db.iterator({ gte: LIMITS_PREFIX, lt: prefixEnd(LIMITS_PREFIX) })) {
      if (k.startsWith(TASK_TYPE_PREFIX)) taskTypes.push(decodeTaskTypeRecord(v));
      else if (k.startsWith(JOB_LIMIT_PREFIX)) {
        const { jobId, maxConcurrent } = parseJobLimitKey(k);
        jobs.set(jobId, maxConcurrent);
      }
    }
    return { taskTypes, jobs };
  }

  async getJob(jobId: string): Promise<Job | undefined> {
    if (!isValidId(jobId)) return undefined;
    const v = readOne(this.db, jobKey(jobId));
    return v === undefined ? undefined : decodeJobRecord(v).job;
  }

  /**
   * Many jobs for the leader's dispatch rounds and sweeps (they touch thousands), read-only:
   * absent ones map to undefined. Records come from the record cache where it has them (a herd's
   * jobs were just fired there) and the rest from one getMany; specs are decoded through apply's
   * shared spec objects (specCache), so a job whose spec apply decoded costs no
   * protobuf decode. Callers must not mutate a returned spec (none does: they read the lease,
   * payload and deadlines).
   */
  async getJobs(jobIds: readonly string[]): Promise<Map<string, Job | undefined>> {
    const out = new Map<string, Job | undefined>();
    const missed: string[] = [];
    for (const id of jobIds) {
      if (out.has(id)) continue;
      if (!isValidId(id)) {
        out.set(id, undefined);
        continue;
      }
      const v = this.records?.peek(jobKey(id));
      if (v === undefined) {
        missed.push(id);
        out.set(id, undefined); // its place, until read (and a repeat of it is skipped)
      } else out.set(id, decodeJobRecord(v, this.specCache).job);
    }
    if (missed.length === 0) return out;
    const values = await readMany(this.db, missed.map(jobKey));
    for (let i = 0; i < missed.length; i++) {
      const v = values[i];
      out.set(missed[i]!, v === undefined ? undefined : decodeJobRecord(v, this.specCache).job);
    }
    return out;
  }

  async getRun(runId: string): Promise<Run | undefined> {
    const p = parseRunId(runId);
    if (!p) return undefined;
    const v = readOne(this.db, runKey(p));
    return v === undefined ? undefined : decodeRunRecord(v).run;
  }

  /** The job's fire cursor: the last slot handled and the next one due (0 = none). */
  async fireCursor(jobId: string): Promise<{ lastSlotMs: number; nextFireMs: number } | undefined> {
    const job = await this.getJob(jobId);
    return job && { lastSlotMs: job.lastSlotUnixMs, nextFireMs: job.nextFireUnixMs };
  }

  async listJobs(q: ListJobsQuery = {}): Promise<Page<Job>> {
    const size = pageSizeOf(q.pageSize);
    // Ids are keys in order, so a prefix is a range: the scan never leaves it.
    const range = jobIdRange(q.idPrefix ?? '');
    const after = q.pageToken ? decodeToken(q.pageToken, range.gte) : undefined;
    const selector = Object.entries(q.labelSelector ?? {});
    const items: Job[] = [];
    let scanned = 0;
    let lastKey = '';
    const it = this.db.iterator(after ? { gt: after, lt: range.lt } : range);
    try {
      for await (const [key, value] of it) {
        lastKey = key;
        scanned++;
        const job = decodeJobRecord(value).job;
        const ok =
          (!q.state || job.state === q.state) &&
          (!q.taskType || job.spec?.taskType === q.taskType) &&
          selector.every(([k, v]) => job.spec?.labels[k] === v);
        if (ok) items.push(job);
        if (items.length === size || scanned >= LIST_JOBS_SCAN_BUDGET) {
          return { items, nextPageToken: encodeToken(lastKey) };
        }
      }
    } finally {
      await it.close();
    }
    return { items, nextPageToken: '' };
  }

  /** Runs newest slot first (per job), optionally of one job and/or in one state. */
  async listRuns(q: ListRunsQuery = {}): Promise<Page<Run>> {
    const size = pageSizeOf(q.pageSize);
    if (q.jobId && !isValidId(q.jobId)) return { items: [], nextPageToken: '' };
    let prefix: string;
    if (q.state) prefix = q.jobId ? `${statePrefix(q.state)}${q.jobId}${SEP}` : statePrefix(q.state);
    else prefix = q.jobId ? jobRunsPrefix(q.jobId) : RUN_PREFIX;
    const before = q.pageToken ? decodeToken(q.pageToken, prefix) : prefixEnd(prefix);
    const keys = await scanKeys(this.db, { gte: prefix, lt: before, reverse: true, limit: size + 1 }).all();
    const more = keys.length > size;
    const page = keys.slice(0, size);
    const runKeys = q.state ? page.map(runKeyOfStateKey) : page;
    const values = await readMany(this.db, runKeys);
    const items = values.flatMap((v) => (v === undefined ? [] : [decodeRunRecord(v).run]));
    return { items, nextPageToken: more ? encodeToken(page[page.length - 1]!) : '' };
  }

  /** Runs a bulk re-drive picks (redrive-candidates.ts). */
  async redriveCandidates(q: RedriveQuery): Promise<RedriveCandidates> {
    return redriveCandidates(this.db, q);
  }

  /** (job, slot) pairs due in [fromMs, toMs), earliest first: a range read of the due index (I6). */
  async dueWindow(fromMs: number, toMs: number, limit: number): Promise<DueSlot[]> {
    const keys = await scanKeys(this.db, { ...dueRange(fromMs, toMs), limit }).all();
    return keys.map(parseDueKey);
  }

  /**
   * Jobs whose history is due for a trim at `nowMs` (the trim index, earliest due first), at most
   * `limit`, starting after the index key `afterKey` when given: the trimmer's round robin.
   * Returns the index keys; jobIdOfTrimKey gives each job.
   */
  async trimDueKeys(nowMs: number, limit: number, afterKey?: string): Promise<string[]> {
    const { gte, lt } = trimDueRange(nowMs);
    return this.db.keys(afterKey !== undefined && afterKey >= gte ? { gt: afterKey, lt, limit } : { gte, lt, limit }).all();
  }

  /** Task types with runs waiting for a worker, and how many (from the ready index in memory). */
  waitingByTaskType(): Map<string, number> {
    return this.ready.waitingByType();
  }

  /** Runs waiting for a worker: highest priority first, then earliest not-before. */
  async readyRuns(q: ReadyQuery): Promise<Run[]> {
    return this.runsById(this.readyEntries(q).map((e) => e.runId));
  }

  /**
   * The ready index itself, without reading any record: what the dispatcher plans with. Answered
   * from memory, so it reflects exactly the batches applied so far.
   */
  readyEntries(q: ReadyQuery): ReadyEntry[] {
    if (q.limit <= 0) return [];
    return this.ready.scan(q.limit, q.taskTypes, q.nowMs);
  }

  /**
   * RUNNING runs whose lease deadline (as stored) is before `beforeMs`, earliest first. Reads
   * every RUNNING run (no index by deadline is kept: the leader holds leases in memory), so it is
   * for tests and tools, not for a periodic path.
   */
  async expiringLeases(beforeMs: number, limit: number): Promise<Run[]> {
    const due = (await this.runningRuns()).filter((r) => r.leaseDeadlineUnixMs < beforeMs);
    due.sort((a, b) => a.leaseDeadlineUnixMs - b.leaseDeadlineUnixMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return due.slice(0, limit);
  }

  /**
   * RUNNING runs (a new leader adopts them with a grace period), by job and slot. `want`, when
   * given, picks runs by id from the state index before any record is read: the leader's orphan
   * sweep wants only the few its lease table lacks, out of every run in flight.
   */
  async runningRuns(limit = Number.MAX_SAFE_INTEGER, want?: (runId: string) => boolean): Promise<Run[]> {
    const prefix = statePrefix(RunState.RUN_STATE_RUNNING);
    const keys = await scanKeys(this.db, { gte: prefix, lt: prefixEnd(prefix), limit: Math.min(limit, 2 ** 31 - 1) }).all();
    const tails = keys.map((k) => k.slice(prefix.length));
    const wanted = want ? tails.filter((t) => want(runIdOfTail(t))) : tails;
    // Records are read after the index: a run that finished in between is no longer running (the
    // leader's orphan sweep adopted such runs — a lease, and a job read, for a finished run).
    return (await this.runsFromKeys(wanted.map((t) => `${RUN_PREFIX}${t}`))).filter((r) => r.state === RunState.RUN_STATE_RUNNING);
  }

  /**
   * Runs per state, for metrics (kept as counters by apply: O(states), not O(runs)). Every
   * state is present, zeros included, so a gauge falls back to 0 when its last run moves on.
   */
  async runCounts(): Promise<Map<RunState, number>> {
    const out = new Map<RunState, number>();
    for (let s = RunState.RUN_STATE_PENDING; s <= RunState.RUN_STATE_MISSED; s++) out.set(s, 0);
    for await (const [key, value] of this.db.iterator({ gte: COUNTER_PREFIX, lt: prefixEnd(COUNTER_PREFIX) })) {
      out.set(Number(key.slice(COUNTER_PREFIX.length)) as RunState, decodeCount(value));
    }
    return out;
  }

  private async runsFromKeys(runKeys: readonly string[]): Promise<Run[]> {
    const values = await readMany(this.db, runKeys as string[]);
    return values.flatMap((v) => (v === undefined ? [] : [decodeRunRecord(v).run]));
  }

  /** The runs that exist of `runIds`, in that order. */
  async getRuns(runIds: readonly string[]): Promise<Run[]> {
    return this.runsById(runIds);
  }

  private async runsById(runIds: readonly string[]): Promise<Run[]> {
    const parsed = runIds.map(parseRunId);
    const values = await readMany(this.db, parsed.map((p) => (p ? runKey(p) : `${RUN_PREFIX}`)));
    return values.flatMap((v) => (v === undefined ? [] : [decodeRunRecord(v).run]));
  }
}
