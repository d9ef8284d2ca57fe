// What one Herald cluster node is to the rest of the server (the scheduler node, the public
// services, the cluster service) and the options it is created with (create-node.ts).

import type { ClientLimits } from '../auth/client-limits.js';
import type { RegisteredService } from '../grpc/recording-server.js';
import type { ConnectedWorker, StalledSlot, UnservedTaskType } from '../../gen/herald/v1/cluster_service.js';
import type { ChannelCredentials, Server } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { StateMachine } from '../../raft/state-machine.js';
import type { NodeId } from '../../raft/types.js';
import type { LogStore } from '../../raft/storage/log-store.js';
import type { LeaderChange, RaftDriver, RaftDriverOptions, RaftTimingOptions } from '../../raft/driver/raft-driver.js';
import type { ProposalData, ProposalOutcome } from '../../raft/driver/proposal-tracker.js';
import type { PeerInfo, PeerTransport } from '../peer/peer-transport.js';
import type { ClusterClock } from './cluster-clock.js';
import type { NodeTls } from '../grpc/tls/node-tls.js';
import type { ReportedFeatureLevels } from './feature-level-raise.js';

/** Builds the state machine in its own directory (the scheduler FSM plugs in here). */
export type StateMachineFactory = (dir: string) => Promise<StateMachine>;

/** The driver's log, snapshot and message limits, passed through as the driver documents them. */
type DriverLimits = Pick<
  RaftDriverOptions,
  'snapshotEntries' | 'compactionKeepEntries' | 'snapshotBytes' | 'compactionKeepBytes' | 'maxSizePerMsg' | 'maxInflightMsgs' | 'defaultProposalTimeoutMs' | 'maxProposalBytes'
>;

export interface NodeOptions extends Partial<RaftTimingOptions>, DriverLimits {
  id: NodeId;
  members: readonly PeerInfo[];
  /** host:port to listen on for peers (default: this member's peerAddress). */
  peerListen?: string;
  /** host:port to listen on for clients (default: this member's clientAddress, else 127.0.0.1:0). */
  clientListen?: string;
  dataDir: string;
  /** Written at bootstrap; when given on restart it must match. Default: derived from members. */
  clusterId?: string;
  /**
   * 'new' (default): an empty data dir bootstraps a member of a new cluster. 'existing': the
   * cluster already runs, so an empty data dir means this node lost its state (its vote among
   * it) and must not start as a voter: startup refuses with EMPTY_DATA_DIR. 'join': an empty
   * data dir starts a new member of the running cluster `clusterId` that knows no configuration:
   * it waits, as nobody's voter, to be added as a learner (`herald cluster add`).
   */
  initialClusterState?: 'new' | 'existing' | 'join';
  stateMachine: StateMachineFactory;
  logger: Logger;
  /** A follower gathers committed entries this long before applying them in one call (RaftDriver; default 200). */
  followerApplyWindowMs?: number;
  /** Effects replication (RaftDriver replicateEffects; default on). */
  replicateEffects?: boolean;
  /** Negative control only: the skip-fsync control for this node's log (RaftDriver unsafeSkipFsync; needs the unsafe opt-in). */
  unsafeSkipFsync?: boolean;
  /**
   * TLS on the client port and mutual TLS on the peer port (node-tls.ts). Absent: both ports are
   * plaintext (the CLI allows that only with --insecure).
   */
  tls?: NodeTls;
  /**
   * Wraps the client server before any service is added (the scheduler's auth guard,
   * auth/grpc-call-guard.ts): every service, ClusterService included, is added through it.
   */
  wrapClientServer?: (server: Server, node: HeraldNode) => Server;
  /** TLS handshake and idle timeouts, HTTP/2 stream backstop of the client port (auth/client-limits.ts; defaults there). */
  clientLimits?: ClientLimits;
  /**
   * The highest cluster feature level this node's build supports, reported to peers on every
   * batch (default 0: a state machine without feature levels). A function so a test can change it.
   */
  featureLevel?: () => number;
  /** The cluster feature level the state machine applied (GetStatus; default 0: none). */
  clusterFeatureLevel?: () => number;
  /**
   * The state machine's highest applied command time. Given, a leader's cluster time is unknown
   * until its read barrier has passed and never below this then (leader-time-floor.ts).
   */
  highestCommandTimeMs?: () => number;
  /** Checks a command a peer forwards before it is proposed (undefined: fine; else why not). */
  checkCommand?: (command: Uint8Array) => string | undefined;
  /** Adds the caller's services (JobService, ...) to the client server before it starts. */
  registerClientServices?: (server: Server, node: HeraldNode) => void;
  /** For ClusterService status: task types waiting with no worker, as this node's leader watchdog saw them. */
  unservedTaskTypes?: () => UnservedTaskType[];
  /** The worker streams connected to this node while it leads (ClusterService.ListWorkers). */
  connectedWorkers?: () => ConnectedWorker[];
  /** Slots the leader's watchdog flagged as stalled at its last check (ListWorkers). */
  stalledSlots?: () => StalledSlot[];
}

/** A proposal's deadline when neither its caller nor the node's options set one. */
export const DEFAULT_PROPOSAL_TIMEOUT_MS = 10_000;

/**
 * Long enough to take a herd run's claim and its finish into one follower transaction (they come
 * 100–300 ms apart under load): a herd's followers then write fewer LevelDB operations.
 * Short enough that a follower is never far behind; reads and leadership end the window early.
 */
export const DEFAULT_FOLLOWER_APPLY_WINDOW_MS = 200;
/** Reads stay prompt whatever the window (they end it), but a follower should never lag by more. */
export const MAX_FOLLOWER_APPLY_WINDOW_MS = 2000;

export interface ProposeOptions {
  timeoutMs?: number;
  /** On a follower, forward to the leader (default true); false rejects with NOT_LEADER. */
  forward?: boolean;
  /**
   * Resolve once the leader has evaluated the entry, before its state machine write lands
   * (RaftDriver.propose): for a caller that answers with the result alone.
   */
  answerOnceEvaluated?: boolean;
}

export interface HeraldNode {
  readonly id: NodeId;
  readonly clusterId: string;
  readonly peerPort: number;
  readonly clientPort: number;
  /** The members in force (the configuration's, at their recorded or flagged addresses). */
  readonly members: readonly PeerInfo[];
  /** This node's incarnation, chosen at its first start ('' in data dirs from before incarnations). */
  readonly incarnation: string;
  /** The feature level this node's build supports (NodeOptions.featureLevel; 0 without). */
  supportedFeatureLevel(): number;
  /** The cluster feature level this node's state machine applied (NodeOptions.clusterFeatureLevel; 0 without). */
  clusterFeatureLevel(): number;
  /** What each peer last reported supporting on its peer stream. */
  readonly reportedFeatureLevels: ReportedFeatureLevels;
  readonly driver: RaftDriver;
  readonly transport: PeerTransport;
  readonly stateMachine: StateMachine;
  readonly logStore: LogStore;
  readonly clusterClock: ClusterClock;
  /** The services on the client port, with their handlers (the HTTP port serves the same ones). */
  readonly clientServices: readonly RegisteredService[];
  /** Credentials for dialling another member's client port (forwarding a call to the leader). */
  readonly forwardingCredentials: ChannelCredentials;
  readonly events: RaftDriver['events'];
  /** Proposes a command; a follower forwards it to the leader's peer port (proposer.ts). */
  propose(command: ProposalData, options?: ProposeOptions): Promise<ProposalOutcome>;
  /**
   * On the leader only (never forwarded): proposes the commands as adjacent log entries, in
   * order, so that each applies right after the one before it (a fire and the claim behind it).
   */
  proposeBackToBack(commands: readonly ProposalData[], options?: { timeoutMs?: number }): Promise<ProposalOutcome>[];
  /** Linearizable read barrier: resolves once this node applied at least the read index. */
  readIndex(options?: { timeoutMs?: number }): Promise<number>;
  leader(): LeaderChange;
  transferLeadership(target?: NodeId): Promise<LeaderChange>;
  /**
   * Before a shutdown, on the leader of a multi-node cluster: lets the proposals in flight apply
   * (bounded), then transfers leadership; does nothing elsewhere. stop() does this itself; a
   * caller that acts between the handover and the stop (redirecting workers to the new leader)
   * calls it first. Rejects when the transfer fails.
   */
  handOver(options?: { graceMs?: number }): Promise<void>;
  /**
   * Bounded shutdown: a leader hands leadership over first unless transfer is false, and the
   * proposals this node appended as leader get their results before the driver stops.
   */
  stop(options?: { transfer?: boolean; graceMs?: number }): Promise<void>;
}
