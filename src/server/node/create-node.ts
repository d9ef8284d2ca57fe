// One Herald cluster node: the durable Raft log, the state machine, the peer transport and the
// driver, the peer port (RaftService) and the client port (ClusterService + whatever services
// the caller registers, e.g. the scheduler's JobService later).
//
// Startup refuses to serve on bad data: another cluster's identity (CLUSTER_MISMATCH) or a
// corrupt/inconsistent log (CORRUPT_STORAGE). Shutdown is bounded: a leader hands leadership
// over first, waits briefly for its in-flight proposals to settle, then closes everything.

import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Metadata, Server, ServerCredentials, type ServiceError } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { RaftServiceClient } from '../../gen/herald/raft/v1/raft.js';
import { ClusterServiceService } from '../../gen/herald/v1/cluster_service.js';
import { HeraldError, isHeraldError } from '../../herald-error.js';
import type { StateMachine } from '../../raft/state-machine.js';
import type { NodeId } from '../../raft/types.js';
import { LogStore } from '../../raft/storage/log-store.js';
import { DEFAULT_MAX_BATCH_BYTES, PeerRaftClient, PeerTransport, peerChannelOptions, type PeerInfo } from '../peer/peer-transport.js';
import { PEER_RAFT_SERVICE } from '../peer/stream-request-codec.js';
import { RaftDriver, type LeaderChange, type RaftDriverEvents, type RaftTimingOptions } from '../../raft/driver/raft-driver.js';
import type { ProposalOutcome } from '../../raft/driver/proposal-tracker.js';
import { StagedSnapshots, pruneStagedSnapshots, readSnapshotFile, stagedSnapshotPath } from '../../raft/storage/snapshot-files.js';
import { systemMonotonicClock } from '../../raft/driver/monotonic-clock.js';
import { systemTimers } from '../../raft/system-timers.js';
import { ClusterClock } from './cluster-clock.js';
import { createClusterService } from './cluster-service.js';
import { fromServiceError } from '../grpc/grpc-errors.js';
import { FORWARDED_KEY, createPeerService } from '../peer/peer-server.js';
import { deriveClusterId } from './node-config.js';
import { enableNoDelay } from '../grpc/grpc-no-delay.js';
import { CLIENT_SERVER_OPTIONS } from '../grpc/server-conventions.js';
import { credentials } from '@grpc/grpc-js';

/** Builds the state machine in its own directory (the scheduler FSM plugs in here). */
export type StateMachineFactory = (dir: string) => Promise<StateMachine>;

export interface NodeOptions extends Partial<RaftTimingOptions> {
  id: NodeId;
  members: readonly PeerInfo[];
  /** host:port to listen on for peers (default: this member's peerAddress). */
  peerListen?: string;
  /** host:port to listen on for clients (default: this member's clientAddress, else 127.0.0.1:0). */
  clientListen?: string;
  dataDir: string;
  /** Written at bootstrap; when given on restart it must match. Default: derived from members. */
  clusterId?: string;
  stateMachine: StateMachineFactory;
  logger: Logger;
  snapshotEntries?: number;
  compactionKeepEntries?: number;
  snapshotBytes?: number;
  compactionKeepBytes?: number;
  maxSizePerMsg?: number;
  maxInflightMsgs?: number;
  defaultProposalTimeoutMs?: number;
  /** Largest command a proposal may carry (default 4 MiB). */
  maxProposalBytes?: number;
  /** A follower gathers committed entries this long before applying them in one call (RaftDriver; default 200). */
  followerApplyWindowMs?: number;
  /** Effects replication (RaftDriver replicateEffects; default on). */
  replicateEffects?: boolean;
  /** Negative control only: the skip-fsync control for this node's log (RaftDriver unsafeSkipFsync; needs the unsafe opt-in). */
  unsafeSkipFsync?: boolean;
  /** Adds the caller's services (JobService, ...) to the client server before it starts. */
  registerClientServices?: (server: Server, node: HeraldNode) => void;
}

/**
 * Long enough to take a herd run's claim and its finish into one follower transaction (they come
 * 100–300 ms apart under load): a herd's followers then write ~30 % fewer LevelDB operations.
 * Short enough that a follower is never far behind; reads and leadership end the window early.
 */
export const DEFAULT_FOLLOWER_APPLY_WINDOW_MS = 200;
/** Reads stay prompt whatever the window (they end it), but a follower should never lag by more. */
export const MAX_FOLLOWER_APPLY_WINDOW_MS = 2000;

export interface ProposeOptions {
  timeoutMs?: number;
  /** On a follower, forward to the leader (default true); false rejects with NOT_LEADER. */
  forward?: boolean;
}

export interface HeraldNode {
  readonly id: NodeId;
  readonly clusterId: string;
  readonly peerPort: number;
  readonly clientPort: number;
  readonly members: readonly PeerInfo[];
  readonly driver: RaftDriver;
  readonly transport: PeerTransport;
  readonly stateMachine: StateMachine;
  readonly logStore: LogStore;
  readonly clusterClock: ClusterClock;
  readonly events: RaftDriver['events'];
  propose(command: Uint8Array, options?: ProposeOptions): Promise<ProposalOutcome>;
  /**
   * On the leader only (never forwarded): proposes the commands as adjacent log entries, in
   * order, so that each applies right after the one before it (a fire and the claim behind it).
   */
  proposeBackToBack(commands: readonly Uint8Array[], options?: { timeoutMs?: number }): Promise<ProposalOutcome>[];
  /** Linearizable read barrier: resolves once this node applied at least the read index. */
  readIndex(options?: { timeoutMs?: number }): Promise<number>;
  leader(): LeaderChange;
  transferLeadership(target?: NodeId): Promise<LeaderChange>;
  /** Bounded shutdown; a leader transfers leadership first unless transfer is false. */
  stop(options?: { transfer?: boolean; graceMs?: number }): Promise<void>;
}

export async function createNode(o: NodeOptions): Promise<HeraldNode> {
  const self = o.members.find((m) => m.id === o.id);
  if (!self) throw new HeraldError('INVALID_ARGUMENT', `--id ${o.id} is not one of the members (${o.members.map((m) => m.id).join(', ')})`);
  const log = o.logger;
  await mkdir(o.dataDir, { recursive: true });
  const snapshotDir = join(o.dataDir, 'snapshots');
  await mkdir(snapshotDir, { recursive: true });

  const logStore = await LogStore.open(join(o.dataDir, 'raft'));
  let stateMachine: StateMachine | undefined;
  const cleanup = async () => {
    await stateMachine?.close().catch(() => undefined);
    await logStore.close().catch(() => undefined);
  };
  try {
    // Identity: bootstrap writes it; a restart must find the same cluster.
    const voters = o.members.map((m) => m.id).sort();
    const identity = await logStore.readIdentity();
    let clusterId: string;
    if (!identity) {
      if (!(await logStore.isEmpty())) {
        throw new HeraldError('CORRUPT_STORAGE', `data dir ${o.dataDir} holds a Raft log but no cluster identity`);
      }
      clusterId = o.clusterId ?? deriveClusterId(o.members);
      await logStore.writeIdentity({ clusterId, voters });
      log.info({ clusterId, voters }, 'bootstrapped a new cluster member');
    } else {
      clusterId = identity.clusterId;
      if (o.clusterId !== undefined && o.clusterId !== identity.clusterId) {
        throw new HeraldError(
          'CLUSTER_MISMATCH',
          `data dir ${o.dataDir} belongs to cluster ${identity.clusterId}, not ${o.clusterId}; refusing to join another cluster`,
        );
      }
      if (identity.voters.join(',') !== voters.join(',')) {
        throw new HeraldError(
          'CLUSTER_MISMATCH',
          `data dir ${o.dataDir} belongs to cluster ${identity.clusterId} with members [${identity.voters.join(', ')}], not [${voters.join(', ')}]`,
        );
      }
    }

    const storage = await logStore.load({ voters: identity?.voters ?? voters });
    stateMachine = await o.stateMachine(join(o.dataDir, 'sm'));
    let applied = await stateMachine.appliedIndex();
    const base = storage.firstIndex() - 1;
    if (applied < base) {
      // The log records a snapshot the state machine has not (fully) restored: finish it.
      const snap = storage.snapshot();
      const path = stagedSnapshotPath(snapshotDir, snap);
      log.warn({ applied, snapshot: snap.index }, 'state machine is behind the snapshot point; restoring the staged snapshot');
      try {
        await stateMachine.restore(snap, readSnapshotFile(path));
      } catch (e) {
        throw new HeraldError(
          'CORRUPT_STORAGE',
          `state machine applied index ${applied} is behind the log's compaction point ${base} and the staged snapshot ${path} cannot be restored (${e instanceof Error ? e.message : String(e)})`,
        );
      }
      applied = await stateMachine.appliedIndex();
      await pruneStagedSnapshots(snapshotDir);
    }
    if (applied > storage.lastIndex()) {
      throw new HeraldError('CORRUPT_STORAGE', `state machine applied index ${applied} is beyond the last log entry ${storage.lastIndex()}`);
    }

    let driver!: RaftDriver;
    let clusterClock: ClusterClock | undefined;
    const transport = new PeerTransport({
      selfId: o.id,
      clusterId,
      peers: o.members,
      logger: log.child({ c: 'transport' }),
      onUnreachable: (peer) => driver?.reportUnreachable(peer),
      // Heartbeat responses carry the peer's wall clock and give an RTT sample (cluster time).
      onPeerClock: (peer, wallUnixMs, rttMs) => clusterClock?.observe(peer, wallUnixMs, rttMs),
    });
    driver = new RaftDriver(
      {
        id: o.id,
        members: o.members,
        log: logStore,
        storage,
        stateMachine,
        transport,
        snapshots: new StagedSnapshots(snapshotDir),
        timers: systemTimers,
        logger: log.child({ c: 'raft' }),
        tickMs: o.tickMs,
        electionTicks: o.electionTicks,
        heartbeatTicks: o.heartbeatTicks,
        snapshotEntries: o.snapshotEntries,
        compactionKeepEntries: o.compactionKeepEntries,
        snapshotBytes: o.snapshotBytes,
        compactionKeepBytes: o.compactionKeepBytes,
        maxSizePerMsg: o.maxSizePerMsg,
        maxInflightMsgs: o.maxInflightMsgs,
        defaultProposalTimeoutMs: o.defaultProposalTimeoutMs,
        maxProposalBytes: o.maxProposalBytes,
        followerApplyWindowMs: o.followerApplyWindowMs ?? DEFAULT_FOLLOWER_APPLY_WINDOW_MS,
        replicateEffects: o.replicateEffects ?? true,
        unsafeSkipFsync: o.unsafeSkipFsync,
      },
      applied,
    );
    clusterClock = new ClusterClock({
      selfId: o.id,
      voters,
      wall: { nowMs: () => Date.now() },
      monotonic: systemMonotonicClock,
      maxSampleAgeMs: driver.electionTimeoutMs() * 2,
    });
    // A new term starts from fresh reports (the clock's samples belong to one leadership).
    driver.events.on('lostLeadership', () => clusterClock?.reset());

    // Proposals from this node's clients; a follower forwards to the leader's peer port. Errors
    // that guarantee the command was not appended (no leader, not leader, a forward that never
    // reached anyone) are retried until the deadline; anything else goes back to the caller.
    const propose = async (command: Uint8Array, opts: ProposeOptions = {}): Promise<ProposalOutcome> => {
      const timeoutMs = opts.timeoutMs ?? o.defaultProposalTimeoutMs ?? 10_000;
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const remaining = deadline - Date.now();
        if (remaining <= 0) throw new HeraldError('PROPOSAL_TIMEOUT', `no leader accepted the proposal within ${timeoutMs} ms`);
        try {
          if (driver.isLeader() || opts.forward === false) return await driver.propose(command, { timeoutMs: remaining });
          const leaderId = driver.leaderChange().leaderId;
          if (!leaderId) {
            await waitLeader(Math.min(remaining, 100));
            continue;
          }
          return await forwardTo(leaderId, command, remaining);
        } catch (e) {
          if (opts.forward === false || !isHeraldError(e)) throw e;
          const retry =
            e.code === 'NO_LEADER' ||
            (e.code === 'NOT_LEADER' && (e.details.remote === true || !driver.isLeader())) ||
            (e.code === 'SHUTTING_DOWN' && e.details.remote === true) ||
            e.details.neverSent === true;
          if (!retry || Date.now() + 10 >= deadline) throw e;
          await waitLeader(Math.min(deadline - Date.now(), 50));
        }
      }
    };
    const waitLeader = (ms: number) =>
      new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(t);
          driver.events.off('leaderChanged', done);
          resolve();
        };
        const t = setTimeout(done, Math.max(1, ms));
        driver.events.on('leaderChanged', done);
      });
    const forwardTo = (leaderId: NodeId, command: Uint8Array, timeoutMs: number): Promise<ProposalOutcome> => {
      const client = transport.client(leaderId);
      if (!client) throw new HeraldError('NOT_LEADER', `unknown leader ${leaderId}`);
      const md = new Metadata();
      md.set(FORWARDED_KEY, o.id);
      return new Promise((resolve, reject) => {
        client.forward(
          { clusterId, command: Buffer.from(command.buffer, command.byteOffset, command.byteLength), timeoutMs },
          md,
          { deadline: Date.now() + timeoutMs + 1000 },
          (err: ServiceError | null, resp) => (err ? reject(fromServiceError(err, true)) : resolve({ index: resp.index, result: resp.result })),
        );
      });
    };

    const peerServer = new Server({
      'grpc.max_receive_message_length': DEFAULT_MAX_BATCH_BYTES + 1024 * 1024,
      'grpc.max_send_message_length': DEFAULT_MAX_BATCH_BYTES + 1024 * 1024,
    });
    peerServer.addService(
      PEER_RAFT_SERVICE,
      createPeerService({
        selfId: o.id,
        clusterId,
        driver,
        transport,
        snapshotDir,
        logger: log.child({ c: 'peer' }),
        propose: (command, timeoutMs, mayForward) => propose(command, { timeoutMs, forward: mayForward }),
      }),
    );
    const peerPort = await bind(peerServer, o.peerListen ?? self.peerAddress);

    let stopping: Promise<void> | undefined;
    const node: HeraldNode = {
      id: o.id,
      clusterId,
      peerPort,
      clientPort: 0,
      members: o.members,
      driver,
      transport,
      stateMachine,
      logStore,
      clusterClock: clusterClock!,
      events: driver.events,
      propose,
      proposeBackToBack: (commands, opts) => driver.proposeAll(commands, opts),
      readIndex: (opts) => driver.readIndex(opts),
      leader: () => driver.leaderChange(),
      transferLeadership: async (target) => {
        if (driver.isLeader()) return driver.transferLeadership(target);
        throw driver.leaderChange().leaderId
          ? new HeraldError('NOT_LEADER', `node ${o.id} is not the leader`, {
              leaderId: driver.leaderChange().leaderId,
              leaderAddress: driver.leaderChange().leaderAddress || undefined,
            })
          : new HeraldError('NO_LEADER', 'no leader is known');
      },
      stop: (opts = {}) => (stopping ??= shutdown(opts)),
    };

    // Keepalive for long-lived worker streams and the 64 MiB message limit of the public API.
    const clientServer = new Server(CLIENT_SERVER_OPTIONS);
    clientServer.addService(ClusterServiceService, createClusterService(node));
    o.registerClientServices?.(clientServer, node);
    const clientPort = await bind(clientServer, o.clientListen ?? (self.clientAddress || '127.0.0.1:0'));
    (node as { clientPort: number }).clientPort = clientPort;

    const sm = stateMachine;
    const shutdown = async ({ transfer = true, graceMs = 5000 }: { transfer?: boolean; graceMs?: number }) => {
      const deadline = Date.now() + graceMs;
      if (transfer && driver.isLeader() && o.members.length > 1) {
        try {
          // Up to half the grace: on a loaded machine the target's election can outlast two
          // election timeouts, and a slower handover beats failing every proposal in flight.
          const to = await driver.transferLeadership(undefined, Math.min(graceMs, Math.max(driver.electionTimeoutMs() * 2, graceMs / 2)));
          log.info({ leader: to.leaderId }, 'handed leadership over before shutdown');
          // Entries this node appended are committed by the new leader; wait (bounded) so the
          // proposals waiting here see their results instead of OUTCOME_UNKNOWN.
          const st = driver.status();
          await Promise.race([driver.waitApplied(st.lastIndex).catch(() => undefined), sleep(Math.max(0, deadline - Date.now()))]);
        } catch (e) {
          log.warn({ err: e }, 'leadership transfer before shutdown failed; stopping anyway');
        }
      }
      await driver.stop();
      transport.stop();
      await Promise.all([tryShutdown(peerServer, 1000), tryShutdown(clientServer, 1000)]);
      await sm.close().catch((e: unknown) => log.warn({ err: e }, 'state machine close failed'));
      await logStore.close();
    };

    driver.start();
    log.info({ id: o.id, clusterId, peerPort, clientPort, applied, lastIndex: storage.lastIndex() }, 'node started');
    return node;
  } catch (e) {
    await cleanup();
    throw e;
  }
}

function bind(server: Server, addr: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(addr, ServerCredentials.createInsecure(), (err, port) => {
      if (err) return reject(err);
      enableNoDelay(server);
      resolve(port);
    });
  });
}

function tryShutdown(server: Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(t);
      resolve();
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A client for a node's peer port (tests, benches and tools use Forward/ReadIndex with it). */
export function raftClient(address: string): RaftServiceClient {
  return new PeerRaftClient(address, credentials.createInsecure(), peerChannelOptions(DEFAULT_MAX_BATCH_BYTES + 1024 * 1024));
}

export type { RaftDriverEvents };
