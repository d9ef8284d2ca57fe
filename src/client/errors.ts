// Typed errors the SDK throws. A failed RPC becomes a HeraldClientError that keeps the gRPC code,
// the server's Herald error code (trailer "herald-error-code") and the leader hint, so callers
// can branch with `instanceof NotFoundError` or on `err.code` without parsing messages.
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import type { ErrorCode } from '../herald-error.js';

// Kept in sync with src/server/grpc/grpc-status-map.ts; duplicated rather than imported because the
// SDK must not pull server modules into a client bundle.
export const LEADER_ID_KEY = 'herald-leader-id';
export const LEADER_ADDRESS_KEY = 'herald-leader-address';
export const ERROR_CODE_KEY = 'herald-error-code';
export const RETRY_AFTER_MS_KEY = 'herald-retry-after-ms';

/** gRPC status names, e.g. "NOT_FOUND", as used in `HeraldClientError.code`. */
export type GrpcCodeName = keyof typeof status;

function codeName(code: number): GrpcCodeName {
  const name = (status as unknown as Record<number, string>)[code];
  return (name ?? 'UNKNOWN') as GrpcCodeName;
}

export interface HeraldClientErrorInit {
  grpcCode: status;
  message: string;
  heraldCode?: ErrorCode | string | undefined;
  leaderId?: string | undefined;
  leaderAddress?: string | undefined;
  /** The server's hint of when a retry will pass (a rate limit), in ms. */
  retryAfterMs?: number | undefined;
  /** The node that answered, when known. */
  address?: string | undefined;
  cause?: unknown;
}

/** A failed Herald call. `code` is the gRPC status name; `heraldCode` the server's precise code. */
export class HeraldClientError extends Error {
  override name = 'HeraldClientError';
  readonly grpcCode: status;
  readonly code: GrpcCodeName;
  readonly heraldCode: ErrorCode | string | undefined;
  readonly leaderId: string | undefined;
  readonly leaderAddress: string | undefined;
  readonly retryAfterMs: number | undefined;
  readonly address: string | undefined;

  constructor(init: HeraldClientErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.grpcCode = init.grpcCode;
    this.code = codeName(init.grpcCode);
    this.heraldCode = init.heraldCode;
    this.leaderId = init.leaderId;
    this.leaderAddress = init.leaderAddress;
    this.retryAfterMs = init.retryAfterMs;
    this.address = init.address;
  }
}

export class NotFoundError extends HeraldClientError {
  override name = 'NotFoundError';
}
export class AlreadyExistsError extends HeraldClientError {
  override name = 'AlreadyExistsError';
}
export class InvalidArgumentError extends HeraldClientError {
  override name = 'InvalidArgumentError';
}
export class FailedPreconditionError extends HeraldClientError {
  override name = 'FailedPreconditionError';
}
export class UnavailableError extends HeraldClientError {
  override name = 'UnavailableError';
}
export class DeadlineExceededError extends HeraldClientError {
  override name = 'DeadlineExceededError';
}
export class ResourceExhaustedError extends HeraldClientError {
  override name = 'ResourceExhaustedError';
}
export class CancelledError extends HeraldClientError {
  override name = 'CancelledError';
}
export class InternalError extends HeraldClientError {
  override name = 'InternalError';
}

const CLASS_BY_CODE: Partial<Record<status, new (init: HeraldClientErrorInit) => HeraldClientError>> = {
  [status.NOT_FOUND]: NotFoundError,
  [status.ALREADY_EXISTS]: AlreadyExistsError,
  [status.INVALID_ARGUMENT]: InvalidArgumentError,
  [status.FAILED_PRECONDITION]: FailedPreconditionError,
  [status.UNAVAILABLE]: UnavailableError,
  [status.DEADLINE_EXCEEDED]: DeadlineExceededError,
  [status.RESOURCE_EXHAUSTED]: ResourceExhaustedError,
  [status.CANCELLED]: CancelledError,
  [status.INTERNAL]: InternalError,
};

/** Builds the typed error for a gRPC status. */
export function clientError(init: HeraldClientErrorInit): HeraldClientError {
  const Cls = CLASS_BY_CODE[init.grpcCode] ?? HeraldClientError;
  return new Cls(init);
}

function firstString(md: Metadata | undefined, key: string): string | undefined {
  const v = md?.get(key)[0];
  if (v === undefined) return undefined;
  const s = typeof v === 'string' ? v : v.toString('utf8');
  return s === '' ? undefined : s;
}

/** Converts a grpc-js ServiceError into a typed HeraldClientError, reading Herald's trailers. */
export function fromServiceError(err: ServiceError, address?: string): HeraldClientError {
  const md = err.metadata instanceof Metadata ? err.metadata : undefined;
  return clientError({
    grpcCode: err.code ?? status.UNKNOWN,
    // grpc-js prefixes "14 UNAVAILABLE: "; `details` is the server's own words.
    message: err.details || err.message,
    heraldCode: firstString(md, ERROR_CODE_KEY),
    leaderId: firstString(md, LEADER_ID_KEY),
    leaderAddress: firstString(md, LEADER_ADDRESS_KEY),
    retryAfterMs: retryAfterOf(firstString(md, RETRY_AFTER_MS_KEY)),
    address,
    cause: err,
  });
}

/** True for errors that carry a gRPC status (grpc-js ServiceError). */
export function isServiceError(e: unknown): e is ServiceError {
  return e instanceof Error && typeof (e as Partial<ServiceError>).code === 'number' && 'details' in e;
}

/** Bad input to a builder or option, caught on the client before any RPC. */
export class InvalidSpecError extends Error {
  override name = 'InvalidSpecError';
  constructor(
    message: string,
    /** The option the error is about, e.g. "retry.backoff". */
    readonly field?: string,
  ) {
    super(message);
  }
}

function retryAfterOf(v: string | undefined): number | undefined {
  const n = v === undefined ? NaN : Number(v);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}
