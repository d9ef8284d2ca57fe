// The write set of one apply call: reads see earlier writes of the same call (items of a batch
// and entries of one apply touch the same jobs), and everything — records, derived indexes,
// counters and the applied index — leaves in ONE LevelDB batch at commit. Nothing is written
// before commit, so a thrown error leaves the store untouched (no half-apply).
import type { ClassicLevel } from 'classic-level';
import { FsmDecodeError, type WriteBuffers } from '../commands/binary-codec.js';
import { counterKey, jobStatePrefix, jobKey, jobRunsPrefix, RUN_PREFIX, runIdOfTail, runKey, prefixEnd, META_FEATURE_LEVEL } from './key-layout.js';
import { decodeFeatureLevel } from '../commands/feature-levels.js';
import { trimDueAfterFinish } from './retention.js';
import {
  decodeJobRecord,
  ACTIVE_STATES,
  decodeRunRecord,
  encodeJobRecord,
  encodeRunRecord,
  isTerminal,
  jobIndexKeys,
  readyEntryOf,
  type JobRecord,
  type RunRecord,
} from './records.js';
import type { CacheUpdate, RecordCache } from './record-cache.js';
import { RunEvents } from './run-events.js';
import { readMany, readOne } from './store-reads.js';
import { jobIdOfRunKey, TerminalTally } from './terminal-tally.js';
import { noteRunChange, runEndedAtMs, type TallyChanges } from './ended-runs-tally.js';
import type { SpecCache } from '../commands/spec-cache.js';
import { ScheduleCaches } from '../schedule/schedule-caches.js';
import { sameReadyEntry, type ReadyEntry, type ReadyIndex } from './ready-index.js';
import { parseRunId, type ParsedRunId } from '../commands/run-id.js';
import { decodeCount, diffIndexKeys, diffRunIndex, encodeCount, keyOnlyValue, type BatchSink } from './index-key-writes.js';
import { scanKeys } from './key-scan.js';
import { untracked } from './untracked-keys.js';

export type Db = ClassicLevel<string, Uint8Array>;

const EMPTY = new Uint8Array();
const NO_KEYS: readonly string[] = [];

/**
 * What loadedJob / loadedRunAt answer for a record the transaction has not read yet. Commands
 * prefetch their records, so items usually find them loaded: reading them synchronously spares
 * each item the promises of an async read, which a herd allocates per run.
 */
export const NOT_READ: unique symbol = Symbol('not read');
export type NotRead = typeof NOT_READ;

interface Tracked<T> {
  /** Index keys of the stored version (empty when the record did not exist; runs: see originalState). */
  readonly originalIndex: readonly string[];
  /** Run state of the stored version, for the per-state counters (-1 when none / a job). */
  readonly originalState: number;
  /** When the stored version reached its state (runs only; ended-runs-tally.ts). */
  readonly originalEnded: number;
  /** The stored version's ready-index entry (runs only; undefined when not dispatchable). */
  readonly originalReady: ReadyEntry | undefined;
  value: T | undefined;
  dirty: boolean;
  /** Written by a command whose records the record cache should keep (see `admitting`). */
  admit: boolean;
  /** Runs: the state as last put (or as stored), so putRun sees each change of state once. */
  lastState: number;
}

/** A run id's parse and the key its record is stored under. */
export interface RunIdKey {
  readonly p: ParsedRunId;
  readonly key: string;
}

export class ApplyTxn {
  private readonly raw = new Map<string, Uint8Array | null>();
  /** The stored feature level once read (this transaction's writes go to `raw`). */
  private storedLevel: number | undefined;
  /** Raw values read ahead (prefetchRaw), not written: undefined = absent in the store. */
  private readonly rawRead = new Map<string, Uint8Array | undefined>();
  private readonly jobs = new Map<string, Tracked<JobRecord>>();
  private readonly runs = new Map<string, Tracked<RunRecord>>();
  /**
   * Run id -> its parse and run key (null: not a run id), for this transaction. A run command
   * looks its run up by id in the prefetch, the item, the read-back check and putRun: parsing the
   * id and building the key once, and using one flat key string, saves ~5 of each per run.
   */
  private readonly idKeys = new Map<string, RunIdKey | null>();
  /**
   * Tracked runs per job id, so per-job questions need not walk every tracked run. Built on the
   * first such question (cancel, trim, REPLACE): the run lifecycle never asks one.
   */
  private runsByJobIndex: Map<string, [string, Tracked<RunRecord>][]> | undefined;
  /**
   * Jobs whose terminal runs a trim of the current command counted (recountTerminal): the count
   * the job record gets when the command is folded is this base plus the rest of the command's
   * terminal delta of the job.
   */
  private terminalBase: Map<string, number> | undefined;

  /** Per-state run counts this transaction's batch sets (to update the caller's cache after the write). */
  readonly countsAfter = new Map<number, number>();

  /**
   * Records written while this is set may enter the record cache (the caller sets it per command:
   * the run lifecycle reads its records again soon, job edits and bulk creates do not).
   */
  admitting = false;
  /**
   * Jobs written with a next fire at or before this time may enter the record cache whatever the
   * command (a create, an edit, a resume): their fire reads them again within the horizon (0: none).
   */
  admitJobsDueBy = 0;
  private cacheUpdates: CacheUpdate[] = [];
  /** Runs that entered an alert state, for apply-command.ts to drain after each command. */
  readonly runEvents = new RunEvents();
  /** Terminal runs the current command added or removed, folded into job records after it (foldRetention). */
  readonly terminalTally = new TerminalTally();
  /**
   * Set by the caller when a node's run-count tally follows apply (run-counts.ts): writeBatch
   * appends each written run's change of counted state or end time here.
   */
  endedChanges: TallyChanges | undefined;
  /** Ready-index changes of the batch (writeBatch), published with publishReady once it is stored. */
  private readyChanges: { before: ReadyEntry | undefined; after: ReadyEntry | undefined }[] = [];

  /**
   * `counts`: the stored per-state run counts when the caller keeps them in memory (the state
   * machine does: it is their only writer), saving a read per touched state in every apply.
   * `specs`: the state machine's shared decoded specs (spec-cache.ts); without it each job
   * record read decodes its spec. `writeBuffers`: the state machine's, for the records and
   * entries this transaction encodes (binary-codec.ts). `schedule`: the state machine's parsed cron
 * expressions and zone rules (a transaction of its own caches when not given, as in tests).
   */
  constructor(
    private readonly db: Db,
    private readonly counts?: ReadonlyMap<number, number>,
    private readonly cache?: RecordCache,
    private readonly specs?: SpecCache,
    readonly writeBuffers?: WriteBuffers,
    readonly schedule: ScheduleCaches = new ScheduleCaches(),
  ) {}

  /** Record bytes from the cache, the rest with one getMany. */
  private async readRecords(keys: readonly string[]): Promise<(Uint8Array | undefined)[]> {
    const cache = this.cache;
    if (!cache) return readMany(this.db, keys);
    const out: (Uint8Array | undefined)[] = new Array(keys.length);
    const missed: number[] = [];
    for (let i = 0; i < keys.length; i++) {
      const v = cache.get(keys[i]!);
      if (v === undefined) missed.push(i);
      else out[i] = v;
    }
    if (missed.length > 0) {
      const values = await readMany(this.db, missed.map((i) => keys[i]!));
      for (let j = 0; j < missed.length; j++) out[missed[j]!] = values[j];
    }
    return out;
  }

  private async readRecord(key: string): Promise<Uint8Array | undefined> {
    return this.cache?.get(key) ?? readOne(this.db, key);
  }

  /** After the batch is in the store: the cache learns what it wrote. */
  publishToCache(): void {
    this.cache?.publish(this.cacheUpdates);
  }

  /** The ready-index changes of the batch writeBatch wrote (publishReady applies them). */
  get readyChangesOfBatch(): readonly { before: ReadyEntry | undefined; after: ReadyEntry | undefined }[] {
    return this.readyChanges;
  }

  /** After the batch is in the store: the ready index follows the runs it wrote. */
  publishReady(index: ReadyIndex): void {
    for (const { before, after } of this.readyChanges) {
      if (before) index.remove(before);
      if (after) index.add(after);
    }
  }

  // ---- raw keys (meta, idempotency) ----

  async getRaw(key: string): Promise<Uint8Array | undefined> {
    const v = this.raw.get(key);
    if (v !== undefined) return v ?? undefined;
    if (this.rawRead.has(key)) return this.rawRead.get(key);
    return readOne(this.db, key);
  }

  /** The raw value as this transaction has it (written or prefetched), without reading: NOT_READ if it has not. */
  loadedRaw(key: string): Uint8Array | undefined | NotRead {
    const v = this.raw.get(key);
    if (v !== undefined) return v ?? undefined;
    if (this.rawRead.has(key)) return this.rawRead.get(key);
    return NOT_READ;
  }

  /** Loads many raw keys with one getMany (idempotency records of a create batch). */
  async prefetchRaw(keys: readonly string[]): Promise<void> {
    const missing = [...new Set(keys)].filter((k) => !this.raw.has(k) && !this.rawRead.has(k));
    if (missing.length === 0) return;
    const values = await readMany(this.db, missing);
    missing.forEach((k, i) => this.rawRead.set(k, values[i]));
  }

  putRaw(key: string, value: Uint8Array = EMPTY): void {
    this.raw.set(key, value);
  }

  delRaw(key: string): void {
    this.raw.set(key, null);
  }

  /** The feature level as of this point of the call: an entry after a setFeatureLevel sees the new one, as applied alone. */
  async featureLevel(): Promise<number> {
    const written = this.raw.get(META_FEATURE_LEVEL);
    if (written !== undefined) return decodeFeatureLevel(written ?? undefined);
    this.storedLevel ??= decodeFeatureLevel(await this.getRaw(META_FEATURE_LEVEL));
    return this.storedLevel;
  }

  /** Raw keys in [gte, lt), merged with this transaction's raw writes, at most `limit`. */
  async rawKeys(gte: string, lt: string, limit: number): Promise<string[]> {
    const stored = await scanKeys(this.db, { gte, lt, limit: limit + this.raw.size }).all();
    const set = new Set(stored);
    for (const [k, v] of this.raw) {
      if (k >= gte && k < lt) {
        if (v === null) set.delete(k);
        else set.add(k);
      }
    }
    return [...set].sort().slice(0, limit);
  }

  // ---- jobs ----

  /** Loads many jobs with one getMany (fire batches touch thousands). */
  async prefetchJobs(jobIds: readonly string[]): Promise<void> {
    const missing = untracked(jobIds, this.jobs);
    if (missing.length === 0) return;
    const values = await this.readRecords(missing.map(jobKey));
    for (let i = 0; i < missing.length; i++) {
      try {
        this.trackJob(missing[i]!, values[i]);
      } catch {
        // A corrupt record: left untracked so the command that needs it fails on its own.
      }
    }
  }

  private trackJob(jobId: string, bytes: Uint8Array | undefined): Tracked<JobRecord> {
    const value = bytes === undefined ? undefined : decodeJobRecord(bytes, this.specs);
    const t: Tracked<JobRecord> = {
      originalIndex: value ? jobIndexKeys(value) : NO_KEYS,
      originalState: -1,
      originalEnded: 0,
      originalReady: undefined,
      value,
      dirty: false,
      admit: false,
      lastState: -1,
    };
    this.jobs.set(jobId, t);
    return t;
  }

  async getJob(jobId: string): Promise<JobRecord | undefined> {
    const t = this.jobs.get(jobId) ?? this.trackJob(jobId, await this.readRecord(jobKey(jobId)));
    return t.value;
  }

  /** The job as this transaction has it (read, prefetched or written), without reading: NOT_READ if it has not. */
  loadedJob(jobId: string): JobRecord | undefined | NotRead {
    const t = this.jobs.get(jobId);
    return t ? t.value : NOT_READ;
  }

  /** Stores (or replaces) a job. */
  putJob(rec: JobRecord): void {
    const t = this.jobs.get(rec.job.id);
    if (!t) throw new Error(`putJob before getJob: ${rec.job.id}`);
    t.value = rec;
    t.dirty = true;
    const next = rec.job.nextFireUnixMs;
    t.admit ||= this.admitting || (next > 0 && next <= this.admitJobsDueBy);
  }

  deleteJob(jobId: string): void {
    const t = this.jobs.get(jobId);
    if (!t) throw new Error(`deleteJob before getJob: ${jobId}`);
    t.value = undefined;
    t.dirty = true;
  }

  // ---- runs ----

  /** runKey(parseRunId(runId)), remembered for the transaction; undefined when it is not a run id. */
  runIdKey(runId: string): RunIdKey | undefined {
    let v = this.idKeys.get(runId);
    if (v === undefined) {
      const p = parseRunId(runId);
      v = p ? { p, key: runKey(p) } : null;
      this.idKeys.set(runId, v);
    }
    return v ?? undefined;
  }

  /** runIdKey for an id the caller just built from its parse `p` (a fire's slots): no parse needed. */
  knownRunIdKey(runId: string, p: ParsedRunId): RunIdKey {
    let v = this.idKeys.get(runId);
    if (!v) {
      v = { p, key: runKey(p) };
      this.idKeys.set(runId, v);
    }
    return v;
  }

  /** Loads many runs by key with one getMany (duplicates and tracked ones skipped). */
  async prefetchRunKeys(runKeys: readonly string[]): Promise<void> {
    const keys = untracked(runKeys, this.runs);
    if (keys.length === 0) return;
    const values = await this.readRecords(keys);
    for (let i = 0; i < keys.length; i++) {
      try {
        this.trackRun(keys[i]!, values[i]);
      } catch {
        // As for jobs: the command that needs it fails on its own.
      }
    }
  }

  private trackRun(key: string, bytes: Uint8Array | undefined): Tracked<RunRecord> {
    const value = bytes === undefined ? undefined : decodeRunRecord(bytes);
    // A record read back must carry an id this FSM could have made (new ones are built from one).
    if (value && !this.runIdKey(value.run.id)) throw new FsmDecodeError(`stored run has a bad id ${value.run.id}`);
    const t: Tracked<RunRecord> = {
      originalIndex: NO_KEYS, // a run's one index key follows from originalState (runIndexKey)
      originalState: value ? value.run.state : -1,
      originalEnded: value ? runEndedAtMs(value.run) : 0,
      originalReady: value ? readyEntryOf(value) : undefined,
      value,
      dirty: false,
      admit: false,
      lastState: value ? value.run.state : -1,
    };
    this.runs.set(key, t);
    if (this.runsByJobIndex) this.indexByJob(this.runsByJobIndex, key, t);
    return t;
  }

  private indexByJob(index: Map<string, [string, Tracked<RunRecord>][]>, key: string, t: Tracked<RunRecord>): void {
    // "r\0<jobId>\0...": the job id is the second component of the key.
    const jobId = key.slice(2, key.indexOf('\0', 2));
    const list = index.get(jobId);
    if (list) list.push([key, t]);
    else index.set(jobId, [[key, t]]);
  }

  private trackedRunsOf(jobId: string): readonly [string, Tracked<RunRecord>][] {
    if (!this.runsByJobIndex) {
      this.runsByJobIndex = new Map();
      for (const [key, t] of this.runs) this.indexByJob(this.runsByJobIndex, key, t);
    }
    return this.runsByJobIndex.get(jobId) ?? [];
  }

  async getRun(p: ParsedRunId): Promise<RunRecord | undefined> {
    return this.getRunAt(runKey(p));
  }

  /** The run stored under `key` (a runKey). */
  async getRunAt(key: string): Promise<RunRecord | undefined> {
    const t = this.runs.get(key) ?? this.trackRun(key, await this.readRecord(key));
    return t.value;
  }

  /** The run stored under `key` as this transaction has it, without reading: NOT_READ if it has not. */
  loadedRunAt(key: string): RunRecord | undefined | NotRead {
    const t = this.runs.get(key);
    return t ? t.value : NOT_READ;
  }

  /**
   * The caller knows that no run is stored under `key` (a runKey) without reading it: a scheduled
   * slot after its job's last handled one (apply-fire-runs.ts). A key the transaction already
   * tracks keeps what it has.
   */
  knownAbsentRun(key: string): void {
    if (!this.runs.has(key)) this.trackRun(key, undefined);
  }

  /** Stores a run; the caller has read it (or checked it is absent) with getRun first. */
  putRun(rec: RunRecord): void {
    const k = this.runIdKey(rec.run.id);
    if (!k) throw new Error(`bad run id ${rec.run.id}`);
    const t = this.runs.get(k.key);
    if (!t) throw new Error(`putRun before getRun: ${rec.run.id}`);
    t.value = rec;
    t.dirty = true;
    t.admit ||= this.admitting;
    // Every run transition is stored here, whichever command made it: alerts see them all.
    if (rec.run.state === t.lastState) return;
    this.terminalTally.changed(k.key, t.lastState, rec.run.state);
    this.runEvents.changed(rec, (t.lastState = rec.run.state));
  }

  deleteRun(p: ParsedRunId): void {
    const key = runKey(p);
    const t = this.runs.get(key);
    if (!t) throw new Error(`deleteRun before getRun`);
    this.terminalTally.changed(key, t.lastState, (t.lastState = -1));
    t.value = undefined;
    t.dirty = true;
  }

  /**
   * Ids of the job's runs not yet terminal, including this transaction's changes. Reads only the
   * job's own s\0 ranges of the non-terminal states and the runs this transaction touched.
   */
  async activeRunIdsOf(jobId: string): Promise<string[]> {
    const ids = new Set<string>();
    for (const state of ACTIVE_STATES) {
      const prefix = jobStatePrefix(state, jobId);
      for (const k of await scanKeys(this.db, { gte: prefix, lt: prefixEnd(prefix) }).all()) {
        // "s\0<state:2>\0" is 5 characters: the rest is the run's tail.
        ids.add(runIdOfTail(k.slice(5)));
      }
    }
    for (const [key, t] of this.trackedRunsOf(jobId)) {
      const before = t.originalState >= 0 && !isTerminal(t.originalState);
      const now = t.value !== undefined && !isTerminal(t.value.run.state);
      if (before === now) continue;
      const id = runIdOfTail(key.slice(RUN_PREFIX.length));
      if (now) ids.add(id);
      else ids.delete(id);
    }
    return [...ids].sort();
  }

  /**
   * A trim counted `count` terminal runs of the job as this transaction has them: the job record
   * takes that count (plus what the rest of the command changes) when the command is folded,
   * whatever it said before (a store derived at upgrade, or any drift, is corrected by the next trim).
   */
  recountTerminal(jobId: string, count: number): void {
    (this.terminalBase ??= new Map()).set(jobId, count - this.terminalTally.deltaOf(jobId));
  }

  /** The job's terminal runs as this transaction has them, without reading (undefined: job not read or absent). */
  terminalRunsOf(jobId: string): number | undefined {
    const rec = this.jobs.get(jobId)?.value;
    return rec && (this.terminalBase?.get(jobId) ?? rec.terminalRuns) + this.terminalTally.deltaOf(jobId);
  }

  /** Every run of a job (history, oldest slot first), including this transaction's changes. */
  async runsOfJob(jobId: string): Promise<RunRecord[]> {
    return this.runsAt(await this.runKeysOfJob(jobId));
  }

  /** Keys of a job's runs in history order, including this transaction's changes; no values are read. */
  async runKeysOfJob(jobId: string): Promise<string[]> {
    const prefix = jobRunsPrefix(jobId);
    const lt = prefixEnd(prefix);
    const keys = new Set(await scanKeys(this.db, { gte: prefix, lt }).all());
    for (const [k, t] of this.trackedRunsOf(jobId)) {
      if (k < prefix || k >= lt) continue;
      if (t.value === undefined) keys.delete(k);
      else keys.add(k);
    }
    return [...keys].sort();
  }

  /** The runs stored under these keys (now tracked, so they can be changed); absent keys are skipped. */
  async runsAt(keys: readonly string[]): Promise<RunRecord[]> {
    const missing = keys.filter((k) => !this.runs.has(k));
    if (missing.length) {
      const values = await this.readRecords(missing);
      missing.forEach((k, i) => this.trackRun(k, values[i]));
    }
    const out: RunRecord[] = [];
    for (const k of keys) {
      const v = this.runs.get(k)!.value;
      if (v) out.push(v);
    }
    return out;
  }

  // ---- commit ----

  /**
   * After each command (apply-command.ts; writeBatch folds what no command did): each job whose
   * terminal runs the command changed gets its count and trim due time (retention.ts), as a
   * commit of that command alone would give them, so the trim index never lags the runs and the
   * state does not depend on how entries are grouped into apply calls. Reads a job only when the
   * command did not (its runs ended without it, which the run lifecycle does not do).
   */
  async foldRetention(): Promise<void> {
    const tally = this.terminalTally;
    if (tally.empty && !this.terminalBase) return;
    const ids = new Set<string>(this.terminalBase?.keys());
    // Earliest finish, per job, among the runs that became terminal in the command and still are.
    let first: Map<string, number> | undefined;
    tally.changedRuns().forEach((wasTerminal, key) => {
      const jobId = jobIdOfRunKey(key);
      ids.add(jobId);
      const v = this.runs.get(key)!.value;
      if (wasTerminal || !v || !isTerminal(v.run.state)) return;
      const f = (first ??= new Map()).get(jobId);
      if (f === undefined || v.run.finishedUnixMs < f) first.set(jobId, v.run.finishedUnixMs);
    });
    for (const jobId of ids) {
      const rec = this.jobs.has(jobId) ? this.jobs.get(jobId)!.value : await this.getJob(jobId);
      if (!rec) continue;
      const t = this.jobs.get(jobId)!;
      const finished = first?.get(jobId);
      const count = Math.max(0, (this.terminalBase?.get(jobId) ?? rec.terminalRuns) + tally.deltaOf(jobId));
      if (count === rec.terminalRuns && finished === undefined) continue;
      rec.terminalRuns = count;
      if (count === 0) rec.trimDueMs = 0;
      else if (finished !== undefined) rec.trimDueMs = trimDueAfterFinish(rec, finished);
      t.dirty = true;
    }
    tally.clear();
    this.terminalBase = undefined;
  }

  /** Writes the batch into `out`: records, index diffs and counter deltas (the caller adds the applied index). */
  async writeBatch(out: BatchSink): Promise<void> {
    const cached: CacheUpdate[] = (this.cacheUpdates = []);
    const ready: { before: ReadyEntry | undefined; after: ReadyEntry | undefined }[] = (this.readyChanges = []);
    const readyDiff = (before: ReadyEntry | undefined, after: ReadyEntry | undefined): void => {
      if (!sameReadyEntry(before, after)) ready.push({ before, after });
    };
    // Runs changed outside a command (none today) still reach their jobs' retention state.
    await this.foldRetention();
    // One level for the whole call: apply never lets a call span a change of level.
    const keyOnly = keyOnlyValue(await this.featureLevel());
    // Maps walked with forEach: for-of built an entry array and an iterator result per record.
    const counterDelta = new Map<number, number>();
    const bump = (state: number, d: number): void => {
      if (state >= 0) counterDelta.set(state, (counterDelta.get(state) ?? 0) + d);
    };
    const ended = this.endedChanges;
    this.runs.forEach((t, key) => {
      if (!t.dirty) return;
      if (ended) noteRunChange(ended, t.originalState, t.originalEnded, t.value ? t.value.run.state : -1, t.value ? runEndedAtMs(t.value.run) : 0);
      bump(t.originalState, -1);
      if (t.value) {
        const value = encodeRunRecord(t.value, this.writeBuffers);
        out.put(key, value);
        // A finished run is not read again soon: dropped from the cache rather than kept.
        cached.push({ key, value: isTerminal(t.value.run.state) ? null : value, admit: t.admit });
        diffRunIndex(out, key, t.originalState, t.value.run.state, keyOnly);
        readyDiff(t.originalReady, readyEntryOf(t.value));
        bump(t.value.run.state, 1);
      } else {
        out.del(key);
        cached.push({ key, value: null, admit: false });
        diffRunIndex(out, key, t.originalState, -1, keyOnly);
        readyDiff(t.originalReady, undefined);
      }
    });
    this.jobs.forEach((t, id) => {
      if (!t.dirty) return;
      const key = jobKey(id);
      const index = t.value ? jobIndexKeys(t.value) : NO_KEYS;
      if (t.value) {
        const value = encodeJobRecord(t.value, this.writeBuffers);
        out.put(key, value);
        cached.push({ key, value, admit: t.admit });
      } else {
        out.del(key);
        cached.push({ key, value: null, admit: false });
      }
      diffIndexKeys(out, t.originalIndex, index, keyOnly);
    });
    for (const [state, d] of [...counterDelta].sort((a, b) => a[0] - b[0])) {
      if (d === 0) continue;
      const k = counterKey(state);
      const next = (this.counts ? (this.counts.get(state) ?? 0) : decodeCount(await this.getRaw(k))) + d;
      this.countsAfter.set(state, next);
      // A zero count is stored as no key, so the bytes do not depend on how entries were split
      // into apply calls (+1 then −1 in two calls must equal nothing in one).
      this.raw.set(k, next === 0 ? null : encodeCount(next));
    }
    this.raw.forEach((v, key) => {
      if (v === null) out.del(key);
      else out.put(key, v.length === 0 ? keyOnly : v);
    });
  }
}
