// A small KV client for Raft runtime tests and benches: commands go through RaftService.Forward
// on a node's peer port (any node; followers forward once to the leader). It follows NOT_LEADER
// hints and retries only errors that guarantee the command was not applied.

import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import type { RaftServiceClient } from '../../../src/gen/herald/raft/v1/raft.js';
import { decodeKvResult, encodeKvCommand, type KvCommand, type KvResult } from '../../../src/raft/kv/kv-command.js';
import { fromServiceError } from '../../../src/server/grpc/grpc-errors.js';
import { raftClient } from '../../../src/server/peer/raft-client.js';
import type { HeraldError } from '../../../src/herald-error.js';

export interface KvOutcome extends KvResult {
  index: number;
}

export class KvClient {
  private readonly clients = new Map<string, RaftServiceClient>();

  constructor(
    private readonly clusterId: string,
    /** node id -> peer address */
    private readonly peers: Map<string, string>,
  ) {}

  private client(id: string): RaftServiceClient {
    let c = this.clients.get(id);
    if (!c) {
      c = raftClient(this.peers.get(id)!);
      this.clients.set(id, c);
    }
    return c;
  }

  /** One Forward call to node `id`; rejects with a HeraldError. */
  forward(id: string, cmd: KvCommand, timeoutMs = 5000): Promise<KvOutcome> {
    const command = Buffer.from(encodeKvCommand(cmd));
    return new Promise((resolve, reject) => {
      this.client(id).forward({ clusterId: this.clusterId, command, timeoutMs }, new Metadata(), { deadline: Date.now() + timeoutMs + 2000 }, (err: ServiceError | null, r) => {
        if (err) reject(Object.assign(fromServiceError(err), { grpcCode: err.code }));
        else resolve({ ...decodeKvResult(r.result), index: r.index });
      });
    });
  }

  readIndex(id: string, timeoutMs = 5000): Promise<number> {
    return new Promise((resolve, reject) => {
      this.client(id).readIndex({ clusterId: this.clusterId }, new Metadata(), { deadline: Date.now() + timeoutMs }, (err: ServiceError | null, r) =>
        err ? reject(fromServiceError(err)) : resolve(r.index),
      );
    });
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }
}

/**
 * Errors after which the command certainly did not take effect: the node was not leader and
 * knew it before appending, or it could not be reached at all. A retry cannot duplicate it.
 */
export function isSafeToRetry(e: unknown): boolean {
  const he = e as HeraldError & { grpcCode?: number };
  if (he?.code === 'NOT_LEADER' || he?.code === 'NO_LEADER' || he?.code === 'SHUTTING_DOWN') return true;
  return false;
}

export { status };
