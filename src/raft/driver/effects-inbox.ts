// A follower's effects from the leader (effects replication, state-machine.ts): the writes of
// each of the leader's applies, sent beside the log (peer-server.ts), kept by the applied index
// they start at until the entries they cover apply here. They come in apply order on one stream;
// any that are lost (a slow peer, a leader change, a restart) only mean those entries are
// evaluated here.

import type { EffectsReplication } from '../state-machine.js';
import type { DriverState } from './driver-state.js';

/** Effects a follower holds for entries it has not applied yet (a herd's few seconds fit). */
const MAX_BUFFERED_EFFECTS_BYTES = 64 * 1024 * 1024;

export interface HeldEffects {
  readonly toApplied: number;
  readonly effects: Uint8Array;
}

export class EffectsInbox {
  private readonly byStart = new Map<number, HeldEffects>();
  private bytes = 0;

  constructor(
    private readonly state: DriverState,
    /** undefined when effects replication is off: nothing is kept. */
    private readonly fx: EffectsReplication | undefined,
  ) {}

  /** Keeps what `list` carries for entries not applied yet; false when this node takes none (a leader, stopped, off). */
  receive(list: readonly Uint8Array[]): boolean {
    const fx = this.fx;
    const state = this.state;
    if (!fx || state.stopped || state.role === 'leader') return false;
    for (const effects of list) {
      let range: { fromApplied: number; toApplied: number };
      try {
        range = fx.effectsRange(effects);
      } catch {
        continue; // malformed: the entries are evaluated
      }
      if (range.toApplied <= state.applied || this.byStart.has(range.fromApplied)) continue;
      this.byStart.set(range.fromApplied, { toApplied: range.toApplied, effects });
      this.bytes += effects.length;
      state.stats.effectsReceived++;
    }
    // Bounded (a follower far behind): the oldest go first, and their entries are evaluated.
    for (const start of this.byStart.keys()) {
      if (this.bytes <= MAX_BUFFERED_EFFECTS_BYTES) break;
      this.take(start);
    }
    return true;
  }

  /** The effects held for `start`, left in place. */
  peek(start: number): HeldEffects | undefined {
    return this.byStart.get(start);
  }

  /** Removes the effects held for `start` (and their bytes from the bound); undefined when none. */
  take(start: number): HeldEffects | undefined {
    const e = this.byStart.get(start);
    if (!e) return undefined;
    this.byStart.delete(start);
    this.bytes -= e.effects.length;
    return e;
  }

  /** The lowest start held above `applied` (Infinity when none). */
  nextStartAfter(applied: number): number {
    let start = Infinity;
    for (const s of this.byStart.keys()) if (s > applied && s < start) start = s;
    return start;
  }

  /** Drops effects for entries already applied. */
  dropStale(): void {
    for (const [start, e] of this.byStart) if (e.toApplied <= this.state.applied) this.take(start);
  }

  /** This node became leader: it evaluates from now on. */
  clear(): void {
    this.byStart.clear();
    this.bytes = 0;
  }
}
