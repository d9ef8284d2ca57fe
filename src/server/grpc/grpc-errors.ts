// The client side of service-error.ts: a failed call from one of our servers back into a
// HeraldError (code, leader id and address from the trailing metadata), for forwarding hops.

import { status, type ServiceError } from '@grpc/grpc-js';
import { HeraldError, type ErrorCode } from '../../herald-error.js';
import { ERROR_CODE_KEY, LEADER_ADDRESS_KEY, LEADER_ID_KEY, grpcStatusOf } from './grpc-status-map.js';

/**
 * Rebuilds a HeraldError from a failed call. A Herald server puts its error code in the trailing
 * metadata: such an error is `remote` (the server decided it); without one, the transport failed
 * and the server may or may not have acted on the call.
 */
export function fromServiceError(e: ServiceError): HeraldError {
  const code = e.metadata?.get(ERROR_CODE_KEY)[0];
  const leaderId = e.metadata?.get(LEADER_ID_KEY)[0];
  const leaderAddress = e.metadata?.get(LEADER_ADDRESS_KEY)[0];
  const remote = typeof code === 'string' && code in grpcStatusOf;
  const details = {
    ...(leaderId ? { leaderId: String(leaderId) } : {}),
    ...(leaderAddress ? { leaderAddress: String(leaderAddress) } : {}),
    grpcCode: e.code,
    remote,
  };
  if (remote) return new HeraldError(code as ErrorCode, e.details || e.message, details);
  return new HeraldError(e.code === status.DEADLINE_EXCEEDED ? 'PROPOSAL_TIMEOUT' : 'NOT_READY', e.details || e.message, details);
}
