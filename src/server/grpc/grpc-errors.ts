// The client side of service-error.ts: a failed call from one of our servers back into a
// HeraldError (code, leader id and address from the trailing metadata), for forwarding hops.

import { status, type ServiceError } from '@grpc/grpc-js';
import { HeraldError, type ErrorCode } from '../../herald-error.js';
import { ERROR_CODE_KEY, LEADER_ADDRESS_KEY, LEADER_ID_KEY, grpcStatusOf } from './grpc-status-map.js';

const NEVER_SENT = /ECONNREFUSED|No connection established|connect ECONNREFUSED/i;

/** Rebuilds a HeraldError from a failed call (our servers put the code in metadata). */
export function fromServiceError(e: ServiceError, remote = false): HeraldError {
  const code = e.metadata?.get(ERROR_CODE_KEY)[0];
  const leaderId = e.metadata?.get(LEADER_ID_KEY)[0];
  const leaderAddress = e.metadata?.get(LEADER_ADDRESS_KEY)[0];
  const details = {
    ...(leaderId ? { leaderId: String(leaderId) } : {}),
    ...(leaderAddress ? { leaderAddress: String(leaderAddress) } : {}),
    grpcCode: e.code,
    remote,
    // The call never left this process (no connection): the server cannot have acted on it.
    neverSent: e.code === status.UNAVAILABLE && code === undefined && NEVER_SENT.test(e.details || e.message),
  };
  if (typeof code === 'string' && code in grpcStatusOf) return new HeraldError(code as ErrorCode, e.details || e.message, details);
  return new HeraldError(e.code === status.DEADLINE_EXCEEDED ? 'PROPOSAL_TIMEOUT' : 'NOT_READY', e.details || e.message, details);
}
