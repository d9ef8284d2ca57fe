import { status } from '@grpc/grpc-js';

/**
 * The HTTP status a gRPC status travels as on the HTTP port (the mapping of google.api's HTTP
 * rules and of Connect). The Herald error code → gRPC status table stays the one in
 * grpc-status-map.ts; this only picks the HTTP status line for the gRPC code it produced.
 */
export const httpStatusOf: Record<status, number> = {
  [status.OK]: 200,
  [status.CANCELLED]: 499,
  [status.UNKNOWN]: 500,
  [status.INVALID_ARGUMENT]: 400,
  [status.DEADLINE_EXCEEDED]: 504,
  [status.NOT_FOUND]: 404,
  [status.ALREADY_EXISTS]: 409,
  [status.PERMISSION_DENIED]: 403,
  [status.RESOURCE_EXHAUSTED]: 429,
  [status.FAILED_PRECONDITION]: 400,
  [status.ABORTED]: 409,
  [status.OUT_OF_RANGE]: 400,
  [status.UNIMPLEMENTED]: 501,
  [status.INTERNAL]: 500,
  [status.UNAVAILABLE]: 503,
  [status.DATA_LOSS]: 500,
  [status.UNAUTHENTICATED]: 401,
};
