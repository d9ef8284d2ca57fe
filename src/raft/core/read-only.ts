// ReadIndex bookkeeping on the leader (etcd's readOnly, "safe" option): a read is pinned to the
// commit index at arrival and released only after a quorum acknowledged a heartbeat carrying its
// context, which proves no newer leader had been elected when the read arrived.

import type { NodeId } from '../types.js';
import { isQuorum } from './quorum.js';

export interface ReadIndexRequest {
  /** Who asked: the leader itself or a follower that forwarded the read. */
  from: NodeId;
  context: Uint8Array;
  index: number;
  acks: Set<NodeId>;
}

export function contextKey(context: Uint8Array): string {
  return Buffer.from(context.buffer, context.byteOffset, context.byteLength).toString('base64');
}

export class ReadOnly {
  private readonly pending = new Map<string, ReadIndexRequest>();
  private readonly queue: string[] = [];

  addRequest(index: number, from: NodeId, context: Uint8Array): void {
    const key = contextKey(context);
    if (this.pending.has(key)) return;
    this.pending.set(key, { from, context, index, acks: new Set() });
    this.queue.push(key);
  }

  /** Records an ack; returns whether the request now has a quorum of acks. */
  recvAck(from: NodeId, context: Uint8Array, voters: readonly NodeId[]): boolean {
    const req = this.pending.get(contextKey(context));
    if (!req) return false;
    // Learners answer heartbeats too, but only voters' acks prove leadership.
    if (voters.includes(from)) req.acks.add(from);
    return isQuorum(voters, req.acks.size);
  }

  /**
   * Releases the acknowledged request and every request queued before it (a quorum ack for a
   * later heartbeat confirms leadership for all earlier reads too).
   */
  advance(context: Uint8Array): ReadIndexRequest[] {
    const key = contextKey(context);
    const at = this.queue.indexOf(key);
    if (at < 0) return [];
    const released = this.queue.splice(0, at + 1);
    return released.map((k) => {
      const req = this.pending.get(k)!;
      this.pending.delete(k);
      return req;
    });
  }

  /** The context of the newest pending read: heartbeats carry it so acks confirm all reads. */
  lastPendingContext(): Uint8Array | undefined {
    const key = this.queue[this.queue.length - 1];
    return key === undefined ? undefined : this.pending.get(key)!.context;
  }

  get size(): number {
    return this.queue.length;
  }
}
