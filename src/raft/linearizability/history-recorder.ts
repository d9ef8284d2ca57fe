// Records a concurrent client history for the checker, the way a test harness sees it: each call
// is invoked, then either answered (ok), known not to have happened (fail), or left unknown.
// The clock is injected (the simulator's logical time, or performance.now in the chaos suite):
// all clients of one history must share it, since real-time order is what linearizability
// constrains.

import type { Operation } from './model.js';

export type OpHandle = number;

interface Pending<I> {
  clientId: number | string;
  input: I;
  call: number;
}

export class HistoryRecorder<I, O> {
  private readonly done: Array<Operation<I, O> | undefined> = [];
  private readonly open = new Map<OpHandle, Pending<I>>();
  private nextHandle = 0;

  constructor(private readonly now: () => number) {}

  /** Notes the call; do it *before* sending the request. */
  invoke(clientId: number | string, input: I): OpHandle {
    const h = this.nextHandle++;
    this.open.set(h, { clientId, input, call: this.now() });
    this.done.push(undefined);
    return h;
  }

  /** The response arrived; do it *after* receiving it. */
  ok(h: OpHandle, output: O): void {
    const p = this.take(h);
    this.done[h] = { clientId: p.clientId, input: p.input, call: p.call, return: this.now(), output };
  }

  /**
   * The op certainly had no effect (rejected before it could be proposed, e.g. a validation
   * error or "not leader" from a node that never forwarded it): left out of the history.
   * When in doubt (timeouts, connection resets, UNAVAILABLE after forwarding), use unknown().
   */
  fail(h: OpHandle): void {
    this.take(h);
  }

  /** The outcome is unknown: it may take effect at any time after its call, or never. */
  unknown(h: OpHandle): void {
    const p = this.take(h);
    this.done[h] = { clientId: p.clientId, input: p.input, call: p.call, return: Infinity };
  }

  /** Ops invoked and not yet answered. */
  get pending(): number {
    return this.open.size;
  }

  /** The history so far in invocation order; ops still pending count as unknown. */
  operations(): Operation<I, O>[] {
    const out: Operation<I, O>[] = [];
    this.done.forEach((op, h) => {
      if (op !== undefined) out.push(op);
      else {
        const p = this.open.get(h);
        if (p !== undefined) out.push({ clientId: p.clientId, input: p.input, call: p.call, return: Infinity });
      }
    });
    return out;
  }

  private take(h: OpHandle): Pending<I> {
    const p = this.open.get(h);
    if (p === undefined) throw new Error(`HistoryRecorder: op ${h} is not pending (unknown handle or answered twice)`);
    this.open.delete(h);
    return p;
  }
}

/**
 * One JSON object per line; an unknown op's return is written as null (JSON has no Infinity).
 * For keeping a failing history as an artifact and re-checking it later.
 */
export function serializeHistory<I, O>(ops: readonly Operation<I, O>[]): string {
  return ops.map((op) => JSON.stringify({ ...op, return: op.return === Infinity ? null : op.return })).join('\n');
}

export function parseHistory<I, O>(text: string): Operation<I, O>[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const raw = JSON.parse(line) as Omit<Operation<I, O>, 'return'> & { return: number | null };
      return { ...raw, return: raw.return === null ? Infinity : raw.return };
    });
}
