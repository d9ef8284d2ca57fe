// The "skip fsync" negative control of the chaos suite (issue 8): a node that acknowledges log
// writes before they are durable. Test-only: off by default, refused unless the process runs with
// HERALD_UNSAFE_TEST_SWITCHES=1 (the same opt-in as the FSM's switches).
//
// Why not simply write with sync:false? The chaos suite crashes nodes with kill -9, which keeps
// the OS page cache: an unsynced LevelDB write survives it, so the bug would stay invisible. What
// skipping fsync really risks is a power cut losing the dirty pages not yet written back. This
// models that page cache inside the process: a Ready's write is queued and the driver carries on
// at once (messages, votes and append acks go out, the leader may commit on them); the queue is
// written back (sync:false) once a write is older than WRITEBACK_DELAY_MS, like the kernel's dirty
// page expiry. kill -9 now loses the last second or so of this node's log, term and vote, as a
// power cut would.
//
// The state machine's own writes are not in that model, so applying is held back until the
// entries are written back (a state machine ahead of its log would refuse to start, which is
// not the failure under test). A leader writes back at once when it has entries to apply, so its
// clients are not slowed; followers wait for the periodic write-back. The result: a client is
// acknowledged once a majority *said* it stored the entry, while only the leader really did.
import type { LogSink, PersistInput } from '../ports.js';
import type { SnapshotMeta } from '../types.js';
import { UNSAFE_ENV, unsafeOptedIn } from '../unsafe-opt-in.js';

/** How long a write stays in the modelled page cache before it is written back. */
export const WRITEBACK_DELAY_MS = 1_000;

/**
 * Whether a driver may run with the control: `requested` as given, but throws when it is
 * requested without the environment opt-in (no configuration mistake alone turns it on).
 */
export function checkUnsafeSkipFsync(requested: boolean, env: NodeJS.ProcessEnv = process.env): boolean {
  if (requested && !unsafeOptedIn(env)) {
    throw new Error(`--unsafe-skip-fsync acknowledges log writes before they are durable (it loses acknowledged writes); it is for negative-control tests only: set ${UNSAFE_ENV}=1 to allow it`);
  }
  return requested;
}

interface Queued {
  input: PersistInput;
  atMs: number;
  seq: number;
}

/** The modelled page cache in front of a log (see the top of this file): a LogSink decorator. */
export class WriteBehindLog implements LogSink {
  private queue: Queued[] = [];
  private seq = 0;
  private written = 0;
  /** Write-backs run one after another, in queue order. */
  private chain: Promise<void> = Promise.resolve();
  private waiters: Array<{ seq: number; resolve: () => void; reject: (e: Error) => void }> = [];
  private readonly timer: NodeJS.Timeout;
  private closed = false;
  private failed: Error | undefined;

  constructor(
    private readonly store: LogSink,
    private readonly now: () => number,
    private readonly delayMs = WRITEBACK_DELAY_MS,
  ) {
    // A failed write-back surfaces in the next persist/beforeApply (the driver then fails).
    this.timer = setInterval(() => this.writeBack(this.now() - this.delayMs).catch(() => undefined), Math.max(10, Math.floor(delayMs / 4)));
    this.timer.unref();
  }

  /**
   * Stands in for logStore.persist: queued, "done" at once. A snapshot is not queued: the queue
   * is written back first, then the snapshot batch goes to disk synced, as without the control.
   */
  async persist(input: PersistInput, sync: boolean): Promise<void> {
    if (this.failed) throw this.failed;
    if (input.snapshot || this.closed) {
      await this.writeBack(Infinity);
      await this.store.persist(input, sync);
      return;
    }
    this.queue.push({ input, atMs: this.now(), seq: ++this.seq });
  }

  /** Not modelled: compaction writes its snapshot point synced, as without the control. */
  compact(snap: SnapshotMeta, base: { index: number; term: number }): Promise<void> {
    return this.store.compact(snap, base);
  }

  /**
   * Resolves once everything queued so far is on disk: at once (`now`, a leader about to apply)
   * or at the periodic write-back (a follower).
   */
  beforeApply(now: boolean): Promise<void> {
    const seq = this.seq;
    if (this.written >= seq) return Promise.resolve();
    if (now || this.closed) return this.writeBack(Infinity);
    return new Promise((resolve, reject) => this.waiters.push({ seq, resolve, reject }));
  }

  /** Clean shutdown: everything written back (a stopped process loses nothing). */
  drain(): Promise<void> {
    return this.close();
  }

  /** The same as drain (afterwards writes go straight to the log). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.writeBack(Infinity);
  }

  private writeBack(olderThanMs: number): Promise<void> {
    this.chain = this.chain.then(async () => {
      while (this.queue.length > 0 && this.queue[0]!.atMs <= olderThanMs && !this.failed) {
        const q = this.queue.shift()!;
        try {
          await this.store.persist(q.input, false); // the control: never an fsync
        } catch (e) {
          this.failed = e instanceof Error ? e : new Error(String(e));
          for (const w of this.waiters) w.reject(this.failed);
          this.waiters = [];
          throw this.failed;
        }
        this.written = q.seq;
      }
      if (this.waiters.length > 0) {
        const still = this.waiters.filter((w) => w.seq > this.written);
        for (const w of this.waiters) if (w.seq <= this.written) w.resolve();
        this.waiters = still;
      }
    });
    const p = this.chain;
    this.chain = p.catch(() => undefined);
    return p;
  }
}
