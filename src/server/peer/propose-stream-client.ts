// The calling side of RaftService.ProposeStream: proposals multiplexed over one stream to a node,
// each resolved by the outcome carrying its id. Proposals made in one event-loop turn go out in
// one message. A stream that breaks fails what it had in flight with OUTCOME_UNKNOWN (the node
// may have committed them); the next proposal opens a new stream.

import { Metadata, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import type { Proposal, ProposeError, ProposeStreamRequest, ProposeStreamResponse, RaftServiceClient } from '../../gen/herald/raft/v1/raft.js';
import { HeraldError, type ErrorCode } from '../../herald-error.js';
import { fromServiceError } from '../grpc/grpc-errors.js';
import { grpcStatusOf } from '../grpc/grpc-status-map.js';
import { MAX_PROPOSAL_TIMEOUT_MS } from './propose-stream.js';

interface Pending {
  resolve: (o: { index: number; result: Uint8Array }) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

export interface ProposeStreamClientOptions {
  clusterId: string;
  /** Sent with the stream (e.g. the forwarded marker). */
  metadata?: Metadata;
  /** Default per-proposal timeout, ms (default 10,000). */
  timeoutMs?: number;
}

/** A HeraldError from a proposal's error answer (unknown codes become INTERNAL). */
export function heraldErrorOf(e: ProposeError): HeraldError {
  const code: ErrorCode = e.code in grpcStatusOf ? (e.code as ErrorCode) : 'INTERNAL';
  return new HeraldError(code, e.message, {
    ...(e.leaderId ? { leaderId: e.leaderId } : {}),
    ...(e.leaderAddress ? { leaderAddress: e.leaderAddress } : {}),
    remote: true,
  });
}

/** A request message is cut once its commands reach this many bytes. */
const MAX_REQUEST_BYTES = 1024 * 1024;

export class ProposeStreamClient {
  /** Messages written and received, streams opened (batching and reconnects are observable). */
  readonly stats = { messagesSent: 0, messagesReceived: 0, streamsOpened: 0 };
  private queued: Proposal[] = [];
  private queuedBytes = 0;
  private flushScheduled = false;
  private stream: ClientDuplexStream<ProposeStreamRequest, ProposeStreamResponse> | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly client: RaftServiceClient,
    private readonly opts: ProposeStreamClientOptions,
  ) {}

  /** Resolves with the command's apply result once the node answered it. */
  propose(command: Uint8Array, timeoutMs = this.opts.timeoutMs ?? 10_000): Promise<{ index: number; result: Uint8Array }> {
    if (this.closed) return Promise.reject(new HeraldError('SHUTTING_DOWN', 'the proposal stream is closed'));
    this.open();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      // The node answers by its own deadline (at most MAX_PROPOSAL_TIMEOUT_MS); this one only
      // guards against an answer that never comes.
      const guardMs = (timeoutMs > 0 ? Math.min(timeoutMs, MAX_PROPOSAL_TIMEOUT_MS) : 10_000) + 1000;
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new HeraldError('OUTCOME_UNKNOWN', `no answer to proposal ${id} within ${guardMs} ms`));
      }, guardMs);
      this.pending.set(id, { resolve, reject, timer });
      this.queued.push({ id, command: Buffer.from(command.buffer, command.byteOffset, command.byteLength), timeoutMs });
      this.queuedBytes += command.length;
      if (this.queuedBytes >= MAX_REQUEST_BYTES) this.flush();
      else if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Sends what is queued; everything queued belongs to the current stream (a break empties the queue). */
  private flush(): void {
    this.flushScheduled = false;
    const proposals = this.queued;
    this.queued = [];
    this.queuedBytes = 0;
    if (proposals.length > 0 && this.stream) {
      this.stats.messagesSent++;
      this.stream.write({ clusterId: this.opts.clusterId, proposals });
    }
  }

  inFlight(): number {
    return this.pending.size;
  }

  /**
   * Graceful close: sends what is queued, ends the request side and resolves once the node has
   * answered everything in flight (or the stream broke, failing the rest). No new proposals.
   */
  async end(): Promise<void> {
    this.closed = true;
    this.flush();
    const stream = this.stream;
    if (!stream) return;
    const done = new Promise<void>((resolve) => {
      stream.once('end', resolve);
      stream.once('error', () => resolve());
    });
    stream.end();
    await done;
  }

  /** Fails what is in flight (OUTCOME_UNKNOWN) and cancels the stream. */
  close(): void {
    this.closed = true;
    this.stream?.cancel();
    this.failAll('the proposal stream was closed');
  }

  private open(): ClientDuplexStream<ProposeStreamRequest, ProposeStreamResponse> {
    if (this.stream) return this.stream;
    const stream = this.client.proposeStream(this.opts.metadata ?? new Metadata());
    this.stream = stream;
    this.stats.streamsOpened++;
    stream.on('data', (r: ProposeStreamResponse) => {
      this.stats.messagesReceived++;
      for (const o of r.outcomes) {
        const p = this.pending.get(o.id);
        if (!p) continue;
        this.pending.delete(o.id);
        clearTimeout(p.timer);
        if (o.error) p.reject(heraldErrorOf(o.error));
        else p.resolve({ index: o.index, result: o.result });
      }
    });
    const broken = (why: string, refusal?: HeraldError) => {
      if (this.stream !== stream) return;
      this.stream = undefined;
      this.queued = [];
      this.queuedBytes = 0;
      this.failAll(why, refusal);
    };
    stream.on('error', (e: ServiceError) => {
      // A node that refused the stream (another cluster) acted on none of its proposals.
      const err = fromServiceError(e, true);
      broken(`the proposal stream broke: ${e.details || e.message}`, err.code === 'CLUSTER_MISMATCH' ? err : undefined);
    });
    stream.on('end', () => broken('the node ended the proposal stream'));
    return stream;
  }

  private failAll(why: string, refusal?: HeraldError): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) {
      clearTimeout(p.timer);
      p.reject(refusal ?? new HeraldError('OUTCOME_UNKNOWN', why, { remote: true }));
    }
  }
}
