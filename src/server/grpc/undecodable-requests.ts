// Request bytes that do not decode as the method's message are the caller's error: INVALID_ARGUMENT
// (Herald code INVALID_ARGUMENT), not the INTERNAL "Error deserializing request" grpc-js sends
// when a deserializer throws. Without forking grpc-js: the deserializers of every added service
// never throw, they hand on a marker instead, and the handler wrapper answers a marker with the
// status. Added outside the auth guard and the abuse limits (decodeErrorsServer(limitServer(
// guardServer(server)))), so a caller is authenticated and counted before its bytes are judged —
// garbage from a caller without a credential gets UNAUTHENTICATED like anything else.
import type { Server, ServiceDefinition, UntypedServiceImplementation } from '@grpc/grpc-js';
import { HeraldError } from '../../herald-error.js';
import { toServiceError } from './service-error.js';

const UNDECODABLE = Symbol('undecodable request');

interface Undecodable {
  readonly [UNDECODABLE]: string;
}

function isUndecodable(m: unknown): m is Undecodable {
  return typeof m === 'object' && m !== null && UNDECODABLE in m;
}

function refusal(path: string, m: Undecodable): ReturnType<typeof toServiceError> {
  return toServiceError(new HeraldError('INVALID_ARGUMENT', `the request bytes do not decode as ${path}'s request message: ${m[UNDECODABLE]}`));
}

type AnyCall = {
  request?: unknown;
  emit(event: string, ...args: unknown[]): boolean;
  on(event: string, fn: (...args: unknown[]) => void): unknown;
  addListener?(event: string, fn: (...args: unknown[]) => void): unknown;
  once?(event: string, fn: (...args: unknown[]) => void): unknown;
};

function wrapDefinition(def: ServiceDefinition): ServiceDefinition {
  const out: Record<string, unknown> = {};
  for (const [name, attrs] of Object.entries(def)) {
    const decode = attrs.requestDeserialize;
    out[name] = {
      ...attrs,
      requestDeserialize: (bytes: Buffer): unknown => {
        try {
          return decode(bytes);
        } catch (e) {
          return { [UNDECODABLE]: e instanceof Error ? e.message : String(e) } satisfies Undecodable;
        }
      },
    };
  }
  return out as ServiceDefinition;
}

function wrapImplementation(def: ServiceDefinition, impl: UntypedServiceImplementation): UntypedServiceImplementation {
  const out: UntypedServiceImplementation = {};
  for (const [name, attrs] of Object.entries(def)) {
    const key = impl[name] !== undefined ? name : typeof attrs.originalName === 'string' ? attrs.originalName : name;
    const handler = impl[key] as ((...args: unknown[]) => void) | undefined;
    if (!handler) continue;
    if (!attrs.requestStream) {
      // One request message, decoded before the handler runs.
      out[key] = (attrs.responseStream
        ? (call: AnyCall) => {
            if (isUndecodable(call.request)) call.emit('error', refusal(attrs.path, call.request));
            else handler.call(impl, call);
          }
        : (call: AnyCall, callback: (err: unknown, res?: unknown) => void) => {
            if (isUndecodable(call.request)) callback(refusal(attrs.path, call.request), null);
            else handler.call(impl, call, callback);
          }) as never;
      continue;
    }
    // Streamed requests: each message reaches the handler's 'data' listeners; an undecodable one
    // ends the call with the status instead.
    out[key] = ((call: AnyCall, ...rest: unknown[]) => {
      let refused = false;
      const filter =
        (register: (event: string, fn: (...args: unknown[]) => void) => unknown) =>
        (event: string, fn: (...args: unknown[]) => void): unknown => {
          if (event !== 'data') return register(event, fn);
          return register(event, (m: unknown, ...more: unknown[]) => {
            if (!isUndecodable(m)) return fn(m, ...more);
            if (refused) return;
            refused = true;
            call.emit('error', refusal(attrs.path, m));
          });
        };
      call.on = filter(call.on.bind(call)) as AnyCall['on'];
      if (call.addListener) call.addListener = filter(call.addListener.bind(call)) as AnyCall['on'];
      if (call.once) call.once = filter(call.once.bind(call)) as AnyCall['on'];
      handler.call(impl, call, ...rest);
    }) as never;
  }
  return out;
}

/** A server whose services answer undecodable request bytes with INVALID_ARGUMENT. */
export function decodeErrorsServer(server: Server): Server {
  return new Proxy(server, {
    get(target, prop, receiver) {
      if (prop !== 'addService') return Reflect.get(target, prop, receiver) as unknown;
      return (def: ServiceDefinition, impl: UntypedServiceImplementation) => target.addService(wrapDefinition(def), wrapImplementation(def, impl));
    },
  });
}
