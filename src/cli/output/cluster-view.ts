// `cluster status`: every member's own view (role, term, commit/applied index) joined with the
// leader's view of it (match index, last contact, health), one row per member.
import { MemberRole, NodeRole, ReplicationState, type GetStatusResponse, type Member, type UnservedTaskType } from '../../gen/herald/v1/cluster_service.js';
import { enumName, formatInstant } from './format.js';

export const MEMBER_HEADERS = ['id', 'member', 'role', 'term', 'commit', 'applied', 'match', 'last contact', 'health', 'replication', 'supports', 'client address'];

export interface MemberView {
  id: string;
  clientAddress: string;
  peerAddress: string;
  /** The member's own status, or the error that kept us from getting it. */
  own: GetStatusResponse | undefined;
  error: string | undefined;
  /** The leader's view of the member; undefined when no leader answered. */
  fromLeader: Member | undefined;
  /** The member as the answering node's configuration lists it (voter / learner, incarnation). */
  listed: Member;
  isLeader: boolean;
}

/** voter / learner, as the configuration lists the member. */
export function memberRoleName(m: Member): string {
  return m.memberRole === MemberRole.MEMBER_ROLE_UNSPECIFIED ? '-' : enumName(MemberRole, m.memberRole, 'MEMBER_ROLE_');
}

/** A member in JSON output of the membership commands. */
export function memberJson(m: Member): Record<string, unknown> {
  return { id: m.id, member: memberRoleName(m), incarnation: m.incarnation, peerAddress: m.peerAddress, clientAddress: m.clientAddress, matchIndex: m.matchIndex, lag: m.lag };
}

export function joinMembers(base: GetStatusResponse, own: Map<string, GetStatusResponse | Error>): MemberView[] {
  const leaderView = base.role === NodeRole.NODE_ROLE_LEADER;
  return base.members.map((m) => {
    const o = own.get(m.id);
    return {
      id: m.id,
      clientAddress: m.clientAddress,
      peerAddress: m.peerAddress,
      own: o instanceof Error ? undefined : o,
      error: o instanceof Error ? o.message : o === undefined ? 'no client address known' : undefined,
      fromLeader: leaderView ? m : undefined,
      listed: m,
      isLeader: m.id === base.leaderId,
    };
  });
}

function role(v: MemberView): string {
  if (!v.own) return 'unreachable';
  return enumName(NodeRole, v.own.role, 'NODE_ROLE_').replace('pre_candidate', 'pre-candidate');
}

function health(v: MemberView): string {
  if (!v.own) return 'down';
  if (!v.fromLeader) return 'unknown';
  return v.fromLeader.healthy ? 'healthy' : 'lagging';
}

/**
 * The highest feature level the member's build supports: as the member says of itself, else as
 * the leader heard it on the peer stream (0: unknown, or a build from before feature levels).
 */
function supportedLevel(v: MemberView): number {
  return v.own?.members.find((m) => m.id === v.id)?.supportedFeatureLevel || v.fromLeader?.supportedFeatureLevel || 0;
}

export function memberRow(v: MemberView): string[] {
  const l = v.fromLeader;
  return [
    v.id + (v.isLeader ? '*' : ''),
    memberRoleName(v.listed),
    role(v),
    v.own ? String(v.own.term) : '-',
    v.own ? String(v.own.commitIndex) : '-',
    v.own ? String(v.own.appliedIndex) : '-',
    l ? String(l.matchIndex) : '-',
    l ? (v.isLeader ? 'self' : l.lastContactMs < 0 ? 'never' : `${l.lastContactMs}ms ago`) : '-',
    health(v),
    l && l.replicationState ? enumName(ReplicationState, l.replicationState, 'REPLICATION_STATE_') : '-',
    supportedLevel(v) ? `level ${supportedLevel(v)}` : '-',
    v.clientAddress || '-',
  ];
}

export function statusHeadline(base: GetStatusResponse): string {
  const leader = base.leaderId ? `leader ${base.leaderId} (${base.leaderAddress || 'address unknown'})` : 'NO LEADER';
  const level = base.featureLevel > 0 ? `  feature level ${base.featureLevel}` : '';
  return `cluster ${base.clusterId}  ${leader}  term ${base.term}${level}  cluster time ${formatInstant(base.clusterTimeUnixMs)}`;
}

/** The leader's unserved task types (its watchdog's), from whichever status the leader answered. */
export function unservedOf(base: GetStatusResponse, views: readonly MemberView[]): UnservedTaskType[] {
  if (base.role === NodeRole.NODE_ROLE_LEADER) return base.unservedTaskTypes;
  return views.find((v) => v.isLeader)?.own?.unservedTaskTypes ?? [];
}

/** A line naming task types with waiting runs and no worker; empty when there are none. */
export function unservedLine(unserved: readonly UnservedTaskType[]): string {
  if (unserved.length === 0) return '';
  return `\nWARNING unserved task types (runs waiting, no worker connected): ${unserved.map((u) => `${u.taskType} (${u.waitingRuns} waiting)`).join(', ')}`;
}

export function statusJson(base: GetStatusResponse, views: MemberView[]): Record<string, unknown> {
  return {
    clusterId: base.clusterId,
    unservedTaskTypes: unservedOf(base, views),
    leaderId: base.leaderId,
    leaderAddress: base.leaderAddress,
    term: base.term,
    clusterTimeUnixMs: base.clusterTimeUnixMs,
    featureLevel: base.featureLevel,
    members: views.map((v) => ({
      id: v.id,
      role: role(v),
      member: memberRoleName(v.listed),
      incarnation: v.listed.incarnation,
      supportedFeatureLevel: supportedLevel(v) || null,
      lag: v.fromLeader ? v.fromLeader.lag : null,
      reachable: v.own !== undefined,
      error: v.error ?? null,
      term: v.own?.term ?? null,
      commitIndex: v.own?.commitIndex ?? null,
      appliedIndex: v.own?.appliedIndex ?? null,
      snapshotIndex: v.own?.snapshotIndex ?? null,
      matchIndex: v.fromLeader?.matchIndex ?? null,
      lastContactMs: v.fromLeader?.lastContactMs ?? null,
      healthy: v.fromLeader ? v.fromLeader.healthy : null,
      replicationState: v.fromLeader ? enumName(ReplicationState, v.fromLeader.replicationState, 'REPLICATION_STATE_') : null,
      clientAddress: v.clientAddress,
      peerAddress: v.peerAddress,
    })),
  };
}
