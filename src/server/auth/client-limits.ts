// Abuse limits on the client port (issue 29): how many streams (worker Connect, watches,
// reflection) and in-flight unary calls one connection and one principal may hold at once, and how
// long a connection may take to finish its TLS handshake or sit without a call. A call over a cap
// is refused before its handler runs with LIMIT_EXCEEDED (RESOURCE_EXHAUSTED) naming the cap and
// the `herald server` flag that sets it; nothing else is spent on it.
//
// What counts as "a connection" is the caller's address as grpc-js reports it (call.getPeer():
// host and ephemeral port, one per TCP connection). Calls a follower forwards to the leader were
// counted where they arrived, and one follower's connection carries all of its clients' forwarded
// calls: over a connection whose certificate names a member they are not counted again; otherwise
// a call carrying the forwarded-call marker from an authenticated principal skips the
// per-connection cap only (the marker can be forged, the principal's cap still holds). Health
// checks are never counted. With auth off every call is the anonymous admin, so only the
// per-connection caps apply.
import type { ChannelOptions, Metadata, Server, ServerCredentials, ServiceDefinition, UntypedServiceImplementation } from '@grpc/grpc-js';
import type { PeerCertificate } from 'node:tls';
import { HeraldError } from '../../herald-error.js';
import { OPEN_METHODS } from './method-roles.js';
import { principalOf, transportIdentityOf } from './grpc-call-guard.js';
import { FORWARDED_CALL_KEY } from '../api/unary-handler.js';
import type { Principal } from './principal.js';
import { toServiceError } from '../grpc/service-error.js';

export interface ClientLimits {
  /** Streams one connection may hold open (0 = no cap). */
  maxStreamsPerConnection: number;
  /** Streams one principal may hold open on this node, over all its connections (0 = no cap; auth only). */
  maxStreamsPerPrincipal: number;
  /** Unary calls in flight on one connection (0 = no cap). */
  maxCallsPerConnection: number;
  /** Unary calls one principal may have in flight on this node (0 = no cap; auth only). */
  maxCallsPerPrincipal: number;
  /** A TLS connection that has not finished its handshake after this long is closed (TLS only). */
  handshakeTimeoutMs: number;
  /** A connection without a call for this long is sent GOAWAY and closed (0 = never). */
  idleTimeoutMs: number;
  /** TCP connections one remote address may hold open to the client port at once (0 = no cap). */
  maxConnectionsPerAddress: number;
  /** A connection that has sent no byte after this long is closed (plaintext or TLS; connection-guard.ts). */
  firstByteTimeoutMs: number;
}

export const DEFAULT_CLIENT_LIMITS: Readonly<ClientLimits> = Object.freeze({
  maxStreamsPerConnection: 100,
  maxStreamsPerPrincipal: 1_000,
  maxCallsPerConnection: 1_000,
  maxCallsPerPrincipal: 5_000,
  handshakeTimeoutMs: 10_000,
  idleTimeoutMs: 300_000,
  maxConnectionsPerAddress: 1_000,
  firstByteTimeoutMs: 10_000,
});

/** The `herald server` flag of each limit (named in the refusal, so a caller knows what to change). */
export const CLIENT_LIMIT_FLAGS: ReadonlyArray<readonly [flag: string, key: keyof ClientLimits, help: string]> = [
  ['--max-streams-per-connection', 'maxStreamsPerConnection', 'streams (worker, watch) one client connection may hold open'],
  ['--max-streams-per-principal', 'maxStreamsPerPrincipal', 'with auth: streams one principal may hold open on this node'],
  ['--max-calls-per-connection', 'maxCallsPerConnection', 'unary calls in flight on one client connection'],
  ['--max-calls-per-principal', 'maxCallsPerPrincipal', 'with auth: unary calls one principal may have in flight on this node'],
  ['--tls-handshake-timeout-ms', 'handshakeTimeoutMs', 'close a client connection whose TLS handshake has not finished after this long'],
  ['--idle-timeout-ms', 'idleTimeoutMs', 'close a client connection without a call for this long (GOAWAY; clients reconnect on their next call; 0 = never)'],
  ['--max-connections-per-address', 'maxConnectionsPerAddress', 'TCP connections one remote address may hold open at once (more are closed at once)'],
  ['--first-byte-timeout-ms', 'firstByteTimeoutMs', 'close a client connection that has sent nothing after this long (plaintext ports too)'],
];

function flagOf(key: keyof ClientLimits): string {
  return CLIENT_LIMIT_FLAGS.find(([, k]) => k === key)![0];
}

/** The limits with `overrides` applied; throws INVALID_ARGUMENT naming the flag of a bad value. */
export function clientLimitsOf(overrides: Partial<ClientLimits> = {}): ClientLimits {
  const out = { ...DEFAULT_CLIENT_LIMITS, ...overrides };
  for (const [flag, key] of CLIENT_LIMIT_FLAGS) {
    const v = out[key];
    const min = key === 'handshakeTimeoutMs' || key === 'firstByteTimeoutMs' ? 1 : 0;
    if (!Number.isSafeInteger(v) || v < min || v > 2 ** 31 - 1) {
      throw new HeraldError('INVALID_ARGUMENT', `${flag}: expected an integer in [${min}, ${2 ** 31 - 1}], got ${String(v)}`, { field: key });
    }
  }
  return out;
}

/**
 * grpc-js server options for the limits: the idle timeout, and an HTTP/2 stream cap a little over
 * the per-connection caps as a backstop (a client past it waits for a stream instead of opening one).
 */
export function clientServerOptions(l: ClientLimits): ChannelOptions {
  const o: ChannelOptions = {};
  if (l.idleTimeoutMs > 0) o['grpc.max_connection_idle_ms'] = l.idleTimeoutMs;
  if (l.maxStreamsPerConnection > 0 && l.maxCallsPerConnection > 0) o['grpc.max_concurrent_streams'] = l.maxStreamsPerConnection + l.maxCallsPerConnection + 16;
  return o;
}

/**
 * TLS server credentials whose connections must finish their handshake within `ms` (Node's
 * tls.Server handshakeTimeout, 120 s by default). grpc-js builds its TLS server from the
 * credentials' constructor options; insecure credentials are returned as they are.
 */
export function withHandshakeTimeout(creds: ServerCredentials, ms: number): ServerCredentials {
  const c = creds as unknown as { _isSecure(): boolean; _getConstructorOptions?(): object | null };
  if (!c._isSecure() || typeof c._getConstructorOptions !== 'function') return creds;
  return new Proxy(creds, {
    get(target, prop) {
      if (prop === '_getConstructorOptions') return () => ({ ...(c._getConstructorOptions!.call(target) ?? {}), handshakeTimeout: ms });
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

type Kind = 'stream' | 'call';

/** Counts what each connection and principal holds; refuses past the caps. */
export class CallCaps {
  private readonly byConnection = { stream: new Map<string, number>(), call: new Map<string, number>() };
  private readonly byPrincipal = { stream: new Map<string, number>(), call: new Map<string, number>() };

  constructor(private readonly limits: ClientLimits) {}

  /**
   * Takes one slot of `kind` for the call, or throws LIMIT_EXCEEDED; returns its release
   * (idempotent). `connection` undefined: the call is not held to a per-connection cap.
   */
  acquire(kind: Kind, connection: string | undefined, principal: Principal): () => void {
    // Counted on the node it arrived at; and the anonymous admin of auth-off is nobody to cap.
    if (principal.via === 'forwarded') return () => undefined;
    const perPrincipal = principal.via !== 'none';
    const [connCap, connKey] = kind === 'stream' ? [this.limits.maxStreamsPerConnection, 'maxStreamsPerConnection' as const] : [this.limits.maxCallsPerConnection, 'maxCallsPerConnection' as const];
    const [prinCap, prinKey] = kind === 'stream' ? [this.limits.maxStreamsPerPrincipal, 'maxStreamsPerPrincipal' as const] : [this.limits.maxCallsPerPrincipal, 'maxCallsPerPrincipal' as const];
    const conns = this.byConnection[kind];
    const prins = this.byPrincipal[kind];
    const what = kind === 'stream' ? 'streams open' : 'unary calls in flight';
    if (connection !== undefined && connCap > 0 && (conns.get(connection) ?? 0) >= connCap) {
      throw new HeraldError('LIMIT_EXCEEDED', `this connection has ${connCap} ${what}, the most one connection may have (${flagOf(connKey)}); wait for one to end or use another connection`, {
        limit: flagOf(connKey).slice(2),
      });
    }
    if (perPrincipal && prinCap > 0 && (prins.get(principal.name) ?? 0) >= prinCap) {
      throw new HeraldError('LIMIT_EXCEEDED', `principal "${principal.name}" has ${prinCap} ${what} on this node, the most one principal may have (${flagOf(prinKey)}); wait for one to end`, {
        limit: flagOf(prinKey).slice(2),
      });
    }
    if (connection !== undefined) conns.set(connection, (conns.get(connection) ?? 0) + 1);
    if (perPrincipal) prins.set(principal.name, (prins.get(principal.name) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (connection !== undefined) dec(conns, connection);
      if (perPrincipal) dec(prins, principal.name);
    };
  }

  /** Open streams and in-flight calls (tests, metrics). */
  held(kind: Kind, by: 'connection' | 'principal', key: string): number {
    return (by === 'connection' ? this.byConnection : this.byPrincipal)[kind].get(key) ?? 0;
  }
}

function dec(m: Map<string, number>, k: string): void {
  const n = (m.get(k) ?? 0) - 1;
  if (n <= 0) m.delete(k);
  else m.set(k, n);
}

type AnyCall = {
  metadata: Metadata;
  getPeer?(): string;
  getAuthContext?(): { transportSecurityType?: string; sslPeerCertificate?: PeerCertificate };
  on?(event: string, fn: () => void): unknown;
  emit(event: string, ...args: unknown[]): boolean;
  destroy?(): void;
};

/** Takes the call's slot of `kind`: see the header for which caps a call is held to. */
function acquireFor(caps: CallCaps, kind: Kind, call: AnyCall): () => void {
  const principal = principalOf(call);
  if (transportIdentityOf(call).memberIds.length > 0) return () => undefined; // a member forwarding: counted where it arrived
  const marked = call.metadata.get(FORWARDED_CALL_KEY).length > 0 && principal.via !== 'none';
  return caps.acquire(kind, marked ? undefined : (call.getPeer?.() ?? ''), principal);
}

/**
 * A server whose addService counts every non-health call against `caps`. It wraps the guarded
 * server, limitServer(guardServer(server, ...), caps), so the guard's handler runs first and the
 * principal is known when the call is counted.
 */
export function limitServer(server: Server, caps: CallCaps): Server {
  return new Proxy(server, {
    get(target, prop, receiver) {
      if (prop !== 'addService') return Reflect.get(target, prop, receiver) as unknown;
      return (def: ServiceDefinition, impl: UntypedServiceImplementation) => target.addService(def, limitImplementation(def, impl, caps));
    },
  });
}

function limitImplementation(def: ServiceDefinition, impl: UntypedServiceImplementation, caps: CallCaps): UntypedServiceImplementation {
  const out: UntypedServiceImplementation = {};
  for (const [name, attrs] of Object.entries(def)) {
    const handler = (impl[name] ?? (typeof attrs.originalName === 'string' ? impl[attrs.originalName] : undefined)) as ((...args: unknown[]) => void) | undefined;
    if (!handler) continue;
    if (OPEN_METHODS.has(attrs.path)) {
      out[name] = handler;
      continue;
    }
    if (!attrs.responseStream && !attrs.requestStream) {
      out[name] = ((call: AnyCall, callback: (err: unknown, res?: unknown, ...rest: unknown[]) => void) => {
        let release: () => void;
        try {
          release = acquireFor(caps, 'call', call);
        } catch (e) {
          callback(toServiceError(e), null);
          return;
        }
        call.on?.('cancelled', release); // the caller gave up: its slot is free, whatever the handler does
        try {
          handler.call(impl, call, (err: unknown, res?: unknown, ...rest: unknown[]) => {
            release();
            callback(err, res, ...rest);
          });
        } catch (e) {
          release();
          throw e;
        }
      }) as never;
    } else {
      out[name] = ((call: AnyCall) => {
        let release: () => void;
        try {
          release = acquireFor(caps, 'stream', call);
        } catch (e) {
          try {
            call.emit('error', toServiceError(e));
          } catch {
            call.destroy?.();
          }
          return;
        }
        // A stream ends by its status (finish), the caller's cancel, or its destruction.
        for (const ev of ['finish', 'cancelled', 'close']) call.on?.(ev, release);
        try {
          handler.call(impl, call);
        } catch (e) {
          release();
          throw e;
        }
      }) as never;
    }
  }
  return out;
}
