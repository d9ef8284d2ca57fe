// A simulated per-node disk for the deterministic simulator: a key -> value store with the one
// property that matters for consensus bugs, the gap between written and durable. Writes land in
// an unsynced buffer that the running node already reads back (like the OS page cache); sync()
// makes everything written so far durable (group commit: one sync covers many writes); crash()
// throws the unsynced buffer away and the node restarts from durableEntries() only.
//
// Generic on purpose: the simulator stores hard state, log entries and snapshots under its own
// keys (for example "hs", "log/00000000042", "snap"), so disk faults hit all of them the same way.
//
// Optional seeded crash faults model what a real kernel may do with unsynced data:
// - 'prefix': a random prefix of the unsynced batches survives (some dirty pages were flushed);
// - torn: the first batch after that prefix may survive partially (a non-atomic multi-key write).
// Both only ever *add* data that was written; neither can resurrect a synced-then-overwritten
// value or lose synced data: a correct node must tolerate any of them, so they are fair faults.

import type { Prng } from './prng.js';

export type DiskOp<V> = { key: string; value: V } | { key: string; delete: true };

export interface CrashFaults {
  /**
   * 'none': every unsynced batch is lost (the machine lost power). 'prefix': a random prefix of
   * them survives. 'all': every batch written survives (the process died, the kernel did not).
   */
  unsyncedSurvival: 'none' | 'prefix' | 'all';
  /** Probability that the first lost batch is torn (a random subset of its ops survives). */
  tornRate: number;
}

export interface SimDiskOptions {
  /** Needed only for the seeded crash faults. */
  rng?: Prng;
  crashFaults?: Partial<CrashFaults>;
}

export interface DiskCounters {
  writes: number;
  syncs: number;
  crashes: number;
  /** Unsynced batches that a crash discarded entirely. */
  lostBatches: number;
  /** Unsynced batches that survived a crash (the 'prefix' fault). */
  survivedBatches: number;
  /** Batches that survived a crash partially. */
  tornBatches: number;
}

export interface CrashReport {
  lostBatches: number;
  survivedBatches: number;
  torn: boolean;
}

export class SimDisk<V> {
  private readonly durable = new Map<string, V>();
  /** What the running node sees: durable state plus the unsynced batches. */
  private current = new Map<string, V>();
  private pending: DiskOp<V>[][] = [];
  private readonly rng: Prng | undefined;
  private readonly faults: CrashFaults;
  private readonly counts: DiskCounters = {
    writes: 0,
    syncs: 0,
    crashes: 0,
    lostBatches: 0,
    survivedBatches: 0,
    tornBatches: 0,
  };

  constructor(opts: SimDiskOptions = {}) {
    this.rng = opts.rng;
    this.faults = { unsyncedSurvival: 'none', tornRate: 0, ...opts.crashFaults };
    if ((this.faults.unsyncedSurvival === 'prefix' || this.faults.tornRate > 0) && this.rng === undefined) {
      throw new Error('SimDisk: seeded crash faults need an rng');
    }
  }

  /** Buffers one write (unsynced). Values are stored by reference: treat them as immutable. */
  write(key: string, value: V): void {
    this.writeBatch([{ key, value }]);
  }

  delete(key: string): void {
    this.writeBatch([{ key, delete: true }]);
  }

  /** Buffers several ops as one batch: the unit the 'prefix' fault keeps or loses whole. */
  writeBatch(ops: readonly DiskOp<V>[]): void {
    if (ops.length === 0) return;
    const batch = [...ops];
    this.pending.push(batch);
    this.counts.writes++;
    applyOps(this.current, batch);
  }

  /** Makes everything written so far durable. */
  sync(): void {
    for (const b of this.pending) applyOps(this.durable, b);
    this.pending = [];
    this.counts.syncs++;
  }

  /** Unsynced batches outstanding (0 means a crash now loses nothing). */
  get unsyncedBatches(): number {
    return this.pending.length;
  }

  /**
   * The node dies: unsynced batches are lost (or partly kept, under the seeded faults) and the
   * running view becomes the durable state.
   */
  crash(): CrashReport {
    this.counts.crashes++;
    let survived = 0;
    let torn = false;
    if (this.faults.unsyncedSurvival === 'prefix' && this.pending.length > 0) {
      survived = this.rng!.int(0, this.pending.length + 1);
    } else if (this.faults.unsyncedSurvival === 'all') survived = this.pending.length;
    for (let i = 0; i < survived; i++) applyOps(this.durable, this.pending[i]!);
    const first = this.pending[survived];
    if (first !== undefined && first.length > 1 && this.rng !== undefined && this.rng.chance(this.faults.tornRate)) {
      torn = true;
      // Each op of the torn batch independently made it to the platter or not.
      applyOps(this.durable, first.filter(() => this.rng!.chance(0.5)));
    }
    const lost = this.pending.length - survived;
    this.counts.survivedBatches += survived;
    this.counts.lostBatches += lost - (torn ? 1 : 0);
    if (torn) this.counts.tornBatches++;
    this.pending = [];
    this.current = new Map(this.durable);
    return { lostBatches: lost, survivedBatches: survived, torn };
  }

  /** The running node's view (includes unsynced writes). */
  read(key: string): V | undefined {
    return this.current.get(key);
  }

  /** What a restart would find for this key. */
  readDurable(key: string): V | undefined {
    return this.durable.get(key);
  }

  /** The running view's entries, sorted by key, optionally limited to a key prefix. */
  entries(prefix = ''): Array<[string, V]> {
    return sortedWithPrefix(this.current, prefix);
  }

  /** The durable entries, sorted by key: what a node restarts from. */
  durableEntries(prefix = ''): Array<[string, V]> {
    return sortedWithPrefix(this.durable, prefix);
  }

  counters(): DiskCounters {
    return { ...this.counts };
  }
}

function applyOps<V>(into: Map<string, V>, ops: readonly DiskOp<V>[]): void {
  for (const op of ops) {
    if ('delete' in op) into.delete(op.key);
    else into.set(op.key, op.value);
  }
}

function sortedWithPrefix<V>(m: Map<string, V>, prefix: string): Array<[string, V]> {
  const out: Array<[string, V]> = [];
  for (const [k, v] of m) if (k.startsWith(prefix)) out.push([k, v]);
  // Plain code-unit order (not localeCompare): stable across machines and locales.
  return out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}
