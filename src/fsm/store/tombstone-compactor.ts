// Compacts the index ranges that deletes have filled with tombstones. Every run transition
// deletes a key of the runs-by-state index (s\0<state>\0…), every fire of a recurring job moves its
// due-index key (d\0…), every finished run moves its job's trim-index key (h\0…). LevelDB keeps a
// deleted key as a tombstone until a compaction reaches it, and a range read walks every
// tombstone in its range: after a million-run herd, one read of the RUNNING runs (the leader's
// orphan sweep, every 5 s) or of the overdue due keys (the watchdog) walked a million of them,
// ~600 ms of a pool thread each time. LevelDB's own compactions reach such ranges late in a large
// store. So once a range gathered `threshold` deletes, it is compacted (compactRange) in the
// background: the store's contents do not change, only how they are laid out, so every replica
// may do it whenever it likes (nothing of it is replicated or deterministic).
import type { Logger } from 'pino';

const S = 's'.charCodeAt(0);
const D = 'd'.charCodeAt(0);
const H = 'h'.charCodeAt(0);
const SEP = 0;

/** Deletes in one range before it is compacted: a read through that many tombstones takes ~60 ms. */
export const DEFAULT_TOMBSTONE_THRESHOLD = 100_000;

export interface CompactableStore {
  compactRange(start: string, end: string): Promise<void>;
}

/** The range a deleted key's tombstone slows down (its index prefix), or undefined for other keys. */
export function tombstoneRangeOf(key: string | Uint8Array): string | undefined {
  const at = typeof key === 'string' ? (i: number) => key.charCodeAt(i) : (i: number) => key[i] ?? -1;
  const first = at(0);
  if (at(1) !== SEP) return undefined;
  if (first === D) return 'd\0';
  if (first === H) return 'h\0';
  // s\0<state:2>\0: the range of one state (a read of one state's runs walks only its own).
  if (first === S && at(4) === SEP) return `s\0${String.fromCharCode(at(2), at(3))}\0`;
  return undefined;
}

export class TombstoneCompactor {
  private readonly deletes = new Map<string, number>();
  private running: Promise<void> | undefined;
  private closed = false;
  /** Compactions done (tests, metrics). */
  compactions = 0;

  constructor(
    private readonly store: CompactableStore,
    private readonly threshold = DEFAULT_TOMBSTONE_THRESHOLD,
    private readonly log?: Logger,
  ) {}

  /** Counts a deleted key (called for every delete a written batch carried). */
  noteDelete(key: string | Uint8Array): void {
    const range = tombstoneRangeOf(key);
    if (range !== undefined) this.deletes.set(range, (this.deletes.get(range) ?? 0) + 1);
  }

  /** After a batch was written: compacts, in the background, one range that reached the threshold. */
  maybeCompact(): void {
    if (this.running || this.closed) return;
    let pick: string | undefined;
    let most = 0;
    for (const [range, n] of this.deletes) {
      if (n >= this.threshold && n > most) {
        pick = range;
        most = n;
      }
    }
    if (pick === undefined) return;
    this.deletes.delete(pick);
    const range = pick;
    // One past every key of the range: its prefix ends in NUL, so the bound ends in \x01.
    const end = range.slice(0, -1) + '\x01';
    this.running = this.store
      .compactRange(range, end)
      .then(() => {
        this.compactions++;
      })
      .catch((e: unknown) => {
        // Only the layout was at stake: the reads stay correct, just slower.
        this.log?.warn({ err: e, range: JSON.stringify(range) }, 'compacting a range of deleted index keys failed');
      })
      .finally(() => {
        this.running = undefined;
        this.maybeCompact();
      });
  }

  /** Forgets the counts (the store was replaced: a snapshot was installed). */
  reset(): void {
    this.deletes.clear();
  }

  /** Stops compacting and waits for the one running (before the store closes). */
  async close(): Promise<void> {
    this.closed = true;
    await this.running;
  }
}
