// Proposals made on this node (HeraldNode.propose). The leader hands the command to its driver; a
// follower forwards it to the leader's peer port (RaftService.Forward) and answers with the
// leader's result. Errors that guarantee the command was not appended (no leader, not the leader,
// a forward that never left this node) are retried until the deadline; any other goes back to the
// caller. A node that refuses a forward as not the leader names the leader it knows; until this
// node's own view moves on, forwards go there (after a leadership transfer the old leader knows
// the new one before the other followers do, and it keeps its port open for them while stopping:
// forward-linger.ts).
//
// This is how a bare command reaches the leader: the KV state machine, its tests and
// bench/raft-commit use it. The public API reaches the leader one level up instead: a follower
// forwards the whole call to the leader's client port (api/leader-forwarder.ts), because the
// leader stamps a write with its cluster time and checks it against its state before the command
// exists, and one CreateJobs call becomes several proposals there. The public services propose
// with forward: false.

import { Metadata, type ServiceError } from '@grpc/grpc-js';
import type { RaftServiceClient } from '../../gen/herald/raft/v1/raft.js';
import { HeraldError, isHeraldError } from '../../herald-error.js';
import type { MonotonicClock } from '../../raft/monotonic-clock.js';
import { proposalBytes, type ProposalData, type ProposalOutcome } from '../../raft/driver/proposal-tracker.js';
import type { RaftDriver } from '../../raft/driver/raft-driver.js';
import type { NodeId } from '../../raft/types.js';
import { channelReady } from '../grpc/channel-ready.js';
import { fromServiceError } from '../grpc/grpc-errors.js';
import { FORWARDED_KEY } from '../peer/peer-server.js';
import type { ProposeOptions } from './herald-node.js';

export interface ProposerDeps {
  selfId: NodeId;
  clusterId: string;
  driver: RaftDriver;
  /** The peer-port client of a member (undefined for an id that is not a member). */
  peerClient: (id: NodeId) => RaftServiceClient | undefined;
  defaultTimeoutMs: number;
  clock: MonotonicClock;
}

export type Propose = (command: ProposalData, options?: ProposeOptions) => Promise<ProposalOutcome>;

export function createProposer(d: ProposerDeps): Propose {
  const { driver, clock } = d;
  /** `from` (this node's view of the leader) said the leader is `to`; forgotten when the view changes. */
  let redirect: { from: NodeId; to: NodeId } | undefined;
  driver.events.on('leaderChanged', () => {
    redirect = undefined;
  });

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

  const send = (client: RaftServiceClient, command: Uint8Array, deadline: number): Promise<ProposalOutcome> => {
    const timeoutMs = Math.max(1, Math.ceil(deadline - clock.nowMs())); // an int64 on the wire
    const md = new Metadata();
    md.set(FORWARDED_KEY, d.selfId);
    return new Promise((resolve, reject) => {
      client.forward(
        { clusterId: d.clusterId, command: Buffer.from(command.buffer, command.byteOffset, command.byteLength), timeoutMs },
        md,
        // grpc-js deadlines are wall-clock; the leader answers within timeoutMs, this is a guard.
        { deadline: Date.now() + timeoutMs + 1000 },
        (err: ServiceError | null, resp) => (err ? reject(fromServiceError(err)) : resolve({ index: resp.index, result: resp.result })),
      );
    });
  };

  const forwardTo = (leaderId: NodeId, command: Uint8Array, deadline: number): Promise<ProposalOutcome> => {
    const client = d.peerClient(leaderId);
    if (!client) throw new HeraldError('NOT_LEADER', `unknown leader ${leaderId}`);
    // Only a call made on a connected channel can reach the leader; one that is never made is
    // safe to retry (a failed call's error cannot tell the two apart).
    const ready = channelReady(client, deadline - clock.nowMs());
    if (ready === true) return send(client, command, deadline);
    if (ready === false) throw notSent(leaderId);
    return ready.then((ok) => {
      if (!ok) throw notSent(leaderId);
      return send(client, command, deadline);
    });
  };

  /**
   * A forwarded command this node refuses (it is not the leader, or it is stopping) names the
   * leader this node knows, so the forwarding node can go there before its own view catches up.
   */
  const withLeaderHint = (e: HeraldError): HeraldError => {
    if (e.details.leaderId || (e.code !== 'NOT_LEADER' && e.code !== 'SHUTTING_DOWN')) return e;
    const l = driver.leaderChange();
    if (!l.leaderId || l.leaderId === d.selfId) return e;
    return new HeraldError(e.code, e.message, { ...e.details, leaderId: l.leaderId, ...(l.leaderAddress ? { leaderAddress: l.leaderAddress } : {}) });
  };

  return async (command, opts = {}) => {
    const timeoutMs = opts.timeoutMs ?? d.defaultTimeoutMs;
    const deadline = clock.nowMs() + timeoutMs;
    let followedHint = false;
    for (;;) {
      const remaining = deadline - clock.nowMs();
      if (remaining <= 0) throw new HeraldError('PROPOSAL_TIMEOUT', `no leader accepted the proposal within ${timeoutMs} ms`);
      let sentTo: NodeId | undefined;
      const view = driver.leaderChange().leaderId;
      try {
        if (driver.isLeader() || opts.forward === false) return await driver.propose(command, { timeoutMs: remaining, answerOnceEvaluated: opts.answerOnceEvaluated === true });
        sentTo = redirect && redirect.from === view ? redirect.to : view;
        if (!sentTo || sentTo === d.selfId) {
          await waitLeader(Math.min(remaining, 100));
          continue;
        }
        return await forwardTo(sentTo, proposalBytes(command), deadline);
      } catch (e) {
        if (!isHeraldError(e)) throw e;
        if (opts.forward === false) throw withLeaderHint(e);
        const retry =
          e.code === 'NO_LEADER' ||
          (e.code === 'NOT_LEADER' && (e.details.remote === true || !driver.isLeader())) ||
          (e.code === 'SHUTTING_DOWN' && e.details.remote === true) ||
          e.details.neverSent === true;
        if (!retry || clock.nowMs() + 10 >= deadline) throw e;
        const hint = e.details.remote === true ? e.details.leaderId : undefined;
        if (hint && sentTo && hint !== sentTo && hint !== d.selfId && driver.leaderChange().leaderId === view) {
          redirect = { from: view, to: hint };
          // Straight there the first time; a second hint in one proposal waits like any retry.
          if (!followedHint) {
            followedHint = true;
            continue;
          }
        }
        await waitLeader(Math.min(deadline - clock.nowMs(), 50));
      }
    }
  };
}

function notSent(leaderId: NodeId): HeraldError {
  return new HeraldError('NOT_READY', `no connection to the leader ${leaderId}`, { leaderId, neverSent: true });
}
