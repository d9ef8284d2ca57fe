// The applied-results feed: the scheduler state machine behind a thin wrapper that tells the
// leader what was applied, in log order. Job changes re-arm the timing wheel at once,
// cancel/REPLACE signals reach the holding worker, new ready runs wake the dispatcher. Results
// are computed on every replica but only returned to the proposer; watching apply is how the
// leader also sees the effects of commands proposed elsewhere (a follower's forwarded DeleteJob,
// a previous leader's entries).
//
// Per entry the feed reads the result's kind from its header (appliedKindOf: no decode, no
// allocation); only watched kinds become AppliedEntry objects, and nothing at all is done while
// nobody listens (followers). Decoding happens later, in the listener's own loop.
import type { SnapshotMeta, Entry } from '../../raft/types.js';
import type { EffectsReplication, ResultWanted, SnapshotSource, StateMachine } from '../../raft/state-machine.js';
import { appliedKindOf, type AppliedKind, type SchedulerStateMachine } from '../../fsm/index.js';

/** The kinds of applied results the leader acts on. */
const WATCHED: Readonly<Record<AppliedKind, boolean>> = {
  job: true,
  jobs: true,
  delete: true,
  trigger: true,
  backfill: true,
  fire: true,
  runItems: true,
  cancel: true,
  // A re-driven run is ready again: the dispatcher must look.
  retry: true,
  claim: false,
  trim: false,
  // A watchdog alert is a new ready run: the dispatcher is woken.
  alerts: true,
  // Revoked tokens' worker streams are closed by the worker service's own re-check.
  token: false,
  rejected: false,
  // Task type limits changed: the dispatcher reads them again.
  taskType: true,
};

export interface AppliedEntry {
  readonly index: number;
  readonly kind: AppliedKind;
  /** The entry's command bytes. */
  readonly data: Uint8Array;
  /** The encoded result. */
  readonly result: Uint8Array;
}

export type AppliedListener = (entries: readonly AppliedEntry[]) => void;

export class AppliedResultsFeed implements StateMachine {
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
    const kind = r && appliedKindOf(r);
    if (kind && WATCHED[kind]) watched.push({ index: entries[i]!.index, kind, data: entries[i]!.data, result: r });
  }
  if (watched.length === 0) return;
  try {
    listener(watched);
  } catch {
    // A listener bug must never fail apply (the node would stop); the leader's periodic
    // re-reads of the due window and ready index cover anything it missed.
  }
}
