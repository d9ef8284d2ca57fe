// What every leader-only component shares for one term of leadership: the node, the state
// machine's reads, cluster time, the lease table, the open worker sessions, metrics and a
// propose helper for the leader's own time-driven commands.
import type { Logger } from 'pino';
import { decodeResult, encodeCommand, resultTypeOf, type DispatchHint, type FireItem, type FsmCommand, type FsmResult, type SchedulerStateMachine } from '../../fsm/index.js';
import { HeraldError } from '../../herald-error.js';
import type { JobCache } from './job-cache.js';
import type { LeaseTable } from './leases/lease-table.js';
import type { NodeMetrics } from '../node/metrics.js';
import type { HeraldNode } from '../node/herald-node.js';
import type { SchedulerConfig } from './leader-config.js';
import type { SessionRegistry } from './worker-session.js';

/** Connected workers' room for runs claimed behind their fire: credits, and the task types served. */
export interface DispatchRoom {
  readonly credits: number;
  readonly taskTypes: ReadonlySet<string>;
}

export interface LeaderContext {
  readonly node: HeraldNode;
  readonly fsm: SchedulerStateMachine;
  readonly config: SchedulerConfig;
  readonly metrics: NodeMetrics;
  readonly log: Logger;
  readonly leases: LeaseTable;
  readonly sessions: SessionRegistry;
  /** Job records (lease adoption, deadline sweeps), invalidated by applied job changes. */
  readonly jobs: JobCache;
  /** The term these services were started for. */
  readonly term: number;
  /** Cluster time (DESIGN §5a), or undefined while a quorum of fresh clock samples is missing. */
  now(): number | undefined;
  /** False once leadership of this term is over (components stop proposing). */
  active(): boolean;
  /** Proposes a leader command here (never forwarded) and returns its decoded result. */
  propose<T extends FsmResult['type']>(cmd: FsmCommand, expect: T, timeoutMs?: number): Promise<Extract<FsmResult, { type: T }>>;
  /**
   * Like propose, but only checks the result's type (a rejection still fails it): for commands
   * whose effects the leader reads from the applied entry anyway (fires, in its fire scheduler).
   */
  proposeUnread(cmd: FsmCommand, expect: FsmResult['type'], timeoutMs?: number): Promise<void>;
  /** Asks the dispatcher for a round soon (new ready runs or new capacity). */
  wakeDispatcher(): void;
  /** What a fire may create now for the claim behind it to take at once (Dispatcher.dispatchRoom). */
  dispatchRoom(): DispatchRoom | undefined;
  /** Tells the fire scheduler that workers may have room for slots it holds. */
  wakeFires(): void;
  /** True while a claim of this run is being proposed (its lease is granted when it commits). */
  claimInFlight(runId: string): boolean;
  /**
   * Right after proposing a fireRuns command: claim its runs in the entry behind it (Dispatcher),
   * those of jobs with a dispatch hint (the fire scheduler's, from each job's last fire).
   */
  claimBehindFire(fired: readonly FireItem[], nowMs: number, hintOf: (jobId: string) => DispatchHint | undefined): void;
}

/**
 * Proposes a leader command here (never forwarded) and checks its result's type from the header:
 * a rejection fails it with the rejection's error, any other unexpected type with INTERNAL.
 */
async function proposeChecked(node: HeraldNode, cmd: FsmCommand, expect: FsmResult['type'], timeoutMs: number): Promise<Uint8Array> {
  const out = await node.propose(encodeCommand(cmd), { forward: false, timeoutMs });
  const type = resultTypeOf(out.result);
  if (type === 'rejected') {
    const res = decodeResult(out.result);
    const message = res.type === 'rejected' ? res.error.message : 'rejected';
    throw new HeraldError(res.type === 'rejected' ? res.error.code : 'INTERNAL', `${cmd.type} rejected: ${message}`);
  }
  if (type !== expect) throw new HeraldError('INTERNAL', `${cmd.type} returned a ${type} result`);
  return out.result;
}

export async function proposeCommand<T extends FsmResult['type']>(
  node: HeraldNode,
  cmd: FsmCommand,
  expect: T,
  timeoutMs: number,
): Promise<Extract<FsmResult, { type: T }>> {
  return decodeResult(await proposeChecked(node, cmd, expect, timeoutMs)) as Extract<FsmResult, { type: T }>;
}

/** proposeCommand without decoding the result: its effects are read from the applied entry. */
export async function proposeUnread(node: HeraldNode, cmd: FsmCommand, expect: FsmResult['type'], timeoutMs: number): Promise<void> {
  await proposeChecked(node, cmd, expect, timeoutMs);
}
