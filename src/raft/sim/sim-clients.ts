// Simulated clients: each issues one operation at a time (a put proposed through the driver, or
// a get behind the driver's ReadIndex barrier) against the node it believes leads, and records
// the outcome as a history for the linearizability checker.
//
// Times are the simulator's client clock (4 per unit, see simulator.ts).
//
// Outcomes: a put is 'ok' once the driver answers it or its entry is seen committed anywhere,
// and 'failed' when the driver says it was never applied (NOT_LEADER); a timeout, a lost
// leadership or a crash leave it 'unknown' (return = Infinity) unless its entry later commits.
// A get is 'ok' with the value its node holds once the barrier resolves; a get that fails has
// no effect and is left out.

import { isHeraldError } from '../../herald-error.js';
import type { NodeId } from '../types.js';
import { decodePut, encodePut } from './kv-command.js';
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
  private readonly putsById = new Map<number, ClientOp>();
  private nextId = 1;

  constructor(
    private readonly clients: number,
    private readonly rng: Prng,
    private readonly opRate: number,
    private readonly opTimeout: number,
    /** The client clock now (for answers that arrive while the simulation runs). */
    private readonly clock: () => number,
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
          if (op.input.kind === 'get') this.finish(op, 'unknown');
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
    this.busy.set(client, op);
    this.trace?.(`t=${Math.floor(now / 4)} client ${client} op ${id} ${describe(input)} at ${node.id}`);
    const refused = (e: unknown): boolean => {
      if (!isHeraldError(e, 'NOT_LEADER') && !isHeraldError(e, 'NO_LEADER')) return false;
      const leader = e.details.leaderId;
      if (typeof leader === 'string' && leader !== '') this.leaderGuess.set(client, leader);
      else this.leaderGuess.delete(client);
      return true;
    };
    if (input.kind === 'put') {
      this.putsById.set(id, op);
      node.driver.propose(encodePut({ opId: id, key, value: input.value })).then(
        () => this.finish(op, 'ok', 'ok'),
        // NOT_LEADER: never appended, or replaced by another leader's entry (never applied).
        (e: unknown) => this.finish(op, refused(e) ? 'failed' : 'unknown'),
      );
    } else {
      const sm = node.sm;
      node.driver.readIndex({ timeoutMs: this.opTimeout }).then(
        () => this.finish(op, 'ok', sm.get(key)),
        (e: unknown) => {
          refused(e);
          this.finish(op, 'unknown');
        },
      );
    }
  }

  /** An entry was first seen committed: the put it carries took effect. */
  committed(data: Uint8Array): void {
    if (data.length === 0) return;
    const op = this.putsById.get(decodePut(data).opId);
    if (op) this.finish(op, 'ok', 'ok');
  }

  /** A node crashed: its pending operations will never be answered. */
  crashed(node: SimNode): void {
    for (const op of this.busy.values()) if (op.node === node.id) this.finish(op, 'unknown');
    // Puts whose client gave up waiting are still the node's to answer.
    for (const op of this.putsById.values()) if (op.node === node.id && op.outcome === 'pending') this.finish(op, 'unknown');
  }

  private finish(op: ClientOp, outcome: Outcome, output?: string): void {
    if (op.outcome === 'ok' || op.outcome === 'failed') return;
    if (op.outcome === 'unknown' && outcome !== 'ok') return;
    if (op.outcome === 'unknown' && op.input.kind === 'get') return;
    op.outcome = outcome;
    if (outcome === 'ok' || outcome === 'failed') op.return = this.clock();
    if (output !== undefined) op.output = output;
    if (outcome === 'ok' || outcome === 'failed') this.putsById.delete(op.id);
    this.trace?.(`t=${Math.floor(op.return / 4)} op ${op.id} ${outcome}${op.input.kind === 'get' && outcome === 'ok' ? ` '${output}'` : ''}`);
  }

  /** Puts issued before `before` that are still waiting for an answer. */
  undecidedPuts(before = Infinity): ClientOp[] {
    return this.ops.filter((op) => op.input.kind === 'put' && op.outcome === 'pending' && op.call < before);
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
