// A tiny synchronous cluster for scenario tests (like etcd's raft_test network): nodes over
// MemoryStorage, messages delivered in FIFO order until quiet, with per-link cuts.

import { MemoryStorage } from '../../src/raft/core/memory-storage.js';
import { RaftNode, type RaftNodeConfig } from '../../src/raft/core/raft-node.js';
import type { Entry, Message, NodeId, ReadState } from '../../src/raft/types.js';

export interface TestNode {
  id: NodeId;
  raft: RaftNode;
  storage: MemoryStorage;
  applied: Entry[];
  readStates: ReadState[];
}

export function mulberry(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type ConfigOverrides = Partial<Omit<RaftNodeConfig, 'id' | 'storage'>>;

export class TestCluster {
  readonly nodes = new Map<NodeId, TestNode>();
  readonly ids: NodeId[];
  queue: Message[] = [];
  /** Cut links "from->to". */
  readonly cut = new Set<string>();
  /** Every message delivered, for assertions. */
  readonly delivered: Message[] = [];

  constructor(n: number, readonly overrides: ConfigOverrides = {}, storages?: Map<NodeId, MemoryStorage>) {
    this.ids = Array.from({ length: n }, (_, i) => String.fromCharCode(97 + i));
    this.ids.forEach((id, i) => {
      const storage = storages?.get(id) ?? new MemoryStorage(this.ids);
      this.nodes.set(id, this.makeNode(id, storage, overrides, i));
    });
  }

  makeNode(id: NodeId, storage: MemoryStorage, overrides: ConfigOverrides, salt = 0): TestNode {
    const raft = new RaftNode({
      id,
      storage,
      applied: 0,
      electionTicks: 10,
      heartbeatTicks: 1,
      maxSizePerMsg: 1024 * 1024,
      maxInflightMsgs: 256,
      preVote: false,
      checkQuorum: false,
      random: mulberry(salt + 1),
      ...overrides,
    });
    return { id, raft, storage, applied: [], readStates: [] };
  }

  /** Crash-restarts a node from its storage (everything persisted survives; messages to it are lost). */
  restart(id: NodeId, overrides: ConfigOverrides = {}): TestNode {
    const old = this.node(id);
    const applied = old.applied.length > 0 ? old.applied[old.applied.length - 1]!.index : old.storage.firstIndex() - 1;
    const fresh = this.makeNode(id, old.storage, { ...this.overrides, applied, ...overrides }, this.ids.indexOf(id) + 100);
    fresh.applied = old.applied;
    this.nodes.set(id, fresh);
    this.queue = this.queue.filter((m) => m.to !== id);
    return fresh;
  }

  node(id: NodeId): TestNode {
    return this.nodes.get(id)!;
  }

  /** Persists, applies and collects the messages of every node's pending Ready. */
  flushReady(): void {
    for (const n of this.nodes.values()) {
      while (n.raft.hasReady()) {
        const rd = n.raft.ready();
        if (rd.snapshot) n.storage.applySnapshot(rd.snapshot);
        n.storage.append(rd.entries);
        if (rd.hardState) n.storage.setHardState(rd.hardState);
        this.queue.push(...rd.messages);
        n.applied.push(...rd.committedEntries);
        n.readStates.push(...rd.readStates);
        n.raft.advance(rd);
      }
    }
  }

  isolate(id: NodeId): void {
    for (const other of this.ids) {
      if (other === id) continue;
      this.cut.add(`${id}->${other}`);
      this.cut.add(`${other}->${id}`);
    }
  }

  heal(): void {
    this.cut.clear();
  }

  /** Delivers messages until none are left (or a bound is hit). */
  stabilize(filter?: (m: Message) => boolean, maxMessages = 5_000): void {
    this.flushReady();
    let count = 0;
    while (this.queue.length > 0 && count++ < maxMessages) {
      const m = this.queue.shift()!;
      if (this.cut.has(`${m.from}->${m.to}`)) continue;
      if (filter && !filter(m)) continue;
      const target = this.nodes.get(m.to);
      if (!target) continue;
      this.delivered.push(m);
      target.raft.step(m);
      this.flushReady();
    }
  }

  /** Ticks one node n times, then delivers everything. */
  tick(id: NodeId, n = 1): void {
    for (let i = 0; i < n; i++) this.node(id).raft.tick();
    this.stabilize();
  }

  tickAll(n = 1): void {
    for (let i = 0; i < n; i++) {
      for (const node of this.nodes.values()) node.raft.tick();
      this.stabilize();
    }
  }

  campaign(id: NodeId): void {
    this.node(id).raft.campaign();
    this.stabilize();
  }

  propose(id: NodeId, text: string): { index: number; term: number } {
    const t = this.node(id).raft.propose(new TextEncoder().encode(text));
    this.stabilize();
    return t;
  }

  leaders(): NodeId[] {
    return this.ids.filter((id) => this.node(id).raft.status().role === 'leader');
  }

  appliedData(id: NodeId): string[] {
    return this.node(id)
      .applied.filter((e) => e.data.length > 0)
      .map((e) => new TextDecoder().decode(e.data));
  }
}

export function entry(index: number, term: number, text = ''): Entry {
  return { index, term, type: 'normal', data: new TextEncoder().encode(text) };
}
