// The scheduler state machine: Herald's replicated state in LevelDB, driven by the Raft runtime
// through the StateMachine contract (src/raft/state-machine.ts).
//
// apply: every entry of one call is applied into one transaction and written — with the new
// applied index — in ONE LevelDB batch, so a crash leaves either all of the call or none of it.
// Time comes only from commands (I5). A command of an obsolete tag, or whose handler throws a
// deterministic rejection (item-errors.ts rejectionOf: bad input, not found, conflicts), gets a
// 'rejected' result and changes nothing; the other entries of the call still apply. Anything else
// thrown — an I/O error, a corrupt record, a bug — may happen on this replica only, so it is never
// a result: apply throws, nothing of the call is written, and the runtime stops the node (a
// restart applies again from the applied index in the store). An entry this build cannot decode
// (a newer format, a feature level above SUPPORTED_FEATURE_LEVEL: feature-levels.ts) is never a
// result either: replicas of a newer build understand it, so a 'rejected' here would diverge.
// Apply throws FsmUnsupportedError before writing anything of the call, and the node stops
// applying until it runs a build that understands the entry. Reads are served straight from
// LevelDB (see fsm-reads.ts).
import type { SnapshotMeta, Entry } from '../../raft/types.js';
import { levelMemoryBytes } from '../../raft/storage/level-memory.js';
import type { EffectsOutcome, EffectsReplication, ResultsEvaluated, ResultWanted, SnapshotSource, StateMachine } from '../../raft/state-machine.js';
import { HeraldError } from '../../herald-error.js';
import { applyCommand, type ApplyOptions } from '../apply/apply-command.js';
import { putJobIdemKeys } from '../apply/apply-put-jobs.js';
import { EffectsRecorder, readApplyEffects, readEffectsRange } from './effects-codec.js';
import { ApplyTxn, type Db } from '../store/apply-txn.js';
import { FsmDecodeError, WriteBuffers } from '../commands/binary-codec.js';
import { decodeFeatureLevel, FEATURE_LEVEL, FsmUnsupportedError, SUPPORTED_FEATURE_LEVEL } from '../commands/feature-levels.js';
import { FsmReads } from './fsm-reads.js';
import { decodeEntries, levelChangeCut, type DecodedEntry } from './entry-decoding.js';
import { META_APPLIED, META_COMMAND_TIME, META_FEATURE_LEVEL } from '../store/key-layout.js';
import { ReadyIndex } from '../store/ready-index.js';
import { encodeResult } from '../commands/result-codec.js';
import type { FsmResult, ItemError } from '../commands/results.js';
import type { FsmCommand } from '../commands/commands.js';
import { DirectBatch } from '../store/direct-batch.js';
import { DEFAULT_TOMBSTONE_THRESHOLD, TombstoneCompactor } from '../store/tombstone-compactor.js';
import { WrittenKeys } from '../store/written-keys.js';
import { DEFAULT_RECORD_CACHE_BYTES, RecordCache } from '../store/record-cache.js';
import { SpecCache } from '../commands/spec-cache.js';
import { ScheduleCaches } from '../schedule/schedule-caches.js';
import { itemError, rejectionOf } from '../apply/item-errors.js';
import { checkUnsafeSwitches, type UnsafeSwitches } from '../apply/unsafe-switches.js';
import { DEFAULT_MAX_PAYLOAD_BYTES, isValidId } from '../commands/validation.js';
import { decodeCommandTime, loadCounts, openStore, prepareStore, readAppliedIndex, readCommandTime, rebuildReadyIndex, restoreInterrupted } from './open-machine.js';
import { MAX_TIME_MS } from '../commands/validation.js';
import { markRestoring, stateHash, storeSnapshot, writeSnapshot } from './machine-snapshot.js';
import { ChangeCollector, effectsCollector, type StoreChangeListener } from './store-changes.js';
import { EffectsRunChanges, RunCounts } from './run-counts.js';
import type { RunCountsAnswer, TallyChanges } from '../store/ended-runs-tally.js';

const UNWANTED = new Uint8Array(0);

export interface SchedulerFsmOptions {
  /**
   * Largest job payload accepted (default 256 KiB). Apply enforces it too, so every node of a
   * cluster must run with the same value (it is part of the deterministic apply function).
   */
  readonly maxPayloadBytes?: number;
  /** Target size of one snapshot chunk (default 1 MiB). */
  readonly snapshotChunkBytes?: number;
  /** Negative controls for the chaos suite only (unsafe-switches.ts); refused without the env opt-in. */
  readonly unsafe?: UnsafeSwitches;
  /** Budget of the record cache in bytes (record-cache.ts; default 48 MiB, 0 = none). */
  readonly recordCacheBytes?: number;
  /** LevelDB memtable size (default 16 MiB). */
  readonly writeBufferBytes?: number;
  /** Deletes in one index range before it is compacted (tombstone-compactor.ts; default 100,000). */
  readonly tombstoneThreshold?: number;
  /**
   * Tests only: the highest feature level this machine applies (default SUPPORTED_FEATURE_LEVEL);
   * a lower one plays an older build, which stops at the first entry above it.
   */
  readonly supportedFeatureLevel?: number;
}

/**
 * A job written (created, edited, resumed) whose next fire is this close enters the record cache,
 * so its fire does not read it back from LevelDB (a herd's creates, a minutely cron's edit). Jobs
 * due later do not: a store of a million jobs spread over a day admits a few hundred at a time.
 */
const ADMIT_JOBS_DUE_WITHIN_MS = 5 * 60_000;

/** Commands whose records are read again soon: the run lifecycle (a fired run is claimed, then finished). */
const ADMITTING: ReadonlySet<FsmCommand['type']> = new Set<FsmCommand['type']>([
  'fireRuns',
  'claimRuns',
  'finishRuns',
  'expireLeases',
  'triggerJob',
]);

const enc = new TextEncoder();


const APPLIED_KEY_BYTES = enc.encode(META_APPLIED);
const FEATURE_LEVEL_KEY_BYTES = enc.encode(META_FEATURE_LEVEL);
const COMMAND_TIME_KEY_BYTES = enc.encode(META_COMMAND_TIME);

/** Whether an effects key (its UTF-8 bytes) is the meta key whose bytes are `meta`. */
function isKey(key: Uint8Array, meta: Uint8Array): boolean {
  return key.length === meta.length && Buffer.compare(key, meta) === 0;
}

/**
 * The apply entry points and the lock that orders them; opening and snapshots live beside it
 * (open-machine.ts, machine-snapshot.ts). The read methods are inherited from FsmReads because
 * the server calls them on the machine itself.
 */
export class SchedulerStateMachine extends FsmReads implements StateMachine {
  private applied = 0;
  /** Stored per-state run counts (c\0 keys), mirrored here: apply is their only writer. */
  private readonly counts = new Map<number, number>();
  /** Serialises apply / restore / close; reads do not wait. */
  private lock: Promise<unknown> = Promise.resolve();
  /** Bytes of live job and run records, for apply's reads (undefined when disabled). */
  readonly recordCache: RecordCache | undefined;
  /**
   * What mirrors the store in memory (applied index, counts, ready index, record cache) may no
   * longer match it (a batch write failed with an unknown outcome, a restore broke off): read
   * again from the store before anything else is applied (resync).
   */
  private stale = false;
  /** Apply's encoding scratch and result slabs (binary-codec.ts), this machine's own. */
  private readonly writeBuffers = new WriteBuffers();
  /** Told of every apply's record writes (watch streams); undefined: nobody watches. */
  private changes: StoreChangeListener | undefined;
  /** Apply's parsed cron expressions and zone rules, this machine's own. */
  private readonly scheduleCaches = new ScheduleCaches();
  /** The stored cluster feature level, mirrored (read again after whatever may change it). */
  private level: number = FEATURE_LEVEL.BASE;
  /** Bumped when the stored dispatch limits may have changed (see limitsVersion). */
  private limitsVersionValue = 0;
  /** Runs per counted state by when they reached it, once someone asks (run-counts.ts). */
  private readonly endedCounts: RunCounts;
  /** The stored highest command time (META_COMMAND_TIME), mirrored. */
  private commandTime = 0;
  /** Compacts index ranges that deletes filled with tombstones (physical only: never replicated). */
  private readonly tombstones: TombstoneCompactor;

  private constructor(
    private readonly store: Db,
    private readonly opts: ApplyOptions & { readonly snapshotChunkBytes: number; readonly supportedFeatureLevel: number },
    recordCacheBytes: number,
    tombstoneThreshold: number,
  ) {
    const cache = recordCacheBytes > 0 ? new RecordCache(recordCacheBytes) : undefined;
    super(store, new ReadyIndex(), cache, new SpecCache());
    this.recordCache = cache;
    this.tombstones = new TombstoneCompactor(store, tombstoneThreshold);
    this.endedCounts = new RunCounts(store, (fn) => this.exclusive(fn));
  }

  /** The negative controls this machine applies with; the leader's services obey the same ones. */
  get unsafe(): Required<UnsafeSwitches> {
    return this.opts.unsafe;
  }

  static async open(dir: string, options: SchedulerFsmOptions = {}): Promise<SchedulerStateMachine> {
    const { db, applied } = await openStore(dir, options.writeBufferBytes);
    return SchedulerStateMachine.build(db, applied, options);
  }

  /**
   * The machine on a store that is already open (the scheduler simulator's in-memory store,
   * store/memory-db.ts): readied for apply exactly as `open` readies its LevelDB.
   */
  static async openOn(store: Db, options: SchedulerFsmOptions = {}): Promise<SchedulerStateMachine> {
    const { db, applied } = await prepareStore(store, 'the given store');
    return SchedulerStateMachine.build(db, applied, options);
  }

  private static async build(db: Db, applied: number, options: SchedulerFsmOptions): Promise<SchedulerStateMachine> {
    const opts = {
      maxPayloadBytes: options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
      snapshotChunkBytes: options.snapshotChunkBytes ?? 1 << 20,
      unsafe: checkUnsafeSwitches(options.unsafe),
      supportedFeatureLevel: Math.min(options.supportedFeatureLevel ?? SUPPORTED_FEATURE_LEVEL, SUPPORTED_FEATURE_LEVEL),
    };
    const fsm = new SchedulerStateMachine(db, opts, options.recordCacheBytes ?? DEFAULT_RECORD_CACHE_BYTES, options.tombstoneThreshold ?? DEFAULT_TOMBSTONE_THRESHOLD);
    fsm.applied = applied;
    try {
      fsm.level = await fsm.featureLevel();
      fsm.commandTime = await readCommandTime(db);
      await loadCounts(db, fsm.counts);
      await fsm.rebuildReady();
    } catch (e) {
      await db.close();
      throw e;
    }
    return fsm;
  }

  private async rebuildReady(): Promise<void> {
    await rebuildReadyIndex(this.store, this.ready);
  }

  /** Reads everything that mirrors the store again from it (see `stale`). */
  private async resync(): Promise<void> {
    if (await restoreInterrupted(this.store)) throw new HeraldError('CORRUPT_STORAGE', 'a snapshot restore broke off: the store must be opened again');
    this.recordCache?.clear();
    this.endedCounts.reset();
    this.limitsVersionValue++;
    this.level = await this.featureLevel();
    this.commandTime = await readCommandTime(this.store);
    this.applied = await readAppliedIndex(this.store);
    await loadCounts(this.store, this.counts);
    await this.rebuildReady();
    this.stale = false;
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(fn, fn);
    this.lock = run.catch(() => undefined);
    return run;
  }

  /**
   * Sets (or with undefined, removes) the listener told of the run and job records each apply
   * call writes, after they are in the store (store-changes.ts).
   */
  setChangeListener(listener: StoreChangeListener | undefined): void {
    this.changes = listener;
  }

  /**
   * The highest time stamp (nowMs) of the commands applied here. Once a new leader's state
   * machine holds every entry of earlier terms, its cluster time starts no lower than this
   * (node/leader-time-floor.ts), so command times never decrease in log order across leaders.
   */
  get highestCommandTimeMs(): number {
    return this.commandTime;
  }

  apply(entries: readonly Entry[], wanted?: ResultWanted, evaluated?: ResultsEvaluated): Promise<Uint8Array[]> {
    return this.exclusive(() => this.applyLocked(entries, wanted, undefined, evaluated));
  }

  /** Effects replication for the Raft driver (state-machine.ts EffectsReplication). */
  readonly effects: EffectsReplication = {
    applyCapturing: (entries, wanted, evaluated) => this.applyCapturing(entries, wanted, evaluated),
    applyEffects: (effects) => this.applyEffects(effects),
    effectsRange: (effects) => readEffectsRange(effects),
  };

  /**
   * apply, also returning the call's effects (effects-codec.ts): what another replica at
   * the same applied index can write with applyEffects instead of evaluating these entries.
   * undefined when the call changed nothing but the applied index.
   */
  applyCapturing(entries: readonly Entry[], wanted?: ResultWanted, evaluated?: ResultsEvaluated): Promise<{ results: Uint8Array[]; effects: Uint8Array | undefined }> {
    return this.exclusive(async () => {
      const capture: { effects?: Uint8Array } = {};
      const results = await this.applyLocked(entries, wanted, capture, evaluated);
      return { results, effects: capture.effects };
    });
  }

  /**
   * Writes the effects another replica's applyCapturing produced, instead of evaluating the
   * entries they cover. 'applied' when they fitted (this store had applied exactly their start);
   * 'stale' when this store is already at or past their end (nothing done); 'gap' when it is
   * between or before (nothing done: the caller evaluates the entries itself); 'malformed' for
   * bytes that do not decode (nothing written: the caller evaluates). A store error throws.
   */
  applyEffects(bytes: Uint8Array): Promise<EffectsOutcome> {
    return this.exclusive(async () => {
      if (this.stale) await this.resync();
      await this.checkStoredLevel();
      let range: { fromApplied: number; toApplied: number };
      try {
        range = readEffectsRange(bytes);
      } catch (e) {
        if (e instanceof FsmDecodeError) return 'malformed';
        throw e;
      }
      if (range.toApplied <= this.applied) return 'stale';
      if (range.fromApplied !== this.applied) return 'gap';
      const written = new WrittenKeys(this.tombstones);
      const batch = new DirectBatch(this.store, written);
      const collector = this.changes ? effectsCollector(this.changes) : undefined;
      const counting = this.endedCounts.following ? new EffectsRunChanges() : undefined;
      let fx: ReturnType<typeof readApplyEffects>;
      let commandTime: number | undefined;
      let levelWritten = false;
      try {
        fx = readApplyEffects(bytes, (key, value) => {
          if (isKey(key, APPLIED_KEY_BYTES)) throw new FsmDecodeError('apply effects write the applied index themselves');
          if (isKey(key, COMMAND_TIME_KEY_BYTES) && value !== null) commandTime = decodeCommandTime(value);
          if (isKey(key, FEATURE_LEVEL_KEY_BYTES)) levelWritten = true;
          // A raise above this build: the entries are evaluated instead, and the setFeatureLevel
          // entry among them stops apply with the operator's message.
          if (isKey(key, FEATURE_LEVEL_KEY_BYTES) && value !== null && decodeFeatureLevel(value) > this.opts.supportedFeatureLevel) {
            throw new FsmDecodeError('apply effects raise the feature level above this build');
          }
          if (value === null) batch.delKeyBytes(key);
          else batch.putKeyBytes(key, value);
          collector?.effect(key, value);
          counting?.op(key, value);
        });
      } catch (e) {
        await batch.close();
        collector?.finish(undefined);
        // Bytes from a peer, checked before anything is written: a bad one is evaluated instead.
        if (e instanceof FsmDecodeError || e instanceof TypeError) return 'malformed';
        throw e;
      }
      let counted: TallyChanges | undefined;
      try {
        // Read before the batch is written: runs that left a counted state say when they reached it.
        counted = counting ? await counting.changes(this.store) : undefined;
      } catch {
        // A derived count never fails apply: dropped, the next CountRuns seeds it again.
        this.endedCounts.reset();
      }
      try {
        await this.writeApplied(batch, fx.toApplied);
      } catch (e) {
        collector?.finish(undefined);
        throw e;
      }
      if (counted) this.endedCounts.written(counted);
      // The cache may hold older bytes of keys just written. A replica writing effects reads
      // almost nothing back (it evaluates only the entries it got no effects for), so it is
      // emptied rather than checked key by key (which took a string per key).
      this.recordCache?.clear();
      this.tombstones.maybeCompact();
      // Read back only when these effects wrote it (a get per apply cost a follower a pool round trip).
      if (levelWritten) this.level = await this.featureLevel().catch(() => this.level);
      if (written.limits) this.limitsVersionValue++;
      for (const { before, after } of fx.ready) {
        if (before) this.ready.remove(before);
        if (after) this.ready.add(after);
      }
      for (const [state, n] of fx.counts) this.counts.set(state, n);
      if (commandTime !== undefined) this.commandTime = commandTime;
      this.applied = fx.toApplied;
      collector?.finish(fx.toApplied);
      return 'applied';
    });
  }

  /** Writes an apply's batch with the applied index it reaches. */
  private async writeApplied(batch: DirectBatch, applied: number): Promise<void> {
    batch.putPublic(META_APPLIED, enc.encode(String(applied)));
    try {
      await batch.write();
    } catch (e) {
      // What the store holds now is unknown (the batch may be in it or not): what mirrors it in
      // memory is read again from it — now, or before the next apply if that fails too. The error
      // goes on to the runtime, which stops the node.
      this.stale = true;
      await this.resync().catch(() => undefined);
      throw e;
    }
  }

  /** The store's own estimate of the memory it holds (level-memory.ts). */
  storeMemoryBytes(): number {
    return levelMemoryBytes(this.store);
  }

  /** The cluster feature level (feature-levels.ts) in the store: 1 when it was never raised. */
  async featureLevel(): Promise<number> {
    return decodeFeatureLevel(await this.store.get(META_FEATURE_LEVEL));
  }

  /**
   * Moves whenever this replica's dispatch limits may have changed (an apply wrote or deleted a
   * y\0 key, a snapshot was installed): the leader reads the limits again only then.
   */
  get limitsVersion(): number {
    return this.limitsVersionValue;
  }

  /** The cluster feature level as this replica applied it (sync: the leader's job service asks per write). */
  get appliedFeatureLevel(): number {
    return this.level;
  }

  /**
   * A store whose cluster level is above what this build supports (a downgrade after the level
   * was raised, a snapshot from such a cluster) is not applied to: the entries after it may be of
   * that level.
   */
  private async checkStoredLevel(): Promise<void> {
    const level = this.level;
    const supported = this.opts.supportedFeatureLevel;
    if (level > supported) {
      throw new FsmUnsupportedError(level, `the cluster feature level is ${level} (applied index ${this.applied}); this node supports ${supported}: upgrade this node`);
    }
  }

  private async applyLocked(
    entries: readonly Entry[],
    wanted: ResultWanted | undefined,
    capture: { effects?: Uint8Array } | undefined,
    evaluated?: ResultsEvaluated,
  ): Promise<Uint8Array[]> {
    if (this.stale) await this.resync();
    await this.checkStoredLevel();
    const decoded = decodeEntries(entries, this.applied, this.opts.supportedFeatureLevel);
    // A level entry after the first starts a call of its own (entry-decoding.ts says why); that
    // rare call captures no effects (the other replicas evaluate the entries, split the same way)
    // and answers no proposal early.
    const cut = levelChangeCut(decoded);
    if (cut > 0) {
      const head = await this.applyDecoded(entries.slice(0, cut), decoded.slice(0, cut), wanted, undefined, undefined);
      return [...head, ...(await this.applyLocked(entries.slice(cut), wanted, undefined))];
    }
    return this.applyDecoded(entries, decoded, wanted, capture, evaluated);
  }

  private async applyDecoded(
    entries: readonly Entry[],
    decoded: readonly DecodedEntry[],
    wanted: ResultWanted | undefined,
    capture: { effects?: Uint8Array } | undefined,
    evaluated: ResultsEvaluated | undefined,
  ): Promise<Uint8Array[]> {
    // Entries whose handler threw a deterministic rejection midway are re-run as 'rejected' from
    // a fresh transaction, so they never leave half of their changes behind.
    const rejected = new Map<number, ItemError>();
    // One getMany for the jobs of job-level commands (bulk creates arrive as many entries).
    const jobIds = decoded.flatMap((c) => (c && 'jobId' in c && isValidId(c.jobId) ? [c.jobId] : []));
    for (;;) {
      const txn = new ApplyTxn(this.store, this.counts, this.recordCache, this.specCache, this.writeBuffers, this.scheduleCaches);
      await Promise.all([txn.prefetchJobs(jobIds), txn.prefetchRaw(putJobIdemKeys(decoded))]);
      // Encoded as each entry completes: results hold live records (a claimed run, say) that a
      // later entry of the same call may change again.
      const results: Uint8Array[] = [];
      // Results nobody waits for (most of a follower's) are not encoded at all.
      let want = true;
      const push = (r: FsmResult): void => void results.push(want ? encodeResult(r, this.writeBuffers) : UNWANTED);
      let last = this.applied;
      let failedAt = -1;
      let commandTime = this.commandTime;
      for (let i = 0; i < entries.length; i++) {
        const entry = entries[i]!;
        want = wanted === undefined || wanted(entry.index);
        if (entry.index <= last) {
          push({ type: 'empty' }); // already applied (replay after restart)
          continue;
        }
        last = entry.index;
        const cmd = decoded[i];
        if (cmd === undefined) {
          push({ type: 'empty' });
          continue;
        }
        // Every decoded command's stamp counts, whatever its result (a rejected one was stamped too).
        if (!('undecodable' in cmd) && Number.isSafeInteger(cmd.nowMs) && cmd.nowMs > commandTime && cmd.nowMs <= MAX_TIME_MS) commandTime = cmd.nowMs;
        if ('undecodable' in cmd) {
          push({ type: 'rejected', error: itemError('INVALID_ARGUMENT', `undecodable command: ${cmd.undecodable}`) });
          continue;
        }
        const rejection = rejected.get(i);
        if (rejection !== undefined) {
          push({ type: 'rejected', error: rejection });
          continue;
        }
        try {
          txn.admitting = ADMITTING.has(cmd.type);
          txn.admitJobsDueBy = cmd.nowMs + ADMIT_JOBS_DUE_WITHIN_MS;
          push(await applyCommand(txn, cmd, entry.index, this.opts));
        } catch (e) {
          // Not a rejection (an I/O error, a corrupt record, a bug): the whole call fails,
          // nothing of it written, and the node stops applying.
          const rejection = rejectionOf(e);
          if (rejection === undefined) throw e;
          rejected.set(i, rejection);
          failedAt = i;
          break;
        }
      }
      if (failedAt >= 0) continue;
      if (last === this.applied) return results;
      // The results are final (encoded as each entry completed); what follows only writes them.
      evaluated?.(results);
      if (commandTime > this.commandTime) txn.putRaw(META_COMMAND_TIME, enc.encode(String(commandTime)));
      const written = new WrittenKeys(this.tombstones);
      const batch = new DirectBatch(this.store, written);
      if (this.endedCounts.following) txn.endedChanges = [];
      const recorder = capture ? new EffectsRecorder(batch, this.writeBuffers) : undefined;
      const collector = this.changes ? new ChangeCollector(this.changes, recorder ?? batch) : undefined;
      try {
        await txn.writeBatch(collector ?? recorder ?? batch);
      } catch (e) {
        await batch.close();
        collector?.finish(undefined);
        throw e;
      }
      try {
        await this.writeApplied(batch, last);
      } catch (e) {
        collector?.finish(undefined);
        throw e;
      }
      // A call that changed nothing but the applied index (no-op entries) has no effects worth
      // sending: the follower evaluates such entries as cheaply as it would write them.
      if (capture && recorder && (recorder.size > 0 || txn.countsAfter.size > 0 || txn.readyChangesOfBatch.length > 0)) {
        capture.effects = recorder.finish(this.applied, last, txn.readyChangesOfBatch, txn.countsAfter);
      }
      if (written.limits) this.limitsVersionValue++;
      this.tombstones.maybeCompact();
      txn.publishToCache();
      txn.publishReady(this.ready);
      if (txn.endedChanges) this.endedCounts.written(txn.endedChanges);
      if (decoded.some((c) => c !== undefined && 'type' in c && c.type === 'setFeatureLevel')) this.level = await this.featureLevel().catch(() => this.level);
      this.applied = last;
      this.commandTime = commandTime;
      for (const [state, n] of txn.countsAfter) this.counts.set(state, n);
      collector?.finish(last);
      return results;
    }
  }

  /**
   * Stored runs per counted state (FAILED and the terminal ones) that reached it at or after
   * `sinceMs`, by minute, over the last 24 hours (ended-runs-tally.ts). The first call on a node
   * scans its run records once.
   */
  countRuns(sinceMs: number): Promise<RunCountsAnswer> {
    return this.endedCounts.count(sinceMs);
  }

  async appliedIndex(): Promise<number> {
    return this.applied;
  }

  snapshot(): Promise<SnapshotSource> {
    // Under the apply lock, so the snapshot's view and `applied` match.
    return this.exclusive(async () => {
      if (this.stale) await this.resync();
      return storeSnapshot(this.store, this.applied, this.opts.snapshotChunkBytes);
    });
  }

  restore(meta: SnapshotMeta, chunks: AsyncIterable<Uint8Array>): Promise<void> {
    return this.exclusive(async () => {
      await markRestoring(this.store, meta);
      this.applied = 0;
      this.recordCache?.clear();
      this.ready.clear();
      this.counts.clear(); // matches the store being cleared until the restore completes
      this.endedCounts.reset();
      this.limitsVersionValue++;
      this.tombstones.reset();
      // Until the restore completes, a throw below leaves a store that must be read again.
      this.stale = true;
      await writeSnapshot(this.store, meta, chunks);
      this.level = await this.featureLevel();
      this.commandTime = await readCommandTime(this.store);
      this.applied = meta.index;
      await loadCounts(this.store, this.counts);
      await this.rebuildReady();
      this.stale = false;
      try {
        this.changes?.reset(meta.index);
      } catch {
        // As in ChangeCollector.finish: the listener's bug never fails apply.
      }
    });
  }

  sync(): Promise<void> {
    return this.exclusive(async () => {
      // Never an applied index older than the store's (it would re-apply what the store holds).
      if (this.stale) await this.resync();
      // One synced write flushes LevelDB's write-ahead log, making every earlier batch durable.
      await this.store.put(META_APPLIED, enc.encode(String(this.applied)), { sync: true });
    });
  }

  /**
   * Compacts the whole LevelDB key range (maintenance and benchmarks: measures a settled LSM
   * tree instead of one still digesting a bulk load). Not part of the Raft contract.
   */
  compact(): Promise<void> {
    return this.store.compactRange('\0', '\x7f');
  }

  /** A hash of the whole store, for comparing replicas (machine-snapshot.ts). */
  stateHash(): Promise<string> {
    return stateHash(this.store);
  }

  close(): Promise<void> {
    return this.exclusive(async () => {
      await this.tombstones.close();
      await this.store.close();
    });
  }
}
