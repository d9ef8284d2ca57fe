import { randomUUID } from 'node:crypto';
import type { handleUnaryCall, ServerUnaryCall } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { isHeraldError } from '../../herald-error.js';
import type { NodeMetrics } from '../node/metrics.js';
import { toServiceError } from '../grpc/service-error.js';
import { systemMonotonicClock } from '../../raft/monotonic-clock.js';

/** What every public RPC handler gets: the request, its metadata, a logger and its deadline. */
export interface CallContext {
  requestId: string;
  logger: Logger;
  /** Milliseconds left before the caller's deadline (Infinity when none). */
  remainingMs(): number;
  /** True when another node forwarded this call (never forward it again). */
  forwarded: boolean;
  call: ServerUnaryCall<unknown, unknown>;
}

export const REQUEST_ID_KEY = 'x-request-id';
export const FORWARDED_CALL_KEY = 'herald-forwarded-call';

/**
 * Adapts an async handler to grpc-js: one place for request ids, logging, metrics and turning
 * errors into precise statuses. A handler bug becomes INTERNAL for that call, never a crash.
 */
export function unary<Req, Res>(
  method: string,
  deps: { logger: Logger; metrics?: NodeMetrics },
  handler: (request: Req, ctx: CallContext) => Promise<Res>,
): handleUnaryCall<Req, Res> {
  return (call, callback) => {
    const given = call.metadata.get(REQUEST_ID_KEY)[0];
    const requestId = typeof given === 'string' && given.length > 0 && given.length <= 128 ? given : randomUUID();
    const logger = deps.logger.child({ requestId, method });
    const deadline = call.getDeadline();
    const deadlineMs = deadline instanceof Date ? deadline.getTime() : typeof deadline === 'number' ? deadline : Infinity;
    // grpc-js gives a wall-clock deadline; from here on it is counted on the monotonic clock, so
    // a wall-clock step neither stretches nor cuts the call.
    const expiresAt = Number.isFinite(deadlineMs) ? systemMonotonicClock.nowMs() + (deadlineMs - Date.now()) : Infinity;
    const ctx: CallContext = {
      requestId,
      logger,
      remainingMs: () => expiresAt - systemMonotonicClock.nowMs(),
      forwarded: call.metadata.get(FORWARDED_CALL_KEY).length > 0,
      call: call as ServerUnaryCall<unknown, unknown>,
    };
    handler(call.request, ctx).then(
      (response) => {
        deps.metrics?.grpcRequests.inc({ method, code: 'OK' });
        callback(null, response);
      },
      (err: unknown) => {
        const se = toServiceError(err);
        deps.metrics?.grpcRequests.inc({ method, code: String(se.code) });
        if (isHeraldError(err)) logger.debug({ code: err.code, msg: err.message }, 'call failed');
        else logger.error({ err }, 'call failed unexpectedly');
        callback(se, null);
      },
    );
  };
}
