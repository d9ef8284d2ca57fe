// A simulated network for the deterministic simulator: generic over the message type, driven by
// a logical clock (the simulator's tick/step counter), never by wall time. Every random choice
// comes from the injected Prng, so one seed replays the same drops, delays, duplicates and
// reorderings.
//
// Model: each directed link (from -> to) has fault rates and a delay range. A sent message is
// queued with a delivery time; deliverDue(now) hands back everything due, ordered by
// (deliverAt, send sequence) — a total order, so the simulator's delivery order is reproducible.
// Links are FIFO unless the reorder fault fires: then the message skips the FIFO clamp and gets
// extra delay, so later messages on the same link can overtake it.
//
// Partitions are directed blocked links. A blocked link loses messages both when they are sent
// and when they come due (a cable cut while a packet is in flight loses the packet), which is
// why heal() does not resurrect anything.

import type { NodeId } from '../types.js';
import type { Prng } from './prng.js';

export interface LinkFaults {
  /** Probability that a message is lost. */
  dropRate: number;
  /** Probability that a message is delivered twice (the copy gets its own delay). */
  duplicateRate: number;
  /** Probability that a message ignores link FIFO order and is held back extra time. */
  reorderRate: number;
  /** Delivery delay in ticks, drawn uniformly from [minDelay, maxDelay]. */
  minDelay: number;
  maxDelay: number;
}

export const RELIABLE_LINK: Readonly<LinkFaults> = Object.freeze({
  dropRate: 0,
  duplicateRate: 0,
  reorderRate: 0,
  minDelay: 1,
  maxDelay: 1,
});

export type FaultKind = 'dropped' | 'duplicated' | 'reordered' | 'partitioned' | 'discarded';

export interface NetworkCounters {
  sent: number;
  delivered: number;
  /** Lost by the random drop fault. */
  dropped: number;
  /** Extra copies queued. */
  duplicated: number;
  /** Messages that skipped FIFO order. */
  reordered: number;
  /** Lost on a blocked (partitioned) link, at send or at delivery time. */
  partitioned: number;
  /** Removed by discardInFlight (for example a crashed node's queue). */
  discarded: number;
}

export interface Delivery<M> {
  from: NodeId;
  to: NodeId;
  msg: M;
  sentAt: number;
  deliverAt: number;
  /** Global send sequence number: the tie-breaker for equal delivery times. */
  seq: number;
  /** true for the extra copy produced by the duplicate fault. */
  duplicate: boolean;
}

export interface SimNetworkOptions<M> {
  nodes: readonly NodeId[];
  rng: Prng;
  /** Default faults for every link; per-link overrides via setLinkFaults. */
  faults?: Partial<LinkFaults>;
  /**
   * Copies a message for the duplicate fault. Defaults to sharing the object: fine when
   * receivers treat messages as immutable (the Raft core does); pass structuredClone otherwise.
   */
  clone?: (msg: M) => M;
}

function validateFaults(f: LinkFaults): LinkFaults {
  for (const k of ['dropRate', 'duplicateRate', 'reorderRate'] as const) {
    if (!(f[k] >= 0 && f[k] <= 1)) throw new RangeError(`${k} must be in [0,1], got ${f[k]}`);
  }
  if (!Number.isInteger(f.minDelay) || !Number.isInteger(f.maxDelay) || f.minDelay < 0 || f.maxDelay < f.minDelay) {
    throw new RangeError(`delay range must be integers 0 <= min <= max, got [${f.minDelay}, ${f.maxDelay}]`);
  }
  return f;
}

/** A binary min-heap on (deliverAt, seq): O(log n) per message, deterministic order. */
class DeliveryQueue<M> {
  private readonly heap: Delivery<M>[] = [];

  get size(): number {
    return this.heap.length;
  }

  private static less<M>(a: Delivery<M>, b: Delivery<M>): boolean {
    return a.deliverAt < b.deliverAt || (a.deliverAt === b.deliverAt && a.seq < b.seq);
  }

  push(d: Delivery<M>): void {
    const h = this.heap;
    h.push(d);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!DeliveryQueue.less(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  peek(): Delivery<M> | undefined {
    return this.heap[0];
  }

  pop(): Delivery<M> | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length > 0 && last !== undefined) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && DeliveryQueue.less(h[l]!, h[m]!)) m = l;
        if (r < h.length && DeliveryQueue.less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }

  /** Removes every queued delivery matching pred; returns how many. Rebuilds the heap. */
  removeWhere(pred: (d: Delivery<M>) => boolean): number {
    const keep = this.heap.filter((d) => !pred(d));
    const removed = this.heap.length - keep.length;
    this.heap.length = 0;
    for (const d of keep) this.push(d);
    return removed;
  }
}

export class SimNetwork<M> {
  readonly nodes: readonly NodeId[];
  private readonly rng: Prng;
  private readonly clone: (msg: M) => M;
  private defaults: LinkFaults;
  // Per directed link state in flat arrays indexed by from * n + to: send() is the simulator's
  // hottest path, and string link keys showed up in its profile.
  private readonly index = new Map<NodeId, number>();
  private readonly linkFaults: Array<LinkFaults | undefined>;
  private readonly blocked: Uint8Array;
  private blockedCount = 0;
  /** Latest delivery time queued per link: the FIFO clamp. */
  private readonly lastDeliverAt: Float64Array;
  private readonly queue = new DeliveryQueue<M>();
  private seq = 0;
  private readonly counts: NetworkCounters = {
    sent: 0,
    delivered: 0,
    dropped: 0,
    duplicated: 0,
    reordered: 0,
    partitioned: 0,
    discarded: 0,
  };

  constructor(opts: SimNetworkOptions<M>) {
    if (new Set(opts.nodes).size !== opts.nodes.length) throw new Error('SimNetwork: duplicate node ids');
    this.nodes = [...opts.nodes];
    this.nodes.forEach((id, i) => this.index.set(id, i));
    const links = this.nodes.length * this.nodes.length;
    this.linkFaults = new Array<LinkFaults | undefined>(links).fill(undefined);
    this.blocked = new Uint8Array(links);
    this.lastDeliverAt = new Float64Array(links).fill(-Infinity);
    this.rng = opts.rng;
    this.clone = opts.clone ?? ((m) => m);
    this.defaults = validateFaults({ ...RELIABLE_LINK, ...opts.faults });
  }

  /** Replaces the default faults of every link without an override. */
  setDefaultFaults(faults: Partial<LinkFaults>): void {
    this.defaults = validateFaults({ ...this.defaults, ...faults });
  }

  /** Overrides one directed link's faults (on top of the defaults). */
  setLinkFaults(from: NodeId, to: NodeId, faults: Partial<LinkFaults>): void {
    this.linkFaults[this.link(from, to)] = validateFaults({ ...this.faultsOf(from, to), ...faults });
  }

  /** Drops all per-link overrides. */
  clearLinkFaults(): void {
    this.linkFaults.fill(undefined);
  }

  faultsOf(from: NodeId, to: NodeId): LinkFaults {
    return this.linkFaults[this.link(from, to)] ?? this.defaults;
  }

  send(from: NodeId, to: NodeId, msg: M, now: number): void {
    const link = this.link(from, to);
    this.counts.sent++;
    if (this.blocked[link] === 1) {
      this.counts.partitioned++;
      return;
    }
    const f = this.linkFaults[link] ?? this.defaults;
    // Draw every decision in a fixed order, whatever the outcome, so that changing one rate does
    // not shift the random stream for the other faults of the same message.
    const drop = this.rng.chance(f.dropRate);
    const dup = this.rng.chance(f.duplicateRate);
    if (drop) {
      this.counts.dropped++;
      return;
    }
    this.enqueue(link, from, to, msg, now, f, false);
    if (dup) {
      this.counts.duplicated++;
      this.enqueue(link, from, to, this.clone(msg), now, f, true);
    }
  }

  private enqueue(link: number, from: NodeId, to: NodeId, msg: M, now: number, f: LinkFaults, duplicate: boolean): void {
    let deliverAt = now + this.rng.int(f.minDelay, f.maxDelay + 1);
    if (this.rng.chance(f.reorderRate)) {
      // Held back past the link's FIFO horizon, so messages sent after it may arrive first.
      this.counts.reordered++;
      deliverAt += this.rng.int(1, f.maxDelay - f.minDelay + 3);
    } else {
      deliverAt = Math.max(deliverAt, this.lastDeliverAt[link]!);
      this.lastDeliverAt[link] = deliverAt;
    }
    this.queue.push({ from, to, msg, sentAt: now, deliverAt, seq: this.seq++, duplicate });
  }

  /** Everything due at or before `now`, in (deliverAt, seq) order. Blocked links lose theirs. */
  deliverDue(now: number): Delivery<M>[] {
    const out: Delivery<M>[] = [];
    for (let d = this.queue.peek(); d !== undefined && d.deliverAt <= now; d = this.queue.peek()) {
      this.queue.pop();
      if (this.blockedCount > 0 && this.blocked[this.link(d.from, d.to)] === 1) {
        this.counts.partitioned++;
        continue;
      }
      this.counts.delivered++;
      out.push(d);
    }
    return out;
  }

  /** Delivery time of the earliest queued message (lets the simulator skip idle ticks). */
  nextDeliveryAt(): number | undefined {
    return this.queue.peek()?.deliverAt;
  }

  get inFlight(): number {
    return this.queue.size;
  }

  /** Drops queued messages, e.g. everything addressed to a node that just crashed. */
  discardInFlight(pred: (d: Delivery<M>) => boolean): number {
    const n = this.queue.removeWhere(pred);
    this.counts.discarded += n;
    return n;
  }

  /** Blocks one direction only: `from` can no longer reach `to` (asymmetric partition). */
  blockLink(from: NodeId, to: NodeId): void {
    const link = this.link(from, to);
    if (from !== to && this.blocked[link] === 0) {
      this.blocked[link] = 1;
      this.blockedCount++;
    }
  }

  unblockLink(from: NodeId, to: NodeId): void {
    const link = this.link(from, to);
    if (this.blocked[link] === 1) {
      this.blocked[link] = 0;
      this.blockedCount--;
    }
  }

  /**
   * Splits the cluster into groups: links between different groups are blocked both ways.
   * A node in no group is cut off from everyone. Replaces any earlier partition.
   */
  partition(...groups: readonly (readonly NodeId[])[]): void {
    const groupOf = new Map<NodeId, number>();
    groups.forEach((g, i) =>
      g.forEach((n) => {
        this.link(n, n); // validates the id
        if (groupOf.has(n)) throw new Error(`partition: node ${n} is in two groups`);
        groupOf.set(n, i);
      }),
    );
    this.heal();
    for (const a of this.nodes) {
      for (const b of this.nodes) {
        if (a === b) continue;
        const ga = groupOf.get(a);
        if (ga === undefined || ga !== groupOf.get(b)) this.blockLink(a, b);
      }
    }
  }

  /** Replaces the current partition by a directed set of blocked links (see partition-shapes). */
  applyBlocked(blocked: Iterable<readonly [NodeId, NodeId]>): void {
    this.heal();
    for (const [from, to] of blocked) this.blockLink(from, to);
  }

  /** Unblocks every link. In-flight messages already lost stay lost. */
  heal(): void {
    this.blocked.fill(0);
    this.blockedCount = 0;
  }

  /** Whether `from` can currently send to `to`. */
  canReach(from: NodeId, to: NodeId): boolean {
    return from === to || this.blocked[this.link(from, to)] === 0;
  }

  /** The blocked directed links, in node order. */
  blockedLinks(): Array<[NodeId, NodeId]> {
    const out: Array<[NodeId, NodeId]> = [];
    if (this.blockedCount === 0) return out;
    for (const a of this.nodes) for (const b of this.nodes) if (this.blocked[this.link(a, b)] === 1) out.push([a, b]);
    return out;
  }

  /** Counters of traffic and of each fault injected so far (a copy). */
  counters(): NetworkCounters {
    return { ...this.counts };
  }

  /** The flat index of a directed link; throws on an unknown node id. */
  private link(from: NodeId, to: NodeId): number {
    const a = this.index.get(from);
    const b = this.index.get(to);
    if (a === undefined || b === undefined) throw new Error(`SimNetwork: unknown node ${a === undefined ? from : to}`);
    return a * this.nodes.length + b;
  }
}
