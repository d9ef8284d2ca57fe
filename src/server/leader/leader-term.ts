// One term of leadership, as the leader's components see it: the node, the state machine's
// reads, settings, metrics, cluster time, whether the term is still on, and a propose helper for
// the leader's own time-driven commands. Nothing else: the components' own state (leases,
// sessions, job cache) and how they reach each other are handed to each one by
// leader-services.ts, and each component names the members it uses in its own deps interface.
import type { Logger } from 'pino';
import { decodeResult, resultTypeOf, type FsmCommand, type FsmResult, type SchedulerStateMachine } from '../../fsm/index.js';
import { HeraldError } from '../../herald-error.js';
import type { NodeMetrics } from '../node/metrics.js';
import type { HeraldNode } from '../node/herald-node.js';
import type { RaftDriver } from '../../raft/driver/raft-driver.js';
import { stampedAtAppend, type StampClock } from '../node/stamped-proposal.js';
import type { LeaderTimers } from './leader-timers.js';
import type { SchedulerConfig } from './leader-config.js';

/** What the leader reads from the state machine (committed state, straight from the store). */
export type LeaderReads = Pick<
  SchedulerStateMachine,
  'dueWindow' | 'trimDueKeys' | 'limits' | 'limitsVersion' | 'waitingByTaskType' | 'fireCursor' | 'readyEntries' | 'getRun' | 'getRuns' | 'runningRuns' | 'getJob' | 'getJobs' | 'specCache' | 'unsafe'
>;

/** What the leader's services use of their node (the simulator's nodes provide just this). */
export type LeaderNode = Pick<HeraldNode, 'clusterClock' | 'propose' | 'proposeBackToBack' | 'readIndex'> & {
  readonly driver: Pick<RaftDriver, 'isLeader' | 'electionTimeoutMs'>;
};

export interface LeaderTerm {
  readonly node: LeaderNode;
  readonly reads: LeaderReads;
  readonly config: SchedulerConfig;
  readonly metrics: NodeMetrics;
  readonly log: Logger;
  /** The term these services were started for. */
  readonly term: number;
  /** The monotonic clock and timers every component arms its loops on. */
  readonly timers: LeaderTimers;
  /** Cluster time (DESIGN §5a), or undefined while a quorum of fresh clock samples is missing. */
  now(): number | undefined;
  /** False once leadership of this term is over (components stop proposing). */
  active(): boolean;
  /** Proposes a leader command here (never forwarded) and returns its decoded result. */
  propose<T extends FsmResult['type']>(cmd: FsmCommand, expect: T, timeoutMs?: number): Promise<Extract<FsmResult, { type: T }>>;
}

/**
 * Checks an applied command's result type from its header: a rejection fails with the
 * rejection's error, any other unexpected type with INTERNAL.
 */
export function checkResultType(cmd: FsmCommand, expect: FsmResult['type'], result: Uint8Array): void {
  const type = resultTypeOf(result);
  if (type === expect) return;
  if (type === 'rejected') {
    const res = decodeResult(result);
    const message = res.type === 'rejected' ? res.error.message : 'rejected';
    throw new HeraldError(res.type === 'rejected' ? res.error.code : 'INTERNAL', `${cmd.type} rejected: ${message}`);
  }
  throw new HeraldError('INTERNAL', `${cmd.type} returned a ${type} result`);
}

/** An applied command's result, decoded once its type is checked (checkResultType). */
export function checkedResult<T extends FsmResult['type']>(cmd: FsmCommand, expect: T, result: Uint8Array): Extract<FsmResult, { type: T }> {
  checkResultType(cmd, expect, result);
  return decodeResult(result) as Extract<FsmResult, { type: T }>;
}

/** A node to propose on; with its cluster clock, commands are stamped as they are appended (stamped-proposal.ts). */
type ProposingNode = Pick<HeraldNode, 'propose'> & { readonly clusterClock?: StampClock };

/** Proposes a leader command here (never forwarded) and returns its checked, decoded result. */
export async function proposeCommand<T extends FsmResult['type']>(
  node: ProposingNode,
  cmd: FsmCommand,
  expect: T,
  timeoutMs: number,
): Promise<Extract<FsmResult, { type: T }>> {
  const out = await node.propose(stampedAtAppend(cmd, node.clusterClock), { forward: false, timeoutMs });
  return checkedResult(cmd, expect, out.result);
}

/** proposeCommand without decoding the result: its effects are read from the applied entry. */
export async function proposeUnread(node: ProposingNode, cmd: FsmCommand, expect: FsmResult['type'], timeoutMs: number): Promise<void> {
  const out = await node.propose(stampedAtAppend(cmd, node.clusterClock), { forward: false, timeoutMs });
  checkResultType(cmd, expect, out.result);
}
