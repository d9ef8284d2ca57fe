// One Herald cluster node: the durable Raft log, the state machine, the peer transport and the
// driver, the peer port (RaftService) and the client port (ClusterService + whatever services
// the caller registers, e.g. the scheduler's JobService later).
//
// Startup refuses to serve on bad data: another cluster's identity (CLUSTER_MISMATCH) or a
// corrupt/inconsistent log (CORRUPT_STORAGE). Shutdown is bounded: a leader lets its proposals in
// flight apply, hands leadership over, waits briefly for what the new leader commits for it, then
// closes everything (leadership-handover.ts).

import { ReportedFeatureLevels } from './feature-level-raise.js';
import { HeardIncarnations, bindNextIncarnation } from './incarnation-binder.js';
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Server, ServerCredentials, credentials } from '@grpc/grpc-js';
import { RecordingServer } from '../grpc/recording-server.js';
import { ClusterServiceService } from '../../gen/herald/v1/cluster_service.js';
import { HeraldError } from '../../herald-error.js';
import type { StateMachine } from '../../raft/state-machine.js';
import { LogStore } from '../../raft/storage/log-store.js';
import { DEFAULT_MAX_BATCH_BYTES, PeerTransport } from '../peer/peer-transport.js';
import { PEER_RAFT_SERVICE } from '../peer/stream-request-codec.js';
import { RaftDriver } from '../../raft/driver/raft-driver.js';
import { StagedSnapshots, pruneStagedSnapshots, readSnapshotFile, stagedSnapshotPath } from '../../raft/storage/snapshot-files.js';
import { systemMonotonicClock } from '../../raft/monotonic-clock.js';
import { systemTimers } from '../../raft/system-timers.js';
import { ClusterClock } from './cluster-clock.js';
import { armLeaderTimeFloor } from './leader-time-floor.js';
import { createClusterService } from './cluster-service.js';
import { createPeerService } from '../peer/peer-server.js';
import { deriveClusterId } from './node-config.js';
import { confInLog, membersOf } from '../../raft/core/membership.js';
import { membersInForce } from './member-directory.js';
import { enableNoDelay } from '../grpc/grpc-no-delay.js';
import { CLIENT_SERVER_OPTIONS } from '../grpc/server-conventions.js';
import { clientLimitsOf, clientServerOptions, withHandshakeTimeout } from '../auth/client-limits.js';
import { guardConnections } from '../auth/connection-guard.js';
import { callerMemberIds } from '../grpc/tls/node-tls.js';
import { DEFAULT_FOLLOWER_APPLY_WINDOW_MS, DEFAULT_PROPOSAL_TIMEOUT_MS, type HeraldNode, type NodeOptions } from './herald-node.js';
import { createProposer } from './proposer.js';
import { ForwardLinger } from './forward-linger.js';
import { LeadershipHandover } from './leadership-handover.js';

/** How often the leader looks for a member to bind to its incarnation (incarnation-binder.ts). */
const INCARNATION_BIND_CHECK_MS = 200;

/** How long stop() may take when its caller gives no grace. */
const DEFAULT_STOP_GRACE_MS = 5000;

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
    let incarnation = identity?.incarnation ?? '';
    if (!identity) {
      if (!(await logStore.isEmpty())) {
        throw new HeraldError('CORRUPT_STORAGE', `data dir ${o.dataDir} holds a Raft log but no cluster identity`);
      }
      if (o.initialClusterState === 'existing') {
        // A voter that lost its data dir lost its vote too: as a voter it could vote twice in
        // one term. It comes back only as a new member (docs/membership.md).
        throw new HeraldError(
          'EMPTY_DATA_DIR',
          `data dir ${o.dataDir} is empty but --initial-cluster-state is existing: ${o.id} has no record of its votes and must not start as a voter. ` +
            `From a running node, remove the old member and add this node as a new one (\`herald cluster remove ${o.id}\`, then \`herald cluster add ${o.id} --peer-addr H:P --client-addr H:P\`), ` +
            `or use --initial-cluster-state new only to bootstrap a brand-new cluster`,
        );
      }
      incarnation = randomBytes(8).toString('hex');
      if (o.initialClusterState === 'join') {
        // Nobody's voter: it learns the configuration from the leader once it is added.
        if (!o.clusterId) throw new HeraldError('INVALID_ARGUMENT', 'joining a cluster needs its cluster id');
        clusterId = o.clusterId;
        await logStore.writeIdentity({ clusterId, voters: [], incarnation });
        log.info({ clusterId, incarnation }, `joining cluster as a new member; add it from any node: herald cluster add ${o.id} --peer-addr H:P --client-addr H:P`);
      } else {
        clusterId = o.clusterId ?? deriveClusterId(o.members);
        await logStore.writeIdentity({ clusterId, voters, incarnation });
        log.info({ clusterId, voters, incarnation }, 'bootstrapped a new cluster member');
      }
    } else {
      clusterId = identity.clusterId;
      if (o.clusterId !== undefined && o.clusterId !== identity.clusterId) {
        throw new HeraldError(
          'CLUSTER_MISMATCH',
          `data dir ${o.dataDir} belongs to cluster ${identity.clusterId}, not ${o.clusterId}; refusing to join another cluster`,
        );
      }
    }

    const storage = await logStore.load({ voters: identity ? identity.voters : o.initialClusterState === 'join' ? [] : voters });
    // Once the cluster changed its configuration (or this node joined one), the log says who the
    // members are and --peers only seeds addresses; until then --peers must match the bootstrap.
    const logConf = confInLog(storage);
    const bootstrapConf = identity !== undefined && identity.voters.length > 0 && [...membersOf(logConf)].sort().join(',') === identity.voters.join(',');
    if (identity && bootstrapConf && identity.voters.join(',') !== voters.join(',')) {
      throw new HeraldError(
        'CLUSTER_MISMATCH',
        `data dir ${o.dataDir} belongs to cluster ${identity.clusterId} with members [${identity.voters.join(', ')}], not [${voters.join(', ')}]`,
      );
    }
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
      peers: membersInForce(logConf, o.members),
      logger: log.child({ c: 'transport' }),
      onUnreachable: (peer) => driver?.reportUnreachable(peer),
      // Heartbeat responses carry the peer's wall clock and give an RTT sample (cluster time).
      onPeerClock: (peer, wallUnixMs, rttMs) => clusterClock?.observe(peer, wallUnixMs, rttMs),
      // The driver's own defaults (raft-driver.ts) when the options leave them out.
      electionTimeoutMs: (o.tickMs ?? 100) * (o.electionTicks ?? 10),
      ...(o.tls ? { channelCredentials: (peer: string) => o.tls!.peerChannelCredentials(peer) } : {}),
      incarnation,
      conf: () => driver?.confState(),
      featureLevel: () => o.featureLevel?.() ?? 0,
    });
    const reportedFeatureLevels = new ReportedFeatureLevels();
    const heardIncarnations = new HeardIncarnations();
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
      voters: () => driver.confState().voters,
      wall: { nowMs: () => Date.now() },
      monotonic: systemMonotonicClock,
      maxSampleAgeMs: driver.electionTimeoutMs() * 2,
      floorRequired: o.highestCommandTimeMs !== undefined,
    });
    // A new term starts from fresh reports (the clock's samples belong to one leadership).
    driver.events.on('lostLeadership', () => clusterClock?.reset());
    if (o.highestCommandTimeMs) {
      armLeaderTimeFloor({ driver, clock: clusterClock, highestCommandTimeMs: o.highestCommandTimeMs, timers: systemTimers, live: () => stopping === undefined });
    }

    const handover = new LeadershipHandover(driver, systemMonotonicClock, log);
    const forwardLinger = new ForwardLinger(systemMonotonicClock);
    const propose = createProposer({
      selfId: o.id,
      clusterId,
      driver,
      peerClient: (id) => transport.client(id),
      defaultTimeoutMs: o.defaultProposalTimeoutMs ?? DEFAULT_PROPOSAL_TIMEOUT_MS,
      clock: systemMonotonicClock,
    });

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
        incarnation,
        onFeatureLevel: (from, level) => reportedFeatureLevels.report(from, level),
        onIncarnation: (from, inc) => heardIncarnations.hear(from, inc),
        ...(o.checkCommand ? { checkCommand: o.checkCommand } : {}),
        onForwarded: () => forwardLinger.seen(),
        // A joining node knows no member yet: it takes any member of the peer CA (a leader reaching it).
        ...(o.tls ? { peerIdentity: callerMemberIds, memberIds: () => (membersOf(driver.confState()).length > 0 ? membersInForce(driver.confState(), o.members).map((m) => m.id) : o.members.map((m) => m.id)) } : {}),
      }),
    );
    const peerPort = await bind(peerServer, o.peerListen ?? self.peerAddress, o.tls?.peerServerCredentials());

    let stopping: Promise<void> | undefined;
    // Keepalive for long-lived worker streams and the 64 MiB message limit of the public API.
    const limits = o.clientLimits ?? clientLimitsOf();
    const clientServer = new RecordingServer({ ...CLIENT_SERVER_OPTIONS, ...clientServerOptions(limits) });
    const node: HeraldNode = {
      id: o.id,
      clusterId,
      peerPort,
      clientPort: 0,
      get members() {
        return membersInForce(driver.confState(), o.members);
      },
      incarnation,
      supportedFeatureLevel: () => o.featureLevel?.() ?? 0,
      clusterFeatureLevel: () => o.clusterFeatureLevel?.() ?? 0,
      reportedFeatureLevels,
      driver,
      transport,
      stateMachine,
      logStore,
      clusterClock: clusterClock!,
      clientServices: clientServer.services,
      forwardingCredentials: o.tls?.forwardingChannelCredentials() ?? credentials.createInsecure(),
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
      handOver: ({ graceMs = DEFAULT_STOP_GRACE_MS } = {}) => handover.handOver(graceMs),
      stop: (opts = {}) => (stopping ??= shutdown(opts)),
    };

    const services = o.wrapClientServer?.(clientServer, node) ?? clientServer;
    services.addService(ClusterServiceService, createClusterService(node, o.unservedTaskTypes, o.connectedWorkers, o.stalledSlots));
    o.registerClientServices?.(services, node);
    const clientPort = await bind(clientServer, o.clientListen ?? (self.clientAddress || '127.0.0.1:0'), o.tls && withHandshakeTimeout(o.tls.clientServerCredentials(), limits.handshakeTimeoutMs));
    (node as { clientPort: number }).clientPort = clientPort;
    if (!guardConnections(clientServer, limits)) log.warn({}, 'client port: cannot reach the listening sockets; the per-address connection cap and first-byte timeout are off');

    const sm = stateMachine;
    const shutdown = async ({ transfer = true, graceMs = DEFAULT_STOP_GRACE_MS }: { transfer?: boolean; graceMs?: number }) => {
      const deadline = systemMonotonicClock.nowMs() + graceMs;
      if (transfer) {
        try {
          await handover.handOver(graceMs);
        } catch (e) {
          log.warn({ err: e }, 'leadership transfer before shutdown failed; stopping anyway');
        }
      }
      clearInterval(binder);
      await handover.settle(deadline);
      await driver.stop();
      transport.stop();
      await forwardLinger.quiet(driver.electionTimeoutMs(), deadline);
      await Promise.all([tryShutdown(peerServer, 1000), tryShutdown(clientServer, 1000)]);
      await sm.close().catch((e: unknown) => log.warn({ err: e }, 'state machine close failed'));
      await logStore.close();
    };

    driver.start();
    let binding = false;
    const bindIncarnations = () => {
      if (binding || stopping) return;
      binding = true;
      bindNextIncarnation({
        selfId: o.id,
        selfIncarnation: incarnation,
        heard: heardIncarnations,
        isLeader: () => driver.isLeader(),
        confState: () => driver.confState(),
        confChangePending: () => driver.confChangePending(),
        proposeConfChange: (cc) => driver.proposeConfChange(cc),
        logger: log,
      })
        .catch((e: unknown) => log.warn({ err: e }, 'binding a member incarnation failed'))
        .finally(() => (binding = false));
    };
    const binder = setInterval(bindIncarnations, INCARNATION_BIND_CHECK_MS);
    binder.unref();
    log.info({ id: o.id, clusterId, peerPort, clientPort, applied, lastIndex: storage.lastIndex() }, 'node started');
    return node;
  } catch (e) {
    await cleanup();
    throw e;
  }
}

function bind(server: Server, addr: string, creds: ServerCredentials = ServerCredentials.createInsecure()): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(addr, creds, (err, port) => {
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
