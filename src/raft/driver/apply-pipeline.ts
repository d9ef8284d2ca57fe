// Applying committed entries, in order, on one promise chain: the ready loop hands entries over
// and moves on to the next Ready (and its fsync) while the state machine writes.
//
// Committed entries wait in `pending` for one link of the chain, which takes all that gathered by
// the time it runs: entries committed while an apply is busy go in the next call together. One
// call is one state machine transaction and one LevelDB batch, so a run claimed and finished
// within it is written once. A follower also holds its link open for followerApplyWindowMs to let
// more gather (a herd's claim and finish of a run come 100–300 ms apart under load): nothing waits
// on a follower's apply but its own reads, and the window ends at once when a read waits, the
// follower becomes leader, installs a snapshot, compacts or stops, or MAX_WINDOW_ENTRIES /
// MAX_WINDOW_BYTES gathered.

import { HeraldError } from '../../herald-error.js';
import type { LogSink, DriverTimers, RaftTransport } from '../ports.js';
import type { EffectsReplication, StateMachine } from '../state-machine.js';
import type { Entry } from '../types.js';
import type { DriverState } from './driver-state.js';
import type { EffectsInbox } from './effects-inbox.js';

/** A follower's apply window ends early once this many entries, or bytes of them, gathered. */
const MAX_WINDOW_ENTRIES = 1024;
const MAX_WINDOW_BYTES = 16 * 1024 * 1024;
/** The 'io-error-as-rejection' mutation's answer for entries whose apply failed. */
const REJECTED = new Uint8Array([0]);

interface AppliedWaiter {
  index: number;
  resolve: () => void;
  reject: (e: Error) => void;
}

export interface ApplyPipelineOptions {
  /** Applied proposals are answered in groups of this many, yielding between groups (0 = all at once). */
  resolveGroup: number;
  /** A follower gathers committed entries this long before applying them (0 = at once). */
  followerApplyWindowMs: number;
}

export class ApplyPipeline {
  /** Command bytes applied since the last snapshot point (the byte trigger of log compaction). */
  appliedBytesSinceSnapshot = 0;
  /** Applies run in order on this chain, overlapping the next Ready's fsync. */
  private chain: Promise<void> = Promise.resolve();
  /** Committed entries waiting for the link queued on the chain (queue). */
  private pending: Entry[] = [];
  private pendingBytes = 0;
  /** A link is on the chain and has not yet taken `pending`. */
  private linkQueued = false;
  /** Ends a follower's apply window early; set while one is open. */
  private endWindow: (() => void) | undefined;
  /**
   * Committed entries up to this index already waited one apply window for their effects: if
   * those have not come by the next window, the follower evaluates them itself.
   */
  private carriedUpTo = 0;
  private waiters: AppliedWaiter[] = [];
  private readonly resultWanted = (index: number): boolean => this.state.proposals.waitsFor(index);
  private readonly runLink = (): Promise<void> => this.applyPending();
  /** Set while a snapshot install holds the chain (holdForSnapshot): links queued meanwhile wait for it. */
  private gate: Promise<void> | undefined;
  private readonly onChainError = (e: unknown): void => this.state.fail(e);

  constructor(
    private readonly state: DriverState,
    private readonly stateMachine: StateMachine,
    /** Set when effects replication is on. */
    private readonly fx: EffectsReplication | undefined,
    private readonly inbox: EffectsInbox,
    private readonly log: LogSink,
    private readonly transport: RaftTransport,
    private readonly timers: DriverTimers,
    private readonly opts: ApplyPipelineOptions,
  ) {}

  /** Queues committed entries for the next link of the chain. */
  queue(entries: Entry[]): void {
    for (let i = 0; i < entries.length; i++) {
      this.pending.push(entries[i]!);
      this.pendingBytes += entries[i]!.data.length;
    }
    if (this.pending.length >= MAX_WINDOW_ENTRIES || this.pendingBytes >= MAX_WINDOW_BYTES) this.endWindow?.();
    this.queueLink();
  }

  /** Ends an open apply window now (a read waits, leadership, a snapshot or compaction, stop). */
  endApplyWindow(): void {
    this.endWindow?.();
  }

  /** Runs `fn` on the chain, after the applies queued so far (they must not race it). */
  takeTurn(fn: () => Promise<void>): Promise<void> {
    const p = this.chain.then(fn);
    this.chain = p;
    return p;
  }

  /** Settles once the applies queued so far are done (rejects if one failed). */
  idle(): Promise<void> {
    return this.chain;
  }

  /**
   * For a snapshot install: ends the apply window and settles once the links queued so far are
   * done; a link queued after (a follower's entries carried to another window) waits until the
   * returned release is called, after the restore, and then skips what the snapshot covers.
   */
  async holdForSnapshot(): Promise<() => void> {
    this.endApplyWindow();
    const before = this.chain;
    let release!: () => void;
    this.gate = new Promise<void>((resolve) => (release = resolve));
    const done = (): void => {
      this.gate = undefined;
      release();
    };
    try {
      await before;
    } catch (e) {
      done();
      throw e;
    }
    return done;
  }

  /** Effects arrived (EffectsInbox): if what the open window waits for is here, apply it now rather than at the window's end. */
  effectsArrived(): void {
    const next = this.inbox.peek(this.state.applied);
    const last = this.pending[this.pending.length - 1];
    if (next && last && last.index >= next.toApplied) this.endWindow?.();
  }

  /** Resolves once the state machine has applied `index`. */
  waitApplied(index: number): Promise<void> {
    if (this.state.applied >= index) return Promise.resolve();
    if (this.state.stopped) return Promise.reject(new HeraldError('SHUTTING_DOWN', 'node is shutting down'));
    // A read waits: a follower's apply window ends now rather than delay it.
    this.endWindow?.();
    return new Promise((resolve, reject) => this.waiters.push({ index, resolve, reject }));
  }

  setApplied(index: number): void {
    this.state.applied = index;
    if (this.waiters.length > 0) {
      const still: AppliedWaiter[] = [];
      for (const w of this.waiters) (w.index <= index ? w.resolve() : still.push(w));
      this.waiters = still;
    }
    this.state.events.emit('applied', { index });
  }

  /** The driver stopped: whoever waits for an index hears the node is shutting down. */
  stop(): void {
    for (const w of this.waiters) w.reject(new HeraldError('SHUTTING_DOWN', 'node is shutting down'));
    this.waiters = [];
  }

  /** One link on the chain for whatever `pending` holds (none if one is queued already). */
  private queueLink(): void {
    if (this.linkQueued) return;
    this.linkQueued = true;
    const gate = this.gate;
    this.chain = this.chain.then(gate ? () => gate.then(this.runLink) : this.runLink);
    this.chain.catch(this.onChainError);
  }

  private async applyPending(): Promise<void> {
    const state = this.state;
    if (this.opts.followerApplyWindowMs > 0 && state.role !== 'leader' && !state.stopped && this.waiters.length === 0) await this.applyWindow();
    this.linkQueued = false;
    const entries = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    if (entries.length > 0) await this.apply(entries);
  }

  private applyWindow(): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        this.timers.cancel(timer);
        if (this.endWindow === done) this.endWindow = undefined;
        resolve();
      };
      const timer = this.timers.after(this.opts.followerApplyWindowMs, done);
      this.endWindow = done;
    });
  }

  private async apply(entries: Entry[]): Promise<void> {
    const state = this.state;
    // Skip-fsync control: the state machine never gets ahead of what is really on disk.
    if (this.log.beforeApply) await this.log.beforeApply(state.role === 'leader');
    // Entries at or below a restored snapshot are already in the state machine.
    const todo = entries[0]!.index <= state.applied ? entries.filter((e) => e.index > state.applied) : entries;
    if (todo.length === 0) return;
    // A follower with proposals of its own still pending (a deposed leader) evaluates: their
    // callers want results, which effects do not carry.
    if (this.fx && state.role !== 'leader' && !state.proposals.hasPending()) return this.applyFromEffects(todo, this.fx);
    await this.evaluate(todo);
  }

  /** Applies by evaluating the entries (the leader, and a follower without effects for them). */
  private async evaluate(todo: Entry[]): Promise<void> {
    const state = this.state;
    const t0 = this.timers.nowMs();
    let results: Uint8Array[];
    // Proposals that asked to be answered once evaluated are, before the write lands.
    const evaluated = state.proposals.hasEarly() ? (r: Uint8Array[]) => state.proposals.evaluated(todo, r, state.leader) : undefined;
    if (this.fx && state.role === 'leader') {
      const out = await this.fx.applyCapturing(todo, this.resultWanted, evaluated);
      results = out.results;
      if (out.effects) {
        state.stats.effectsSent++;
        this.transport.sendEffects(out.effects);
      }
    } else if (state.mutations.has('io-error-as-rejection')) {
      results = await this.stateMachine.apply(todo, this.resultWanted).catch(() => todo.map(() => REJECTED));
    } else {
      results = await this.stateMachine.apply(todo, this.resultWanted, evaluated);
    }
    this.noteApplyMs(this.timers.nowMs() - t0);
    state.stats.entriesApplied += todo.length;
    for (let i = 0; i < todo.length; i++) this.appliedBytesSinceSnapshot += todo[i]!.data.length;
    this.setApplied(todo[todo.length - 1]!.index);
    await this.resolveProposals(todo, results);
  }

  private noteApplyMs(dt: number): void {
    const stats = this.state.stats;
    stats.applyMs += dt;
    if (dt > stats.applyMaxMs) stats.applyMaxMs = dt;
  }

  /**
   * A follower's apply: entries covered by effects from the leader are written from those. As
   * the effects come in order, entries before the first effects held are evaluated at once (theirs
   * are lost); entries after the last wait one more window for theirs, then are evaluated.
   */
  private async applyFromEffects(todo: Entry[], fx: EffectsReplication): Promise<void> {
    const state = this.state;
    const inbox = this.inbox;
    const last = todo[todo.length - 1]!.index;
    for (;;) {
      const next = inbox.peek(state.applied);
      if (next) {
        // Covers entries this follower does not know are committed yet: they wait.
        if (next.toApplied > last) break;
        inbox.take(state.applied);
        const t0 = this.timers.nowMs();
        if ((await fx.applyEffects(next.effects)) !== 'applied') break;
        this.noteApplyMs(this.timers.nowMs() - t0);
        let covered = 0;
        for (const e of todo) {
          if (e.index <= state.applied || e.index > next.toApplied) continue;
          covered++;
          this.appliedBytesSinceSnapshot += e.data.length;
        }
        state.stats.entriesApplied += covered;
        state.stats.entriesAppliedFromEffects += covered;
        this.setApplied(state.mutations.has('apply-effects-at-wrong-index') ? last : next.toApplied);
        continue;
      }
      const start = inbox.nextStartAfter(state.applied);
      if (start > last) break;
      await this.evaluate(todo.filter((e) => e.index > state.applied && e.index <= start));
    }
    inbox.dropStale();
    const rest = todo.filter((e) => e.index > state.applied);
    if (rest.length === 0) return;
    // Entries that already waited a window are evaluated now; younger ones wait one more for
    // their effects, unless something needs them applied (a read, leadership, stopping).
    const mayWait = this.opts.followerApplyWindowMs > 0 && !state.stopped && state.role !== 'leader';
    // A read needs the entries up to its index now; the rest may still wait.
    let dueBy = this.carriedUpTo;
    for (const w of this.waiters) dueBy = Math.max(dueBy, w.index);
    const old = mayWait ? rest.filter((e) => e.index <= dueBy) : rest;
    const young = mayWait ? rest.filter((e) => e.index > dueBy) : [];
    if (old.length > 0) await this.evaluate(old);
    if (young.length === 0 || state.applied >= young[young.length - 1]!.index) return;
    this.carriedUpTo = young[young.length - 1]!.index;
    let bytes = 0;
    for (const e of young) bytes += e.data.length;
    this.pending = young.concat(this.pending);
    this.pendingBytes += bytes;
    this.queueLink();
  }

  /**
   * Proposals of a big applied batch are answered in groups, yielding to the event loop between
   * groups, so the first answers are on the wire while the rest are still being written. All
   * answers of a group-committed batch leaving in one burst make closed-loop clients answer in
   * one burst too, and the whole cluster then moves in lockstep (client busy while the servers
   * idle, and back); spreading them keeps the next batch forming while this one is answered.
   */
  private async resolveProposals(entries: Entry[], results: Uint8Array[]): Promise<void> {
    const group = this.opts.resolveGroup;
    const proposals = this.state.proposals;
    if (group <= 0 || entries.length <= group || !proposals.hasPending()) {
      proposals.applied(entries, results, this.state.leader);
      return;
    }
    for (let i = 0; i < entries.length; i += group) {
      if (i > 0) await new Promise<void>((resolve) => this.timers.soon(resolve));
      proposals.applied(entries.slice(i, i + group), results.slice(i, i + group), this.state.leader);
    }
  }
}
