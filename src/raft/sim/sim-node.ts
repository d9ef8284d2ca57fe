// One simulated cluster node: a RaftNode driven exactly like the runtime drives it (persist the
// Ready, fsync when asked, then send, then apply, then advance), over a SimDisk whose unsynced
// writes a crash may lose. A restart rebuilds everything from the durable disk only.
//
// Disk layout (one atomic batch per Ready, like a LevelDB write batch):
//   "hs"          -> HardState
//   "snap"        -> snapshot meta + the key-value state at that index
//   "log/<index>" -> Entry (zero-padded index so keys sort in log order)

import { MemoryStorage } from '../core/memory-storage.js';
import type { CoreMutation } from '../core/mutations.js';
import { RaftNode } from '../core/raft-node.js';
import type { Entry, HardState, Message, NodeId, ReadState, Ready, Role, SnapshotMeta } from '../types.js';
import { decodePut, type KvState, type PutCommand } from './kv-command.js';
import type { DiskOp, SimDisk } from './sim-disk.js';

export type DiskValue =
  | { kind: 'hs'; hs: HardState }
  | { kind: 'entry'; entry: Entry }
  | { kind: 'snap'; meta: SnapshotMeta; data: KvState };

export interface NodeParams {
  electionTicks: number;
  heartbeatTicks: number;
  maxSizePerMsg: number;
  maxInflightMsgs: number;
  preVote: boolean;
  checkQuorum: boolean;
  /** Compact once this many applied entries sit in the log. */
  compactEvery: number;
  /** Entries kept behind the snapshot point when compacting. */
  compactKeep: number;
  mutations: ReadonlySet<CoreMutation>;
  /** Shared by the nodes of one simulation. */
  decoded: DecodedCommands;
}

/** What the simulator observes while a node processes a Ready, in processing order. */
export interface NodeObserver {
  /** After the Ready's state is written (synced when required), before anything is sent. */
  persisted(node: SimNode, rd: Ready, prevCommit: number): void;
  send(node: SimNode, m: Message, snapData: KvState | undefined): void;
  applied(node: SimNode, entry: Entry): void;
  readState(node: SimNode, rs: ReadState): void;
}

const logKey = (i: number): string => `log/${String(i).padStart(12, '0')}`;

/**
 * Decoded commands by entry bytes. Every node of one simulation applies the same entry objects
 * (the simulated network shares them), so the simulation hands its nodes one cache and each
 * command is decoded once.
 */
export type DecodedCommands = WeakMap<Uint8Array, PutCommand>;

function decodeCached(cache: DecodedCommands, data: Uint8Array): PutCommand {
  let cmd = cache.get(data);
  if (!cmd) cache.set(data, (cmd = decodePut(data)));
  return cmd;
}

export class SimNode {
  raft!: RaftNode;
  storage!: MemoryStorage;
  kv: KvState = new Map();
  appliedIndex = 0;
  commitSeen = 0;
  up = true;
  /** Role and leader as of the last Ready (what a client-facing API would report cheaply). */
  role: Role = 'follower';
  leader: NodeId = '';
  /** Incremented on every restart: stale callbacks (snapshot reports) check it. */
  incarnation = 0;
  /** Data of the latest local snapshot (storage.snapshot()). */
  private snapData: KvState = new Map();
  /** Data of an incoming snapshot staged before its 'snap' message is stepped. */
  private staged: { index: number; data: KvState } | undefined;
  private diskFirst = 1;
  private diskLast = 0;

  constructor(
    readonly id: NodeId,
    readonly voters: readonly NodeId[],
    readonly disk: SimDisk<DiskValue>,
    private readonly params: NodeParams,
    private readonly random: () => number,
  ) {
    this.load();
  }

  /** Rebuilds the node from the disk's current view (after crash(): the durable state). */
  private load(): void {
    const storage = new MemoryStorage(this.voters);
    const snap = this.disk.read('snap');
    let snapIndex = 0;
    this.kv = new Map();
    this.snapData = new Map();
    if (snap && snap.kind === 'snap') {
      storage.applySnapshot(snap.meta);
      snapIndex = snap.meta.index;
      this.kv = new Map(snap.data);
      this.snapData = snap.data;
    }
    const ents: Entry[] = [];
    let maxKey = snapIndex;
    let minKey = snapIndex + 1;
    for (const [, v] of this.disk.entries('log/')) {
      if (v.kind !== 'entry') continue;
      const e = v.entry;
      maxKey = Math.max(maxKey, e.index);
      minKey = Math.min(minKey, e.index);
      if (e.index <= snapIndex) continue;
      // Only a contiguous run after the snapshot is the log (writes are atomic batches, so a
      // gap would mean corruption; stop there rather than invent entries).
      if (e.index !== snapIndex + ents.length + 1) break;
      ents.push(e);
    }
    storage.append(ents);
    const hs = this.disk.read('hs');
    if (hs && hs.kind === 'hs') {
      storage.setHardState({ ...hs.hs, commit: Math.min(Math.max(hs.hs.commit, snapIndex), storage.lastIndex()) });
    }
    this.storage = storage;
    this.diskFirst = minKey;
    this.diskLast = maxKey;
    this.appliedIndex = snapIndex;
    this.commitSeen = storage.initialState().hardState.commit;
    this.staged = undefined;
    this.role = 'follower';
    this.leader = '';
    this.raft = new RaftNode({
      id: this.id,
      storage,
      applied: snapIndex,
      electionTicks: this.params.electionTicks,
      heartbeatTicks: this.params.heartbeatTicks,
      maxSizePerMsg: this.params.maxSizePerMsg,
      maxInflightMsgs: this.params.maxInflightMsgs,
      preVote: this.params.preVote,
      checkQuorum: this.params.checkQuorum,
      random: this.random,
      mutations: this.params.mutations,
    });
  }

  crash(): void {
    this.disk.crash();
    this.up = false;
  }

  restart(): void {
    this.incarnation++;
    this.up = true;
    this.load();
  }

  /** Steps a delivered message; a 'snap' message's data is staged first, as the runtime does. */
  deliver(m: Message, snapData: KvState | undefined): void {
    if (m.type === 'snap' && m.snapshot && snapData) this.staged = { index: m.snapshot.index, data: snapData };
    this.raft.step(m);
  }

  /** Processes every pending Ready: persist, sync, send, apply, advance. */
  processReady(obs: NodeObserver): void {
    if (!this.raft.hasReady()) return;
    while (this.raft.hasReady()) {
      const rd = this.raft.ready();
      const prevCommit = this.commitSeen;
      if (rd.softState) {
        this.role = rd.softState.role;
        this.leader = rd.softState.leader;
      }
      this.persist(rd);
      if (rd.hardState) this.commitSeen = Math.max(this.commitSeen, rd.hardState.commit);
      if (rd.snapshot) this.commitSeen = Math.max(this.commitSeen, rd.snapshot.index);
      obs.persisted(this, rd, prevCommit);
      for (const m of rd.messages) {
        obs.send(this, m, m.type === 'snap' ? this.snapData : undefined);
      }
      for (const e of rd.committedEntries) {
        if (e.index <= this.appliedIndex) continue;
        if (e.type === 'normal' && e.data.length > 0) {
          const cmd = decodeCached(this.params.decoded, e.data);
          this.kv.set(cmd.key, cmd.value);
        }
        this.appliedIndex = e.index;
        obs.applied(this, e);
      }
      for (const rs of rd.readStates) obs.readState(this, rs);
      this.raft.advance(rd);
    }
    this.maybeCompact();
  }

  private persist(rd: Ready): void {
    const ops: DiskOp<DiskValue>[] = [];
    if (rd.snapshot) {
      const meta = rd.snapshot;
      const data = this.staged && this.staged.index === meta.index ? this.staged.data : undefined;
      if (!data) throw new Error(`${this.id}: snapshot ${meta.index} surfaced without staged data`);
      ops.push({ key: 'snap', value: { kind: 'snap', meta, data } });
      for (let i = this.diskFirst; i <= this.diskLast; i++) ops.push({ key: logKey(i), delete: true });
      this.storage.applySnapshot(meta);
      this.kv = new Map(data);
      this.snapData = data;
      this.appliedIndex = meta.index;
      this.diskFirst = meta.index + 1;
      this.diskLast = meta.index;
      this.staged = undefined;
    }
    if (rd.entries.length > 0) {
      for (const e of rd.entries) ops.push({ key: logKey(e.index), value: { kind: 'entry', entry: e } });
      const last = rd.entries[rd.entries.length - 1]!.index;
      // A conflicting append replaces the old suffix: drop keys past the new end.
      for (let i = last + 1; i <= this.diskLast; i++) ops.push({ key: logKey(i), delete: true });
      this.diskLast = last;
      this.storage.append(rd.entries);
    }
    if (rd.hardState) {
      ops.push({ key: 'hs', value: { kind: 'hs', hs: rd.hardState } });
      this.storage.setHardState(rd.hardState);
    }
    this.disk.writeBatch(ops);
    if (rd.mustSync) this.disk.sync();
  }

  /** Snapshots the applied state and compacts the log behind it (syncing first, as the runtime does). */
  private maybeCompact(): void {
    const first = this.storage.firstIndex();
    if (this.appliedIndex - first + 1 < this.params.compactEvery) return;
    const meta = this.storage.createSnapshot(this.appliedIndex);
    const data: KvState = new Map(this.kv);
    this.snapData = data;
    const upto = Math.max(first - 1, this.appliedIndex - this.params.compactKeep);
    const ops: DiskOp<DiskValue>[] = [{ key: 'snap', value: { kind: 'snap', meta, data } }];
    if (upto >= first) {
      this.storage.compact(upto);
      for (let i = this.diskFirst; i <= upto; i++) ops.push({ key: logKey(i), delete: true });
      this.diskFirst = upto + 1;
    }
    this.disk.writeBatch(ops);
    this.disk.sync();
  }

  /** The durable term at `index` (undefined when absent), and the durable snapshot index. */
  durableTerm(index: number): number | undefined {
    const v = this.disk.readDurable(logKey(index));
    return v && v.kind === 'entry' ? v.entry.term : undefined;
  }

  durableSnapshotIndex(): number {
    const v = this.disk.readDurable('snap');
    return v && v.kind === 'snap' ? v.meta.index : 0;
  }

  /** The term of `index` in the running log (undefined when compacted or absent). */
  termAt(index: number): number | undefined {
    try {
      return this.storage.term(index);
    } catch {
      return undefined;
    }
  }

  entryAt(index: number): Entry | undefined {
    try {
      return this.storage.entries(index, index + 1)[0];
    } catch {
      return undefined;
    }
  }
}
