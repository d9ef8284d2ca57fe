// The driver's RaftTransport over the SimNetwork: Raft messages, effects and snapshots travel as
// packets with the network's drops, delays, duplicates, reordering and partitions. A snapshot
// transfer is one packet out (the data) and one back (installed or not); a lost one times out,
// and the driver's snapshot exchange retries.

import type { RaftTransport, SnapshotSend, SnapshotSent } from '../ports.js';
import { incarnationOf } from '../core/membership.js';
import type { ConfState, Message, NodeId, SnapshotMeta } from '../types.js';
import type { SimNetwork } from './sim-network.js';
import type { SimTimers } from './sim-scheduler.js';

export type Packet =
  | { kind: 'raft'; m: Message; fromInc: string; toInc: string }
  | { kind: 'effects'; effects: Uint8Array }
  | { kind: 'snapshot'; id: number; term: number; meta: SnapshotMeta; data: Uint8Array; fromInc: string; toInc: string }
  | { kind: 'snapshotResp'; id: number; installed: boolean };

/** How long a snapshot transfer may take in simulated ms before the sender gives up. */
const SNAPSHOT_TIMEOUT_MS = 60;

interface Transfer {
  resolve: (s: SnapshotSent) => void;
  reject: (e: Error) => void;
  index: number;
  bytes: number;
}

export class SimTransport implements RaftTransport {
  private seq = 0;
  private readonly transfers = new Map<number, Transfer>();

  constructor(
    private readonly id: NodeId,
    private readonly peers: readonly NodeId[],
    private readonly net: SimNetwork<Packet>,
    private readonly timers: SimTimers,
    private readonly now: () => number,
    /** Every Raft message as it leaves (the checkers watch what a node told others). */
    private readonly onSend: (m: Message) => void,
    /** A dead incarnation's code still finishing its turn must not reach the network. */
    private readonly alive: () => boolean,
    /** This member's incarnation, and the configuration that names the receivers' (stamped on packets). */
    private readonly incarnation: string,
    private readonly conf: () => ConfState,
  ) {}

  send(messages: readonly Message[]): void {
    if (!this.alive()) return;
    for (const m of messages) {
      this.onSend(m);
      this.net.send(this.id, m.to, { kind: 'raft', m, fromInc: this.incarnation, toInc: incarnationOf(this.conf(), m.to) }, this.now());
    }
  }

  sendEffects(effects: Uint8Array): void {
    if (!this.alive()) return;
    for (const p of this.peers) if (p !== this.id) this.net.send(this.id, p, { kind: 'effects', effects }, this.now());
  }

  sendSnapshot(s: SnapshotSend): Promise<SnapshotSent> | undefined {
    if (!this.peers.includes(s.to) || s.to === this.id) return undefined;
    return (async () => {
      const src = await s.stateMachine.snapshot();
      let meta: SnapshotMeta;
      let data: Uint8Array | undefined;
      try {
        meta = { index: src.appliedIndex, term: s.termOf(src.appliedIndex), conf: s.confAt(src.appliedIndex) };
        for await (const c of src.chunks()) data = c;
      } finally {
        await src.close();
      }
      if (!data) throw new Error('empty snapshot');
      if (!this.alive()) throw new Error('stopped');
      const id = ++this.seq;
      const bytes = data.length;
      const stamp = { fromInc: this.incarnation, toInc: incarnationOf(this.conf(), s.to) };
      this.net.send(this.id, s.to, { kind: 'snapshot', id, term: s.term, meta, data, ...stamp }, this.now());
      return new Promise<SnapshotSent>((resolve, reject) => {
        this.transfers.set(id, { resolve, reject, index: meta.index, bytes });
        this.timers.after(SNAPSHOT_TIMEOUT_MS, () => this.settle(id, false));
      });
    })();
  }

  /** The follower's answer to transfer `id` (or its timeout). */
  settle(id: number, installed: boolean): void {
    const t = this.transfers.get(id);
    if (!t) return;
    this.transfers.delete(id);
    if (installed) t.resolve({ index: t.index, bytes: t.bytes });
    else t.reject(new Error(`snapshot ${t.index} not installed`));
  }
}
