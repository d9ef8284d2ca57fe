// Simulated clients: each issues one operation at a time (a put proposed through Raft, or a
// get served by ReadIndex) against the node it believes leads, and records the outcome as a
// history for the linearizability checker.
//
// Times are the simulator's client clock (4 per unit, see simulator.ts).
//
// Outcomes: a put is 'ok' once its (index, term) is seen committed and 'failed' once a
// different term is committed at its index (its entry can then never commit); otherwise it
// stays 'unknown' (return = Infinity). A get is 'ok' when its node has applied up to the read
// index; a get that never completes has no effect and is left out. Requests refused before
// anything was proposed (NOT_LEADER, NO_LEADER) are 'failed'.

import { isHeraldError } from '../../herald-error.js';
import type { NodeId, ReadState } from '../types.js';
import { encodePut } from './kv-command.js';
import type { Prng } from './prng.js';
import type { SimNode } from './sim-node.js';

export type KvInput = { kind: 'put'; key: string; value: string } | { kind: 'get'; key: string };

export type Outcome = 'pending' | 'ok' | 'failed' | 'unknown';

export interface ClientOp {
  id: number;
  client: number;
  input: KvInput;
  node: NodeId;
  call: number;
  return: number;
  outcome: Outcome;
  output?: string;
  ticket?: { index: number; term: number };
  /** Reads: the node's incarnation and the read index once known. */
  incarnation?: number;
  readIndex?: number;
}

export interface ClientStats {
  ok: number;
  failed: number;
  unknown: number;
}

const KEYS = ['x', 'y', 'z'];

export class SimClients {
  readonly ops: ClientOp[] = [];
  private readonly busy = new Map<number, ClientOp>();
  private readonly leaderGuess = new Map<number, NodeId>();
  /** Puts awaiting a commit decision, by index. */
  private readonly putsByIndex = new Map<number, ClientOp[]>();
  /** Reads awaiting a read state, by context. */
  private readonly readsByContext = new Map<string, ClientOp>();
  /** Reads with a read index, waiting for their node to apply it. */
  private readonly waitingReads: ClientOp[] = [];
  private nextId = 1;

  constructor(
    private readonly clients: number,
    private readonly rng: Prng,
    private readonly opRate: number,
    private readonly opTimeout: number,
    /** The term committed at an index, if known (a stale leader may propose at a decided index). */
    private readonly committedTerm: (index: number) => number | undefined,
    private readonly trace?: (line: string) => void,
  ) {}

  /** Issues new operations from idle clients and frees clients whose op timed out. */
  step(now: number, nodes: ReadonlyMap<NodeId, SimNode>, ids: readonly NodeId[], rate = this.opRate): void {
    for (let c = 0; c < this.clients; c++) {
      const op = this.busy.get(c);
      if (op) {
        if (op.outcome !== 'pending') this.busy.delete(c);
        else if (now - op.call > this.opTimeout) {
          // The client gives up; a put stays tracked (it may still commit), a read is dropped.
          if (op.input.kind === 'get') this.finishRead(op, 'unknown', now);
          this.busy.delete(c);
          // Like a real SDK after a timeout: try someone else next time.
          this.leaderGuess.delete(c);
        }
        continue;
      }
      if (!this.rng.chance(rate)) continue;
      let target = this.leaderGuess.get(c);
      if (target === undefined || !nodes.get(target)!.up) target = this.rng.pick(ids);
      const node = nodes.get(target)!;
      if (!node.up) continue;
      this.issue(c, node, now);
    }
  }

  private issue(client: number, node: SimNode, now: number): void {
    const key = this.rng.pick(KEYS);
    const id = this.nextId++;
    const isPut = this.rng.chance(0.6);
    const input: KvInput = isPut ? { kind: 'put', key, value: `v${id}` } : { kind: 'get', key };
    const op: ClientOp = { id, client, input, node: node.id, call: now, return: Infinity, outcome: 'pending' };
    this.ops.push(op);
    const refused = input.kind === 'put' ? node.role !== 'leader' : node.role !== 'leader' && node.leader === '';
    if (refused) {
      // What propose()/readIndex() would throw (NOT_LEADER / NO_LEADER), without paying for an
      // exception per refusal.
      op.outcome = 'failed';
      op.return = now;
      if (node.leader !== '') this.leaderGuess.set(client, node.leader);
      else this.leaderGuess.delete(client);
      return;
    }
    try {
      if (input.kind === 'put') {
        op.ticket = node.raft.propose(encodePut({ opId: id, key, value: input.value }));
        let list = this.putsByIndex.get(op.ticket.index);
        if (!list) this.putsByIndex.set(op.ticket.index, (list = []));
        list.push(op);
        const decided = this.committedTerm(op.ticket.index);
        if (decided !== undefined) this.committed(op.ticket.index, decided, now);
      } else {
        op.incarnation = node.incarnation;
        this.readsByContext.set(String(id), op);
        node.raft.readIndex(new TextEncoder().encode(String(id)));
      }
      this.busy.set(client, op);
      this.trace?.(`t=${Math.floor(now / 4)} client ${client} op ${id} ${describe(input)} at ${node.id}`);
    } catch (e) {
      if (isHeraldError(e, 'NOT_LEADER') || isHeraldError(e, 'NO_LEADER') || isHeraldError(e, 'INVALID_STATE')) {
        op.outcome = 'failed';
        op.return = now;
        this.readsByContext.delete(String(id));
        const leader = isHeraldError(e) ? e.details.leaderId : undefined;
        if (typeof leader === 'string' && leader !== '') this.leaderGuess.set(client, leader);
        else this.leaderGuess.delete(client);
        return;
      }
      throw e;
    }
  }

  /** An index was committed (first sighting) with `term`: decides the puts proposed there. */
  committed(index: number, term: number, now: number): void {
    const list = this.putsByIndex.get(index);
    if (!list) return;
    this.putsByIndex.delete(index);
    for (const op of list) {
      if (op.outcome !== 'pending' && op.outcome !== 'unknown') continue;
      if (op.ticket!.term === term) {
        op.outcome = 'ok';
        op.output = 'ok';
        op.return = now;
      } else {
        op.outcome = 'failed';
        op.return = now;
      }
      this.trace?.(`t=${Math.floor(now / 4)} op ${op.id} ${op.outcome}`);
    }
  }

  readState(node: SimNode, rs: ReadState, now: number): void {
    const ctx = new TextDecoder().decode(rs.context);
    const op = this.readsByContext.get(ctx);
    if (!op || op.node !== node.id || op.incarnation !== node.incarnation || op.outcome !== 'pending') return;
    this.readsByContext.delete(ctx);
    op.readIndex = rs.index;
    this.waitingReads.push(op);
    this.applied(node, now);
  }

  /** `node` applied more entries: answers the reads whose index it reached. */
  applied(node: SimNode, now: number): void {
    if (this.waitingReads.length === 0) return;
    for (let i = 0; i < this.waitingReads.length; i++) {
      const op = this.waitingReads[i]!;
      if (op.node !== node.id || node.appliedIndex < op.readIndex!) continue;
      if (op.outcome === 'pending') {
        op.output = node.kv.get(op.input.key) ?? '';
        op.outcome = 'ok';
        op.return = now;
        this.trace?.(`t=${Math.floor(now / 4)} op ${op.id} ok '${op.output}' (read index ${op.readIndex})`);
      }
      this.waitingReads.splice(i--, 1);
    }
  }

  /** A node crashed: its reads are lost. Puts stay tracked: the log decides them. */
  crashed(node: SimNode, now: number): void {
    for (const [ctx, op] of this.readsByContext) {
      if (op.node === node.id) {
        this.readsByContext.delete(ctx);
        this.finishRead(op, 'unknown', now);
      }
    }
    for (let i = 0; i < this.waitingReads.length; i++) {
      const op = this.waitingReads[i]!;
      if (op.node === node.id) {
        this.finishRead(op, 'unknown', now);
        this.waitingReads.splice(i--, 1);
      }
    }
  }

  private finishRead(op: ClientOp, outcome: Outcome, now: number): void {
    if (op.outcome !== 'pending') return;
    op.outcome = outcome;
    op.return = outcome === 'unknown' ? Infinity : now;
  }

  /** Puts issued before `before` that no commit has decided yet. */
  undecidedPuts(before = Infinity): ClientOp[] {
    return this.ops.filter((op) => op.input.kind === 'put' && op.ticket && op.outcome === 'pending' && op.call < before);
  }

  stats(): ClientStats {
    const s: ClientStats = { ok: 0, failed: 0, unknown: 0 };
    for (const op of this.ops) {
      if (op.outcome === 'ok') s.ok++;
      else if (op.outcome === 'failed') s.failed++;
      else s.unknown++;
    }
    return s;
  }
}

export function describe(input: KvInput): string {
  return input.kind === 'put' ? `put ${input.key}=${input.value}` : `get ${input.key}`;
}
