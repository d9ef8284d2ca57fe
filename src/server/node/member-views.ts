// The members in force as a node sees them, for ClusterService answers: role in the
// configuration (voter / learner), incarnation, and on the leader match index, lag and health.
import { MemberRole, ReplicationState, type Member } from '../../gen/herald/v1/cluster_service.js';
import { incarnationOf, isLearner, isVoter } from '../../raft/core/membership.js';
import type { HeraldNode } from './herald-node.js';

const REPL: Record<string, ReplicationState> = {
  probe: ReplicationState.REPLICATION_STATE_PROBE,
  replicate: ReplicationState.REPLICATION_STATE_REPLICATE,
  snapshot: ReplicationState.REPLICATION_STATE_SNAPSHOT,
};

/** The members in force as this node sees them (progress and lag only on the leader). */
export function memberViews(node: HeraldNode): Member[] {
  const d = node.driver;
  const st = d.status();
  const conf = d.confState();
  return node.members.map((m) => {
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
      memberRole: isVoter(conf, m.id) ? MemberRole.MEMBER_ROLE_VOTER : isLearner(conf, m.id) ? MemberRole.MEMBER_ROLE_LEARNER : MemberRole.MEMBER_ROLE_UNSPECIFIED,
      incarnation: self ? node.incarnation : incarnationOf(conf, m.id),
      supportedFeatureLevel: self ? node.supportedFeatureLevel() : (node.reportedFeatureLevels.get(m.id) ?? 0),
      lag: st.role === 'leader' ? (pr ? Math.max(0, st.lastIndex - pr.match) : self ? 0 : st.lastIndex) : 0,
    };
  });
}

