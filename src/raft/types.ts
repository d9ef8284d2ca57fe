// The vocabulary of Herald's Raft: shared by the pure core (src/raft/core), the simulator and
// the runtime (storage, transport, driver). Modelled on etcd's raftpb.
//
// Indexes and terms are plain numbers (safe up to 2^53, far beyond any log we will write).

export type NodeId = string;

export type MessageType =
  | 'vote'
  | 'voteResp'
  | 'preVote'
  | 'preVoteResp'
  | 'app'
  | 'appResp'
  | 'heartbeat'
  | 'heartbeatResp'
  | 'snap'
  | 'timeoutNow'
  | 'readIndex'
  | 'readIndexResp';

/** 'normal' carries a state machine command (empty data = the leader's no-op); 'config' a ConfState. */
export type EntryType = 'normal' | 'config';

export interface Entry {
  readonly term: number;
  readonly index: number;
  readonly type: EntryType;
  readonly data: Uint8Array;
}

/** The cluster configuration: a value in the log ('config' entries) and in snapshots. */
export interface ConfState {
  readonly voters: readonly NodeId[];
  /** Non-voting members: they receive the log and snapshots but never count toward a quorum. */
  readonly learners?: readonly NodeId[];
  /**
   * Members' incarnations (chosen at a member's first start, on an empty data dir), where known:
   * transports refuse messages from, and do not deliver messages to, an incarnation not listed.
   */
  readonly incarnations?: Readonly<Record<NodeId, string>>;
  /**
   * Members' addresses, where known (recorded by runtime changes, so a node that joins later,
   * or restarts with stale flags, can reach every member without being told on its command line).
   */
  readonly addresses?: Readonly<Record<NodeId, MemberAddresses>>;
}

export interface MemberAddresses {
  /** host:port of the member's RaftService. */
  peer: string;
  /** host:port of its public API ('' when unknown). */
  client: string;
}

export interface SnapshotMeta {
  /** Last log index included in the snapshot. */
  readonly index: number;
  /** Term of that entry. */
  readonly term: number;
  readonly conf: ConfState;
}

export interface Message {
  type: MessageType;
  from: NodeId;
  to: NodeId;
  term: number;
  /** app: term of the entry before `entries`; vote: term of the candidate's last entry. */
  logTerm: number;
  /** app: index of the entry before `entries`; vote: last index; appResp: match or rejected index. */
  index: number;
  entries: Entry[];
  commit: number;
  reject: boolean;
  /** appResp reject: the follower's suggestion for the next probe (fast backtracking). */
  rejectHint: number;
  /** appResp reject: term of the follower's entry at rejectHint (0 when none). */
  rejectHintTerm: number;
  /** snap: the snapshot to install (the runtime ships its data out of band). */
  snapshot?: SnapshotMeta;
  /** readIndex / heartbeat context; the campaign-transfer marker on vote. */
  context?: Uint8Array;
}

/** Durable per-node state; persisted (synced) before any message that depends on it is sent. */
export interface HardState {
  term: number;
  /** '' when this node has not voted in `term`. */
  vote: NodeId;
  commit: number;
}

export type Role = 'follower' | 'preCandidate' | 'candidate' | 'leader';

export interface SoftState {
  /** '' when no leader is known. */
  leader: NodeId;
  role: Role;
}

/** A linearizable read may be served once the local applied index reaches `index`. */
export interface ReadState {
  index: number;
  context: Uint8Array;
}

/**
 * Everything the core wants done, in etcd's order: persist `hardState`, `entries` and
 * `snapshot` (one atomic write, fsynced when `mustSync`), then send `messages`, then apply
 * `committedEntries`, then call `advance(ready)`.
 */
export interface Ready {
  softState?: SoftState;
  hardState?: HardState;
  entries: Entry[];
  snapshot?: SnapshotMeta;
  committedEntries: Entry[];
  messages: Message[];
  readStates: ReadState[];
  mustSync: boolean;
}

/**
 * The stable log as the core sees it (etcd's Storage). Synchronous: the runtime keeps the log
 * tail in memory (as etcd's MemoryStorage does) and mirrors it to LevelDB.
 * `term(i)` is defined for snapshot().index <= i <= lastIndex().
 */
export interface LogStorage {
  initialState(): { hardState: HardState; conf: ConfState };
  /** Entries in [lo, hi), at most maxBytes of data (always at least one entry when lo < hi). */
  entries(lo: number, hi: number, maxBytes?: number): Entry[];
  term(index: number): number;
  firstIndex(): number;
  lastIndex(): number;
  snapshot(): SnapshotMeta;
}
