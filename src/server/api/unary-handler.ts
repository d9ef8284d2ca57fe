import { randomUUID } from 'node:crypto';
import type { handleUnaryCall, ServerUnaryCall } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { isHeraldError } from '../../herald-error.js';
import type { NodeMetrics } from '../node/metrics.js';
import { toServiceError } from '../grpc/service-error.js';
import { systemMonotonicClock } from '../../raft/monotonic-clock.js';
import { principalOf } from '../auth/grpc-call-guard.js';
import type { Principal } from '../auth/principal.js';
import { auditLine } from '../auth/audit-line.js';

/** What every public RPC handler gets: the request, its metadata, a logger and its deadline. */
export interface CallContext {
  requestId: string;
  logger: Logger;
  /** Milliseconds left before the caller's deadline (Infinity when none). */
  remainingMs(): number;
  /** True when another node forwarded this call (never forward it again). */
  forwarded: boolean;
  /** Who is calling (auth/grpc-call-guard.ts authenticated it; the anonymous admin while auth is off). */
  principal: Principal;
  /** Set when this node sent the call on to the leader (the leader writes its audit line). */
  sentToLeader: boolean;
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
  deps: { logger: Logger; metrics?: NodeMetrics; audit?: Logger },
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
      principal: principalOf(call),
      sentToLeader: false,
      call: call as ServerUnaryCall<unknown, unknown>,
    };
    handler(call.request, ctx).then(
      (response) => {
        deps.metrics?.grpcRequests.inc({ method, code: 'OK' });
        auditLine(deps.audit, method, ctx, call.request, 'OK');
        callback(null, response);
      },
      (err: unknown) => {
        const se = toServiceError(err);
        deps.metrics?.grpcRequests.inc({ method, code: String(se.code) });
        auditLine(deps.audit, method, ctx, call.request, isHeraldError(err) ? err.code : 'INTERNAL');
        if (isHeraldError(err)) logger.debug({ code: err.code, msg: err.message }, 'call failed');
        else logger.error({ err }, 'call failed unexpectedly');
        callback(se, null);
      },
    );
  };
}
