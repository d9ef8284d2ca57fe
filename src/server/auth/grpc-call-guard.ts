// Authentication and authorization on the gRPC client port: every handler of every service
// added through guardServer() first authenticates the call (authenticator.ts) and authorizes it
// by its fully-qualified method name (method-roles.ts), then runs with the principal available
// to it (principalOf: unary-handler.ts puts it in CallContext, streams read it). Refusals are
// UNAUTHENTICATED / PERMISSION_DENIED before the handler sees anything. Health is never guarded.
import type { Metadata, Server, ServiceDefinition, UntypedServiceImplementation } from '@grpc/grpc-js';
import type { PeerCertificate } from 'node:tls';
import { memberIdsOf } from '../grpc/tls/member-identity.js';
import { toServiceError } from '../grpc/service-error.js';
import type { Authenticator, TransportIdentity } from './authenticator.js';
import { authorize, OPEN_METHODS } from './method-roles.js';
import { UNAUTHENTICATED_ADMIN, type Principal } from './principal.js';
import { isMutating } from './audit-line.js';
import { HeraldError, isHeraldError } from '../../herald-error.js';
import type { Logger } from 'pino';
import type { PrincipalRateLimit } from './principal-rate-limit.js';

type AnyCall = {
  metadata: Metadata;
  getAuthContext?(): { transportSecurityType?: string; sslPeerCertificate?: PeerCertificate };
  emit(event: string, ...args: unknown[]): boolean;
  destroy?(): void;
};

const principals = new WeakMap<object, Principal>();
const messageChecks = new WeakMap<object, MessageCheck>();

/**
 * What a guarded stream's handler runs before acting on a message that stands for a call of its
 * own (a CreateJobsStream batch): the principal's rate limit is spent as for a call, and a token's
 * record is read again at most once a second, so a revoked token stops within about a second.
 * Rejects with LIMIT_EXCEEDED or UNAUTHENTICATED.
 */
export type MessageCheck = () => Promise<void>;

/** The per-message check of a guarded stream; undefined on an unguarded server (auth off). */
export function messageCheckOf(call: object): MessageCheck | undefined {
  return messageChecks.get(call);
}

const TOKEN_RECHECK_MS = 1_000;

function messageCheck(auth: Authenticator, p: Principal, limit: PrincipalRateLimit | undefined): MessageCheck {
  let checkedAt = Date.now();
  return async () => {
    limit?.take(p.name);
    if (Date.now() - checkedAt < TOKEN_RECHECK_MS) return;
    if (!(await auth.stillValid(p))) throw new HeraldError('UNAUTHENTICATED', `token "${p.name}" was revoked`);
    checkedAt = Date.now();
  };
}

/** The principal a guarded call was authenticated as; the auth-off principal on an unguarded server. */
export function principalOf(call: object): Principal {
  return principals.get(call) ?? UNAUTHENTICATED_ADMIN;
}

/** What the TLS layer verified about a call's connection. */
export function transportIdentityOf(call: Pick<AnyCall, 'getAuthContext'>): TransportIdentity {
  const ctx = call.getAuthContext?.();
  if (!ctx || ctx.transportSecurityType !== 'ssl' || !ctx.sslPeerCertificate || Object.keys(ctx.sslPeerCertificate).length === 0) return { memberIds: [] };
  return { certificate: ctx.sslPeerCertificate, memberIds: memberIdsOf(ctx.sslPeerCertificate) };
}

/** Authenticates and authorizes one call; resolves with its principal. */
export async function checkCall(auth: Authenticator, method: string, call: Pick<AnyCall, 'metadata' | 'getAuthContext'>, limit?: PrincipalRateLimit): Promise<Principal> {
  const p = await auth.authenticate(call.metadata, transportIdentityOf(call));
  authorize(p, method);
  limit?.take(p.name);
  return p;
}

export interface GuardOptions {
  audit?: Logger;
  /** Per-principal request rate limit (none when absent). */
  rateLimit?: PrincipalRateLimit;
}

/** A server whose addService guards every handler with `auth`. */
export function guardServer(server: Server, auth: Authenticator, o: GuardOptions = {}): Server {
  return new Proxy(server, {
    get(target, prop, receiver) {
      if (prop !== 'addService') return Reflect.get(target, prop, receiver) as unknown;
      return (def: ServiceDefinition, impl: UntypedServiceImplementation) => target.addService(def, guardImplementation(def, impl, auth, o));
    },
  });
}

function guardImplementation(def: ServiceDefinition, impl: UntypedServiceImplementation, auth: Authenticator, o: GuardOptions): UntypedServiceImplementation {
  const audit = o.audit;
  const refused = (path: string, call: AnyCall, e: unknown): void => {
    const method = path.slice(path.lastIndexOf('/') + 1);
    if (audit && isMutating(method) && isHeraldError(e)) audit.info({ audit: true, principal: null, method, outcome: e.code, reason: e.message }, 'audit');
  };
  const out: UntypedServiceImplementation = {};
  for (const [name, attrs] of Object.entries(def)) {
    const handler = impl[name] as ((...args: unknown[]) => void) | undefined;
    if (!handler) continue;
    const path = attrs.path;
    if (OPEN_METHODS.has(path)) {
      out[name] = handler;
      continue;
    }
    if (!attrs.responseStream && !attrs.requestStream) {
      out[name] = ((call: AnyCall, callback: (err: unknown, res?: unknown) => void) => {
        checkCall(auth, path, call, o.rateLimit).then(
          (p) => {
            principals.set(call, p);
            // A handler that throws is a bug in it: the caller gets INTERNAL, the node goes on.
            try {
              handler.call(impl, call, callback);
            } catch (e) {
              callback(toServiceError(e), null);
            }
          },
          (e: unknown) => {
            refused(path, call, e);
            callback(toServiceError(e), null);
          },
        );
      }) as never;
    } else {
      out[name] = ((call: AnyCall) => {
        checkCall(auth, path, call, o.rateLimit).then(
          (p) => {
            principals.set(call, p);
            messageChecks.set(call, messageCheck(auth, p, o.rateLimit));
            try {
              handler.call(impl, call);
            } catch (e) {
              try {
                call.emit('error', toServiceError(e));
              } catch {
                call.destroy?.();
              }
            }
          },
          (e: unknown) => {
            try {
              call.emit('error', toServiceError(e));
            } catch {
              call.destroy?.();
            }
          },
        );
      }) as never;
    }
  }
  return out;
}
