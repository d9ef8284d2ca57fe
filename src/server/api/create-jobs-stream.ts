// JobService.CreateJobsStream: CreateJobs batches over one long-lived stream, so a batch costs no
// call setup (an HTTP/2 stream, headers and trailers each way), only its messages. A batch is a
// CreateJobs call in all but transport: the same checks and per-item results (createMany), the
// principal's rate limit and a token check per batch (the guard's message check), its own
// deadline, metrics and audit line. A stream works on at most MAX_BATCHES_IN_FLIGHT batches (or
// MAX_BYTES_IN_FLIGHT of specs) at once, and stops reading while answers its caller has not read
// pile up; HTTP/2 flow control then holds the sender back, so a fast sender (or one that never
// reads) queues neither work nor memory here. Answers go out as batches finish, in any order.
import { status, type handleBidiStreamingCall, type ServerDuplexStream } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { CreateJobsRequest, CreateJobsResponse, CreateJobsStreamRequest, CreateJobsStreamResponse } from '../../gen/herald/v1/job_service.js';
import { HeraldError } from '../../herald-error.js';
import { systemMonotonicClock } from '../../raft/monotonic-clock.js';
import { messageCheckOf, principalOf } from '../auth/grpc-call-guard.js';
import { ERROR_CODE_KEY } from '../grpc/grpc-status-map.js';
import { toServiceError } from '../grpc/service-error.js';
import type { NodeMetrics } from '../node/metrics.js';
import { recordFailure, recordSuccess, requestIdOf, type CallContext } from './unary-handler.js';
import { createItemBytes } from './create-item-bytes.js';

/** Batches one stream may have in the works at once. */
export const MAX_BATCHES_IN_FLIGHT = 16;
/** Spec bytes (estimated) one stream may have in the works at once. */
export const MAX_BYTES_IN_FLIGHT = 16 << 20;
const METHOD = 'CreateJobsStream';

export interface CreateJobsStreamDeps {
  logger: Logger;
  metrics?: NodeMetrics;
  audit?: Logger;
  /** One CreateJobs call's work (job-service.ts). */
  createMany(request: CreateJobsRequest, ctx: CallContext): Promise<CreateJobsResponse>;
  /** The leader's client address while this node follows ('' while it leads or knows none). */
  leaderAddress(): string;
}

type Stream = ServerDuplexStream<CreateJobsStreamRequest, CreateJobsStreamResponse>;

export interface CreateJobsStreams {
  handler: handleBidiStreamingCall<CreateJobsStreamRequest, CreateJobsStreamResponse>;
  /** Ends every open stream with UNAVAILABLE (the node is stopping); batches in the works are not answered. */
  close(): void;
}

export function createJobsStreams(deps: CreateJobsStreamDeps): CreateJobsStreams {
  const open = new Set<Stream>();
  let closed = false;

  const handler = (call: Stream): void => {
    if (closed) {
      call.emit('error', toServiceError(new HeraldError('SHUTTING_DOWN', 'this node is shutting down; send the batch to another node')));
      return;
    }
    open.add(call);
    const streamId = requestIdOf(call.metadata);
    const check = messageCheckOf(call);
    let inFlight = 0;
    let bytesInFlight = 0;
    let unreadAnswers = false;
    let paused = false;
    let halfClosed = false;
    let done = false;

    const finish = (): void => {
      done = true;
      open.delete(call);
    };
    const maybeEnd = (): void => {
      if (!done && halfClosed && inFlight === 0) {
        finish();
        call.end();
      }
    };
    const mayRead = (): boolean => inFlight < MAX_BATCHES_IN_FLIGHT && bytesInFlight < MAX_BYTES_IN_FLIGHT && !unreadAnswers;
    const flow = (): void => {
      if (done) return;
      if (paused && mayRead()) {
        paused = false;
        call.resume();
      } else if (!paused && !mayRead()) {
        paused = true;
        call.pause();
      }
    };
    const answer = (res: CreateJobsStreamResponse, bytes: number): void => {
      inFlight -= 1;
      bytesInFlight -= bytes;
      if (done || call.destroyed || call.writableEnded) return;
      // false: the caller is not reading its answers; read nothing more until they drained.
      if (!call.write(res) && !unreadAnswers) {
        unreadAnswers = true;
        call.once('drain', () => {
          unreadAnswers = false;
          flow();
        });
      }
      flow();
      maybeEnd();
    };

    call.on('data', (req: CreateJobsStreamRequest) => {
      let bytes = 0;
      for (const it of req.items) bytes += it.spec ? createItemBytes(it) : 0;
      inFlight += 1;
      bytesInFlight += bytes;
      flow();
      const ctx = batchContext(call, streamId, req);
      const work = async (): Promise<CreateJobsResponse> => {
        await check?.();
        return deps.createMany({ items: req.items }, ctx);
      };
      work().then(
        (res) => {
          recordSuccess(deps, METHOD, ctx, req);
          answer({ batchId: req.batchId, results: res.results, code: status.OK, message: '', errorCode: '', leaderAddress: deps.leaderAddress() }, bytes);
        },
        (err: unknown) => {
          const se = recordFailure(deps, METHOD, ctx, req, err);
          const code = se.metadata.get(ERROR_CODE_KEY)[0];
          answer({ batchId: req.batchId, results: [], code: se.code, message: se.details, errorCode: typeof code === 'string' ? code : '', leaderAddress: deps.leaderAddress() }, bytes);
        },
      );
    });
    call.on('end', () => {
      halfClosed = true;
      maybeEnd();
    });
    // The caller went away (cancelled, connection lost): batches in the works finish on their
    // own (their commands may already be in the log); their answers have nowhere to go.
    call.on('cancelled', finish);
    call.on('error', finish);
  };

  /** A batch's own call context: the stream's principal and metadata, the batch's own deadline. */
  function batchContext(call: Stream, streamId: string, req: CreateJobsStreamRequest): CallContext {
    const requestId = `${streamId}/${req.batchId}`;
    const expiresAt = req.timeoutMs > 0 ? systemMonotonicClock.nowMs() + req.timeoutMs : Infinity;
    return {
      requestId,
      logger: deps.logger.child({ requestId, method: METHOD }),
      remainingMs: () => expiresAt - systemMonotonicClock.nowMs(),
      forwarded: false,
      principal: principalOf(call),
      sentToLeader: false,
      call,
    };
  }

  return {
    handler,
    close() {
      closed = true;
      for (const call of [...open]) {
        open.delete(call);
        try {
          call.emit('error', toServiceError(new HeraldError('SHUTTING_DOWN', 'this node is shutting down; send the batch to another node')));
        } catch {
          call.destroy();
        }
      }
    },
  };
}
