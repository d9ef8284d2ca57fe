// herald.v1.ClusterService on the client port: this node's view of the cluster, and
// leadership transfer (followers forward it to the leader's client port).

import { forwardingMetadata } from '../auth/forwarding-metadata.js';
import { Metadata, type ServiceError, type sendUnaryData } from '@grpc/grpc-js';
import {
  ClusterServiceClient,
  NodeRole,
  ReplicationState,
  type ClusterServiceServer,
  type GetStatusResponse,
  type Member,
  type TransferLeadershipResponse,
  type UnservedTaskType,
} from '../../gen/herald/v1/cluster_service.js';
import { HeraldError } from '../../herald-error.js';
import type { Role } from '../../raft/types.js';
import { fromServiceError } from '../grpc/grpc-errors.js';
import { toServiceError } from '../grpc/service-error.js';
import type { HeraldNode } from './herald-node.js';

const ROLE: Record<Role, NodeRole> = {
  follower: NodeRole.NODE_ROLE_FOLLOWER,
  preCandidate: NodeRole.NODE_ROLE_PRE_CANDIDATE,
  candidate: NodeRole.NODE_ROLE_CANDIDATE,
  leader: NodeRole.NODE_ROLE_LEADER,
};
const REPL: Record<string, ReplicationState> = {
  probe: ReplicationState.REPLICATION_STATE_PROBE,
  replicate: ReplicationState.REPLICATION_STATE_REPLICATE,
  snapshot: ReplicationState.REPLICATION_STATE_SNAPSHOT,
};

function nodeStatus(node: HeraldNode, unserved: () => UnservedTaskType[]): GetStatusResponse {
  const d = node.driver;
  const st = d.status();
  const leader = d.leaderChange();
  const members: Member[] = node.members.map((m) => {
    const self = m.id === node.id;
    const pr = st.progress[m.id];
    const contact = self ? 0 : d.lastContactMs(m.id);
    return {
      id: m.id,
      peerAddress: m.peerAddress,
      clientAddress: self ? m.clientAddress || `127.0.0.1:${node.clientPort}` : m.clientAddress,
      matchIndex: pr ? pr.match : self && st.role === 'leader' ? st.lastIndex : 0,
      lastContactMs: Math.round(contact),
      healthy: self || (contact >= 0 && contact <= d.electionTimeoutMs()),
      replicationState: pr ? (REPL[pr.state] ?? ReplicationState.REPLICATION_STATE_UNSPECIFIED) : ReplicationState.REPLICATION_STATE_UNSPECIFIED,
    };
  });
  return {
    nodeId: node.id,
    clusterId: node.clusterId,
    role: ROLE[st.role],
    term: st.term,
    leaderId: leader.leaderId,
    leaderAddress: leader.leaderAddress,
    commitIndex: st.commit,
    appliedIndex: d.appliedIndex(),
    members,
    clusterTimeUnixMs: node.clusterClock.nowMs() ?? 0,
    snapshotIndex: d.snapshotIndex(),
    unservedTaskTypes: st.role === 'leader' ? unserved() : [],
  };
}

const NONE = (): UnservedTaskType[] => [];

/** `unserved`: the leader watchdog's unserved task types (scheduler-node.ts), for the status. */
export function createClusterService(node: HeraldNode, unserved: () => UnservedTaskType[] = NONE): ClusterServiceServer {
  return {
    getStatus(_call, callback: sendUnaryData<GetStatusResponse>) {
      try {
        callback(null, nodeStatus(node, unserved));
      } catch (e) {
        callback(toServiceError(e));
      }
    },
    transferLeadership(call, callback: sendUnaryData<TransferLeadershipResponse>) {
      const target = call.request.targetId;
      if (target && !node.members.some((m) => m.id === target)) {
        callback(toServiceError(new HeraldError('INVALID_ARGUMENT', `unknown node ${target.slice(0, 64)}`)));
        return;
      }
      if (node.driver.isLeader()) {
        node.transferLeadership(target || undefined).then(
          (l) => callback(null, { leaderId: l.leaderId, leaderAddress: l.leaderAddress }),
          (e: unknown) => callback(toServiceError(e)),
        );
        return;
      }
      const l = node.leader();
      if (!l.leaderId || !l.leaderAddress) {
        callback(toServiceError(new HeraldError('NO_LEADER', 'no leader with a known client address to forward the transfer to')));
        return;
      }
      const client = new ClusterServiceClient(l.leaderAddress, node.forwardingCredentials);
      // grpc-js deadlines are wall-clock.
      client.transferLeadership({ targetId: target }, forwardingMetadata(call), { deadline: Date.now() + 10_000 }, (err: ServiceError | null, resp) => {
        client.close();
        if (err) callback(toServiceError(fromServiceError(err)));
        else callback(null, resp);
      });
    },
  };
}
