// Keeps a node's EndedRunsTally (ended-runs-tally.ts) equal to its store. Nothing is kept until
// the first CountRuns: then one scan of the run records seeds the tally while apply goes on. The
// scan's iterator is created under the apply lock, so it sees the store exactly as it was when
// the tally started following apply; every batch written after that adds its changes on top.
// A node nobody asks pays nothing; seeding at open would read every stored run on every start.
// A restore, or a batch whose outcome is unknown, drops the tally: the next ask seeds again.
import { readMany } from '../store/store-reads.js';
import type { Db } from '../store/apply-txn.js';
import { EndedRunsTally, isCountedState, noteRunChange, runEndedAtMs, type RunCountsAnswer, type TallyChanges } from '../store/ended-runs-tally.js';
import { prefixEnd, RUN_PREFIX } from '../store/key-layout.js';
import { decodeRunRecord } from '../store/records.js';

const SEED_CHUNK = 1000;

export class RunCounts {
  /** Following apply (seeded or seeding); undefined: nobody asked since open or the last reset. */
  private tally: EndedRunsTally | undefined;
  private seeded: Promise<EndedRunsTally> | undefined;

  constructor(
    private readonly db: Db,
    /** Runs `fn` under the state machine's apply lock. */
    private readonly exclusive: <T>(fn: () => Promise<T>) => Promise<T>,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** Whether apply must hand over its changes (a tally is seeded or being seeded). */
  get following(): boolean {
    return this.tally !== undefined;
  }

  /** A batch with these changes is in the store (called under the apply lock). */
  written(changes: TallyChanges): void {
    if (changes.length === 0 || !this.tally) return;
    this.tally.addAll(changes);
    this.tally.prune();
  }

  /** The store was replaced, or what it holds is not known (called under the apply lock). */
  reset(): void {
    this.tally = undefined;
    this.seeded = undefined;
  }

  /** Runs per counted state that reached it at or after `sinceMs`. */
  async count(sinceMs: number): Promise<RunCountsAnswer> {
    for (;;) {
      const p = (this.seeded ??= this.seed());
      let tally: EndedRunsTally;
      try {
        tally = await p;
      } catch (e) {
        if (this.seeded === p) this.reset();
        throw e;
      }
      // A reset during the scan: that tally is gone, the next one scans the new store.
      if (this.tally === tally) return tally.count(sinceMs);
    }
  }

  private async seed(): Promise<EndedRunsTally> {
    const { tally, it } = await this.exclusive(async () => {
      const t = new EndedRunsTally(this.nowMs);
      // Created here, the iterator reads the store as of now; later batches reach `t` (written).
      const i = this.db.iterator({ gte: RUN_PREFIX, lt: prefixEnd(RUN_PREFIX) });
      this.tally = t;
      return { tally: t, it: i };
    });
    try {
      for (;;) {
        const entries = await it.nextv(SEED_CHUNK);
        if (entries.length === 0) break;
        for (const [, value] of entries) {
          const run = decodeRunRecord(value).run;
          tally.add(run.state, runEndedAtMs(run), 1);
        }
        if (this.tally !== tally) break;
      }
    } finally {
      await it.close();
    }
    return tally;
  }
}

const R = 0x72; // 'r'
const S = 0x73; // 's'
const ZERO = 0x30; // '0'
const latin1 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.length).toString('latin1');

/**
 * The tally changes of another replica's effects (a follower writing the leader's batch): the
 * s\0 keys of counted states the batch puts (a run reached that state; its record is put in the
 * same batch) and deletes (a run left it: its stored record, read before the batch is written,
 * says when it had reached it).
 */
export class EffectsRunChanges {
  private prevRunKey: Uint8Array | undefined;
  private prevRunValue: Uint8Array | undefined;
  private readonly runPuts: [Uint8Array, Uint8Array][] = [];
  /** (state, s-key tail, the run's new record when it was the write just before) per counted s\0 put. */
  private readonly entered: [number, Uint8Array, Uint8Array | undefined][] = [];
  private readonly left: [number, Uint8Array][] = [];

  /** One write of the effects, in batch order. */
  op(key: Uint8Array, value: Uint8Array | null): void {
    if (key.length < 5 || key[1] !== 0) return;
    if (key[0] === R) {
      if (value === null) return;
      this.prevRunKey = key;
      this.prevRunValue = value;
      this.runPuts.push([key, value]);
      return;
    }
    // "s\0<state:2>\0<tail>"
    if (key[0] !== S || key[4] !== 0) return;
    const state = (key[2]! - ZERO) * 10 + (key[3]! - ZERO);
    if (!isCountedState(state)) return;
    const tail = key.subarray(5);
    if (value === null) {
      this.left.push([state, tail]);
      return;
    }
    // This build writes a run's record just before its index key; another build may not.
    const prev = this.prevRunKey;
    const same = prev !== undefined && Buffer.compare(prev.subarray(2), tail) === 0;
    this.entered.push([state, tail, same ? this.prevRunValue : undefined]);
  }

  /** The changes, reading the records of runs that left a counted state (before the batch is written). */
  async changes(db: Db): Promise<TallyChanges> {
    const out: TallyChanges = [];
    let byTail: Map<string, Uint8Array> | undefined;
    for (const [state, tail, known] of this.entered) {
      let value = known;
      if (value === undefined) {
        byTail ??= new Map(this.runPuts.map(([k, v]) => [latin1(k.subarray(2)), v]));
        value = byTail.get(latin1(tail));
      }
      if (value === undefined) continue; // a state key without its record: not a run this build can date
      noteRunChange(out, -1, 0, state, runEndedAtMs(decodeRunRecord(value).run));
    }
    if (this.left.length > 0) {
      const before = await readMany(db, this.left.map(([, tail]) => `r\0${latin1(tail)}`));
      this.left.forEach(([state], i) => {
        const v = before[i];
        if (v !== undefined) noteRunChange(out, state, runEndedAtMs(decodeRunRecord(v).run), -1, 0);
      });
    }
    return out;
  }
}
