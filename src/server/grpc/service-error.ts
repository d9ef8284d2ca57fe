import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { HeraldError, isHeraldError } from '../../herald-error.js';
import { ERROR_CODE_KEY, LEADER_ADDRESS_KEY, LEADER_ID_KEY, RETRY_AFTER_MS_KEY, grpcStatusOf } from './grpc-status-map.js';

/**
 * Turns anything a handler threw into a gRPC error a client can act on. HeraldErrors keep their
 * message and carry their stable code (and the leader's address, for NOT_LEADER) in trailing
 * metadata; anything else is an INTERNAL error whose details stay in the server log, so no input
 * can leak internals or crash the node.
 */
export function toServiceError(err: unknown): ServiceError {
  const metadata = new Metadata();
  if (isHeraldError(err)) {
    metadata.set(ERROR_CODE_KEY, err.code);
    if (err.details.leaderId) metadata.set(LEADER_ID_KEY, err.details.leaderId);
    if (err.details.leaderAddress) metadata.set(LEADER_ADDRESS_KEY, err.details.leaderAddress);
    if (typeof err.details.retryAfterMs === 'number') metadata.set(RETRY_AFTER_MS_KEY, String(Math.max(0, Math.ceil(err.details.retryAfterMs))));
    const message = capped(withField(err));
    return Object.assign(new Error(message), { code: grpcStatusOf[err.code], details: message, metadata });
  }
  if (isServiceError(err)) return err;
  metadata.set(ERROR_CODE_KEY, 'INTERNAL');
  const message = 'internal error (see the server log)';
  return Object.assign(new Error(message), { code: status.INTERNAL, details: message, metadata });
}

/**
 * The status message travels in an HTTP/2 trailer: a message echoing a huge input (a 1 MiB id)
 * would exceed the client's header limit and break its whole connection, every other call on it
 * included. Messages are cut to a size any client takes.
 */
const MAX_MESSAGE_CHARS = 1024;

function capped(message: string): string {
  return message.length <= MAX_MESSAGE_CHARS ? message : `${message.slice(0, MAX_MESSAGE_CHARS)}… (cut)`;
}

/** Validation messages name the field they are about, so a person knows what to fix. */
function withField(err: HeraldError): string {
  const field = err.details.field;
  if (typeof field !== 'string' || field === '' || err.message.startsWith(field)) return err.message;
  return `${field}: ${err.message}`;
}

function isServiceError(err: unknown): err is ServiceError {
  return err instanceof Error && typeof (err as Partial<ServiceError>).code === 'number' && (err as Partial<ServiceError>).metadata instanceof Metadata;
}

