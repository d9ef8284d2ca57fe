import { randomUUID } from 'node:crypto';
import type { handleUnaryCall, Metadata, ServiceError } from '@grpc/grpc-js';
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
  /** The gRPC call (a stream, for a batch of one): its metadata travels with a forwarded write. */
  call: { metadata: Metadata };
}

export const REQUEST_ID_KEY = 'x-request-id';
export const FORWARDED_CALL_KEY = 'herald-forwarded-call';

/** The caller's request id (x-request-id, up to 128 characters), or a fresh one. */
export function requestIdOf(metadata: Metadata): string {
  const given = metadata.get(REQUEST_ID_KEY)[0];
  return typeof given === 'string' && given.length > 0 && given.length <= 128 ? given : randomUUID();
}

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
    const requestId = requestIdOf(call.metadata);
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
      call,
    };
    handler(call.request, ctx).then(
      (response) => {
        recordSuccess(deps, method, ctx, call.request);
        callback(null, response);
      },
      (err: unknown) => callback(recordFailure(deps, method, ctx, call.request, err), null),
    );
  };
}

type OutcomeDeps = { metrics?: NodeMetrics; audit?: Logger };

/** Counts and audits one call that succeeded (or one stream batch). */
export function recordSuccess(deps: OutcomeDeps, method: string, ctx: CallContext, request: unknown): void {
  deps.metrics?.grpcRequests.inc({ method, code: 'OK' });
  auditLine(deps.audit, method, ctx, request, 'OK');
}

/** Counts, audits and logs one call that failed (or one stream batch); returns the status to answer with. */
export function recordFailure(deps: OutcomeDeps, method: string, ctx: CallContext, request: unknown, err: unknown): ServiceError {
  const se = toServiceError(err);
  deps.metrics?.grpcRequests.inc({ method, code: String(se.code) });
  auditLine(deps.audit, method, ctx, request, isHeraldError(err) ? err.code : 'INTERNAL');
  if (isHeraldError(err)) ctx.logger.debug({ code: err.code, msg: err.message }, 'call failed');
  else ctx.logger.error({ err }, 'call failed unexpectedly');
  return se;
}
