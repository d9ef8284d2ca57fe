// The scheduler state machine behind a thin wrapper that lets the leader watch what was applied,
// in log order: job changes re-arm the timing wheel at once, cancel/REPLACE signals reach the
// holding worker, new ready runs wake the dispatcher. Results are computed on every replica but
// only returned to the proposer; watching apply is how the leader also sees the effects of
// commands proposed elsewhere (a follower's forwarded DeleteJob, a previous leader's entries).
//
// The hook costs one byte comparison per entry and nothing at all while nobody listens
// (followers). Decoding happens later, in the listener's own loop.
import type { SnapshotMeta, Entry } from '../../raft/types.js';
import type { EffectsReplication, ResultWanted, SnapshotSource, StateMachine } from '../../raft/state-machine.js';
import type { SchedulerStateMachine } from '../../fsm/index.js';

/** Result tags (result-codec.ts: [format version][tag]...) the leader cares about. */
export const RESULT_TAG = { job: 1, delete: 2, trigger: 3, backfill: 4, fire: 5, claim: 6, runItems: 7, cancel: 8, jobs: 11 } as const;
const WATCHED = new Set<number>([RESULT_TAG.job, RESULT_TAG.jobs, RESULT_TAG.delete, RESULT_TAG.trigger, RESULT_TAG.backfill, RESULT_TAG.fire, RESULT_TAG.runItems, RESULT_TAG.cancel]);

export interface AppliedEntry {
  readonly index: number;
  readonly tag: number;
  /** The entry's command bytes. */
  readonly data: Uint8Array;
  /** The encoded result. */
  readonly result: Uint8Array;
}

export type AppliedListener = (entries: readonly AppliedEntry[]) => void;

export class ObservedStateMachine implements StateMachine {
  private listener: AppliedListener | undefined;

  constructor(readonly fsm: SchedulerStateMachine) {}

  /** One listener at a time (the active leader services); undefined detaches. */
  setListener(listener: AppliedListener | undefined): void {
    this.listener = listener;
  }

  async apply(entries: readonly Entry[], wanted?: ResultWanted): Promise<Uint8Array[]> {
    const listener = this.listener;
    // The listening leader reads every entry's result; elsewhere only the proposer's.
    const results = await this.fsm.apply(entries, listener ? undefined : wanted);
    if (listener) notify(listener, entries, results);
    return results;
  }

  /** The FSM's effects replication, with the listener told of what the leader applied. */
  readonly effects: EffectsReplication = {
    applyCapturing: async (entries, wanted) => {
      const listener = this.listener;
      const out = await this.fsm.applyCapturing(entries, listener ? undefined : wanted);
      if (listener) notify(listener, entries, out.results);
      return out;
    },
    // Written effects have no results to watch: only a follower writes them, and no leader
    // services listen there.
    applyEffects: (effects) => this.fsm.applyEffects(effects),
    effectsRange: (effects) => this.fsm.effects.effectsRange(effects),
  };

  appliedIndex(): Promise<number> {
    return this.fsm.appliedIndex();
  }
  snapshot(): Promise<SnapshotSource> {
    return this.fsm.snapshot();
  }
  restore(meta: SnapshotMeta, chunks: AsyncIterable<Uint8Array>): Promise<void> {
    return this.fsm.restore(meta, chunks);
  }
  sync(): Promise<void> {
    return this.fsm.sync();
  }
  stateHash(): Promise<string> {
    return this.fsm.stateHash();
  }
  close(): Promise<void> {
    return this.fsm.close();
  }
}

function notify(listener: AppliedListener, entries: readonly Entry[], results: readonly Uint8Array[]): void {
  const watched: AppliedEntry[] = [];
  for (let i = 0; i < entries.length; i++) {
    const r = results[i];
    if (r && r.length > 1 && WATCHED.has(r[1]!)) watched.push({ index: entries[i]!.index, tag: r[1]!, data: entries[i]!.data, result: r });
  }
  if (watched.length === 0) return;
  try {
    listener(watched);
  } catch {
    // A listener bug must never fail apply (the node would stop); the leader's periodic
    // re-reads of the due window and ready index cover anything it missed.
  }
}
