// The public API's one way to run a write on the leader: on the leader it runs with cluster time;
// on a follower the whole call is forwarded once (leader-forwarder.ts) with the caller's
// credential; a forwarded call that lands on a non-leader, or a follower that knows no leader,
// answers NOT_LEADER / NO_LEADER with the leader's address, which the SDK follows. A write only
// becomes a command on the leader, which stamps it with cluster time, so a follower cannot hand
// over a command instead. Every service with writes (jobs, task types, tokens) routes through
// here, so curl and the dashboard may call any node.
import type { ChannelCredentials } from '@grpc/grpc-js';
import { HeraldError } from '../../herald-error.js';
import { forwardingMetadata } from '../auth/forwarding-metadata.js';
import type { HeraldNode } from '../node/herald-node.js';
import { LeaderForwarder, type ServiceClientCtor } from './leader-forwarder.js';
import type { CallContext } from './unary-handler.js';

export type LeaderRouteNode = Pick<HeraldNode, 'leader' | 'clusterClock' | 'driver'> &
  Partial<Pick<HeraldNode, 'events' | 'forwardingCredentials'>>;

export function notLeaderError(l: { leaderId: string; leaderAddress: string }): HeraldError {
  return new HeraldError(
    l.leaderId ? 'NOT_LEADER' : 'NO_LEADER',
    l.leaderId
      ? `this node is not the leader; the leader is ${l.leaderId} at ${l.leaderAddress || 'an unknown address'}`
      : 'no leader is known right now (an election is in progress); retry shortly',
    { leaderId: l.leaderId, leaderAddress: l.leaderAddress },
  );
}

export class LeaderRoute {
  private readonly forwarder: LeaderForwarder;

  constructor(
    private readonly node: LeaderRouteNode,
    clientCtor: ServiceClientCtor,
  ) {
    this.forwarder = new LeaderForwarder(node.events, node.forwardingCredentials ?? undefined, clientCtor);
  }

  /**
   * Runs `run` with the leader's cluster time, or forwards `request` to the leader as `method`
   * (the generated client's method name) when this node follows.
   */
  async onLeader<Req, Res>(method: string, request: Req, call: CallContext, timeoutMs: number, run: (nowMs: number) => Promise<Res>): Promise<Res> {
    if (!this.node.driver.isLeader()) {
      const leader = this.node.leader();
      if (call.forwarded || !leader.leaderId || !leader.leaderAddress) throw notLeaderError(leader);
      call.sentToLeader = true;
      return this.forwarder.call<Req, Res>(leader.leaderAddress, method, request, {
        requestId: call.requestId,
        timeoutMs,
        metadata: forwardingMetadata(call.call),
      });
    }
    const nowMs = this.node.clusterClock.nowMs();
    if (nowMs === undefined) {
      throw new HeraldError('NOT_READY', 'the leader has not established cluster time yet (waiting for a quorum of heartbeats); retry shortly');
    }
    return run(nowMs);
  }

  /** Forwards a read to the leader (the caller decided only the leader can answer it). */
  forwardRead<Req, Res>(leaderAddress: string, method: string, request: Req, call: CallContext, timeoutMs: number): Promise<Res> {
    return this.forwarder.call<Req, Res>(leaderAddress, method, request, { requestId: call.requestId, timeoutMs, metadata: forwardingMetadata(call.call) });
  }

  close(): void {
    this.forwarder.close();
  }
}
