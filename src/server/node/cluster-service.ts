// herald.v1.ClusterService on the client port: this node's view of the cluster, and
// leadership transfer (followers forward it to the leader's client port).

import { forwardingMetadata } from '../auth/forwarding-metadata.js';
import { Metadata, type ServiceError, type sendUnaryData } from '@grpc/grpc-js';
import {
  ClusterServiceClient,
  NodeRole,
  type ClusterServiceServer,
  type ConnectedWorker,
  type GetStatusResponse,
  type ListWorkersResponse,
  type StalledSlot,
  type TransferLeadershipResponse,
  type UnservedTaskType,
} from '../../gen/herald/v1/cluster_service.js';
import { HeraldError } from '../../herald-error.js';
import type { Role } from '../../raft/types.js';
import { fromServiceError } from '../grpc/grpc-errors.js';
import { toServiceError } from '../grpc/service-error.js';
import { FORWARDED_CALL_KEY } from '../api/unary-handler.js';
import type { HeraldNode } from './herald-node.js';
import { memberViews } from './member-views.js';
import { memberChangeHandlers } from './member-change-service.js';

const ROLE: Record<Role, NodeRole> = {
  follower: NodeRole.NODE_ROLE_FOLLOWER,
  preCandidate: NodeRole.NODE_ROLE_PRE_CANDIDATE,
  candidate: NodeRole.NODE_ROLE_CANDIDATE,
  leader: NodeRole.NODE_ROLE_LEADER,
};

function nodeStatus(node: HeraldNode, unserved: () => UnservedTaskType[]): GetStatusResponse {
  const d = node.driver;
  const st = d.status();
  const leader = d.leaderChange();
  const members = memberViews(node);
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
    incarnation: node.incarnation,
    confChangePending: d.confChangePending(),
    featureLevel: node.clusterFeatureLevel(),
    unservedTaskTypes: st.role === 'leader' ? unserved() : [],
  };
}

const NONE = (): UnservedTaskType[] => [];

/**
 * `unserved`: the leader watchdog's unserved task types (scheduler-node.ts), for the status;
 * `workers`, `stalled`: the worker streams connected to this node and the slots its watchdog
 * flagged, while it leads (ListWorkers).
 */
export function createClusterService(
  node: HeraldNode,
  unserved: () => UnservedTaskType[] = NONE,
  workers: () => ConnectedWorker[] = () => [],
  stalled: () => StalledSlot[] = () => [],
): ClusterServiceServer {
  /** A follower's answer from the leader's client port (one hop: the leader answers itself). */
  function viaLeader<Res>(send: (client: ClusterServiceClient, done: (err: ServiceError | null, res?: Res) => void) => void, callback: sendUnaryData<Res>, what: string): void {
    const l = node.leader();
    if (!l.leaderId || !l.leaderAddress) {
      callback(toServiceError(new HeraldError('NO_LEADER', `no leader with a known client address to forward ${what} to`)));
      return;
    }
    const client = new ClusterServiceClient(l.leaderAddress, node.forwardingCredentials);
    send(client, (err, resp) => {
      client.close();
      if (err) callback(toServiceError(fromServiceError(err)));
      else callback(null, resp as Res);
    });
  }

  return {
    ...memberChangeHandlers(node),
    listWorkers(call, callback: sendUnaryData<ListWorkersResponse>) {
      if (node.driver.isLeader()) {
        callback(null, { workers: workers(), leaderId: node.id, unservedTaskTypes: unserved(), stalledSlots: stalled() });
        return;
      }
      if (call.metadata.get(FORWARDED_CALL_KEY).length > 0) {
        callback(toServiceError(new HeraldError('NOT_LEADER', `node ${node.id} is not the leader`)));
        return;
      }
      const md = new Metadata();
      md.set(FORWARDED_CALL_KEY, '1');
      // The leader authenticates the caller itself: its credential goes along.
      forwardingMetadata(call, md);
      viaLeader<ListWorkersResponse>((c, done) => c.listWorkers({}, md, { deadline: Date.now() + 5_000 }, done), callback, 'the worker list');
    },
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
      // grpc-js deadlines are wall-clock.
      viaLeader<TransferLeadershipResponse>((c, done) => c.transferLeadership({ targetId: target }, forwardingMetadata(call), { deadline: Date.now() + 10_000 }, done), callback, 'the transfer');
    },
  };
}
