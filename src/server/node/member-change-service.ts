// ClusterService AddMember / PromoteMember / RemoveMember: configuration changes, one at a time
// (docs/membership.md). The leader proposes them and answers once the change is applied there;
// a follower forwards the call to the leader's client port. Refusals are the core's typed
// errors (CONF_CHANGE_PENDING, LEARNER_BEHIND, ALREADY_EXISTS, MEMBER_NOT_FOUND, INVALID_STATE),
// and LEARNER_FEATURE_LEVEL: a learner whose build is below the cluster's feature level stops
// applying at the first entry of that level, so as a voter it would count toward quorums it
// cannot serve.

import { forwardingMetadata } from '../auth/forwarding-metadata.js';
import { Metadata, type ServiceError, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import {
  ClusterServiceClient,
  type AddMemberRequest,
  type AddMemberResponse,
  type ClusterServiceServer,
  type PromoteMemberRequest,
  type PromoteMemberResponse,
  type RemoveMemberRequest,
  type RemoveMemberResponse,
} from '../../gen/herald/v1/cluster_service.js';
import { HeraldError } from '../../herald-error.js';
import { addressesOf, isLearner, isVoter, type ConfChange } from '../../raft/core/membership.js';
import type { MemberAddresses, NodeId } from '../../raft/types.js';
import { fromServiceError } from '../grpc/grpc-errors.js';
import { toServiceError } from '../grpc/service-error.js';
import { memberViews } from './member-views.js';
import { getStatus } from './join-cluster.js';
import type { HeraldNode } from './herald-node.js';
import { isHostPort, isMemberId } from './node-config.js';

/** How long a change may take to commit and apply on the leader before the call gives up. */
const CHANGE_TIMEOUT_MS = 10_000;

type Handlers = Pick<ClusterServiceServer, 'addMember' | 'promoteMember' | 'removeMember'>;

export function memberChangeHandlers(node: HeraldNode): Handlers {
  return {
    addMember(call: ServerUnaryCall<AddMemberRequest, AddMemberResponse>, callback: sendUnaryData<AddMemberResponse>) {
      const r = call.request;
      const bad = checkId(r.id) ?? checkAddr('peer_address', r.peerAddress) ?? checkAddr('client_address', r.clientAddress);
      if (bad) return callback(toServiceError(bad));
      const add = (incarnation: string) =>
        serve(node, 'addMember', r, call, callback, () => ({
          kind: 'addLearner',
          id: r.id,
          incarnation,
          addresses: { ...knownAddresses(node), [r.id]: { peer: r.peerAddress, client: r.clientAddress } },
        }));
      if (r.incarnation || !node.driver.isLeader()) return add(r.incarnation);
      // No incarnation given: the leader asks the new node itself, as a member (its certificate
      // on a TLS cluster): a joining node holds no tokens, so a token-only operator cannot.
      incarnationOf(node, r.id, r.clientAddress).then(add, (e: unknown) => callback(toServiceError(e)));
    },
    promoteMember(call: ServerUnaryCall<PromoteMemberRequest, PromoteMemberResponse>, callback: sendUnaryData<PromoteMemberResponse>) {
      const bad = checkId(call.request.id);
      if (bad) return callback(toServiceError(bad));
      serve(node, 'promoteMember', call.request, call, callback, () => {
        const id = call.request.id;
        if (isLearner(node.driver.confState(), id)) checkLearnerLevel(node, id);
        return { kind: 'promote', id, addresses: knownAddresses(node) };
      });
    },
    removeMember(call: ServerUnaryCall<RemoveMemberRequest, RemoveMemberResponse>, callback: sendUnaryData<RemoveMemberResponse>) {
      const id = call.request.id;
      const bad = checkId(id);
      if (bad) return callback(toServiceError(bad));
      serve(node, 'removeMember', call.request, call, callback, () => {
        const conf = node.driver.confState();
        // One voter left is a cluster that survives no failure: refuse, saying so.
        if (isVoter(conf, id) && conf.voters.length <= 2) {
          throw new HeraldError('INVALID_STATE', `removing ${id} would leave ${conf.voters.length - 1} voter${conf.voters.length === 2 ? '' : 's'}; add and promote a replacement first`);
        }
        return { kind: 'remove', id, addresses: knownAddresses(node) };
      });
    },
  };
}

/**
 * Refuses to promote a learner that reported supporting less than the cluster's feature level
 * (a build before feature levels reports 0, which reads as the base level every build has). Not
 * heard from yet: left to the catch-up check, which refuses a learner that has not answered.
 */
function checkLearnerLevel(node: HeraldNode, id: string): void {
  const cluster = node.clusterFeatureLevel();
  const reported = node.reportedFeatureLevels.get(id);
  if (reported === undefined || cluster === 0) return;
  const supports = Math.max(reported, 1);
  if (supports >= cluster) return;
  throw new HeraldError(
    'LEARNER_FEATURE_LEVEL',
    `the learner ${id} supports feature level ${supports}, below the cluster's level ${cluster}: it would stop applying at the first entry of that level; upgrade ${id} to a build that supports level ${cluster} (restart it on the same data dir), then promote it`,
  );
}

/** The incarnation of the node `id` serving at `clientAddress`, read from its GetStatus. */
async function incarnationOf(node: HeraldNode, id: string, clientAddress: string): Promise<string> {
  let st;
  try {
    st = await getStatus(clientAddress, node.forwardingCredentials, 5_000);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    throw new HeraldError('INVALID_STATE', `cannot read ${id}'s incarnation at ${clientAddress} (${why}): start it with \`herald server --join\` first, or give the incarnation`, { field: 'incarnation' });
  }
  if (st.nodeId !== id) throw new HeraldError('INVALID_ARGUMENT', `the node at ${clientAddress} is ${st.nodeId}, not ${id}`, { field: 'id' });
  if (!st.incarnation) throw new HeraldError('INVALID_STATE', `${id} at ${clientAddress} reports no incarnation (an older build?); give it explicitly`, { field: 'incarnation' });
  return st.incarnation;
}

function checkId(id: string): HeraldError | undefined {
  return isMemberId(id) ? undefined : new HeraldError('INVALID_ID', `bad member id "${id}" (letters, digits, _ . -; at most 64)`, { field: 'id' });
}

function checkAddr(field: string, a: string): HeraldError | undefined {
  return isHostPort(a) ? undefined : new HeraldError('INVALID_ARGUMENT', `${field} "${a}" is not host:port`, { field });
}

/** Every member's address as this node knows it, so the configuration records all of them. */
function knownAddresses(node: HeraldNode): Record<NodeId, MemberAddresses> {
  const recorded = addressesOf(node.driver.confState());
  const out: Record<NodeId, MemberAddresses> = {};
  for (const m of node.members) {
    if (recorded[m.id] || !m.peerAddress) continue;
    out[m.id] = { peer: m.peerAddress, client: m.id === node.id && !m.clientAddress ? `127.0.0.1:${node.clientPort}` : m.clientAddress };
  }
  return out;
}

type Method = 'addMember' | 'promoteMember' | 'removeMember';

function serve<Req, Resp extends { members: unknown[] }>(node: HeraldNode, method: Method, req: Req, call: { metadata: Metadata }, callback: sendUnaryData<Resp>, change: () => ConfChange): void {
  if (!node.driver.isLeader()) return forward(node, method, req, call, callback);
  let cc: ConfChange;
  try {
    cc = change();
  } catch (e) {
    return callback(toServiceError(e));
  }
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new HeraldError('PROPOSAL_TIMEOUT', `the ${cc.kind} of ${cc.id} was proposed but not applied within ${CHANGE_TIMEOUT_MS / 1000} s (a quorum may be unreachable); check \`herald cluster status\``)), CHANGE_TIMEOUT_MS);
  });
  // proposeConfChange refuses at once (throws) what membership.ts does not allow: that too must
  // reach the caller as its status, never escape the handler.
  let proposed: Promise<void>;
  try {
    proposed = node.driver.proposeConfChange(cc);
  } catch (e) {
    clearTimeout(timer);
    return callback(toServiceError(e));
  }
  Promise.race([proposed, timeout]).then(
    () => {
      clearTimeout(timer);
      callback(null, { members: memberViews(node) } as unknown as Resp);
    },
    (e: unknown) => {
      clearTimeout(timer);
      callback(toServiceError(e));
    },
  );
}

/** The leader authenticates the caller itself: the caller's credential goes along (auth/forwarding-metadata.ts). */
function forward<Req, Resp>(node: HeraldNode, method: Method, req: Req, from: { metadata: Metadata }, callback: sendUnaryData<Resp>): void {
  const l = node.leader();
  if (!l.leaderId || !l.leaderAddress) {
    callback(toServiceError(new HeraldError('NO_LEADER', 'no leader with a known client address to forward the change to; retry shortly')));
    return;
  }
  const client = new ClusterServiceClient(l.leaderAddress, node.forwardingCredentials);
  const call = client[method].bind(client) as unknown as (r: Req, md: Metadata, o: { deadline: number }, cb: (err: ServiceError | null, resp: Resp) => void) => void;
  call(req, forwardingMetadata(from), { deadline: Date.now() + CHANGE_TIMEOUT_MS + 2_000 }, (err, resp) => {
    client.close();
    if (err) callback(toServiceError(fromServiceError(err)));
    else callback(null, resp);
  });
}
