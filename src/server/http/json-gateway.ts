// The public API over HTTP/1.1 for browsers and curl: POST /<package>.<Service>/<Method> with the
// request as proto3 JSON; unary answers are JSON, server-streaming ones server-sent events (one
// `data:` line per stream message). Derived from the proto descriptors of the services registered
// on the client port, and served by the very handler functions that serve the gRPC port
// (grpc-call-adapter.ts): one implementation per method, two transports. Errors carry the gRPC
// code name, the message and the Herald error code, under the HTTP status for that code
// (http-status.ts). docs/http-api.md says why this shape rather than Connect or gRPC-Web.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fromBinary, fromJson, toBinary, toJson, type DescMessage, type FileRegistry, type JsonValue } from '@bufbuild/protobuf';
import { status, type MethodDefinition, type ServiceError } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { HeraldError } from '../../herald-error.js';
import { toServiceError } from '../grpc/service-error.js';
import { ERROR_CODE_KEY, LEADER_ADDRESS_KEY, LEADER_ID_KEY, RETRY_AFTER_MS_KEY } from '../grpc/grpc-status-map.js';
import type { RegisteredService } from '../grpc/recording-server.js';
import { CLIENT_SERVER_OPTIONS } from '../grpc/server-conventions.js';
import { HttpCall, HttpStreamCall, deadlineOf, metadataOf } from './grpc-call-adapter.js';
import { httpStatusOf } from './http-status.js';

/** Only the public API goes over HTTP (not health checking or reflection). */
const PUBLIC_PACKAGE = 'herald.v1.';
const MAX_BODY_BYTES = CLIENT_SERVER_OPTIONS['grpc.max_receive_message_length'];

interface GatewayMethod {
  path: string;
  definition: MethodDefinition<unknown, unknown>;
  handler: (...args: never[]) => unknown;
  input: DescMessage;
  output: DescMessage;
}

/** The JSON body of a failed call, the same fields whichever transport the caller used. */
export interface HttpErrorBody {
  /** The gRPC status code name (INVALID_ARGUMENT, NOT_FOUND, …). */
  code: string;
  message: string;
  /** Herald's stable error code (herald-error.ts), when a Herald server decided the error. */
  heraldCode?: string;
  leaderId?: string;
  leaderAddress?: string;
  /** Wait this long before retrying (a rate limit); also sent as the Retry-After header. */
  retryAfterMs?: number;
}

export function errorBody(se: ServiceError): HttpErrorBody {
  const first = (key: string): string | undefined => {
    const v = se.metadata?.get(key)[0];
    return v === undefined ? undefined : String(v);
  };
  const heraldCode = first(ERROR_CODE_KEY);
  const leaderId = first(LEADER_ID_KEY);
  const leaderAddress = first(LEADER_ADDRESS_KEY);
  const retryAfter = first(RETRY_AFTER_MS_KEY);
  return {
    code: status[se.code] ?? 'UNKNOWN',
    message: se.details || se.message,
    ...(heraldCode ? { heraldCode } : {}),
    ...(leaderId ? { leaderId } : {}),
    ...(leaderAddress ? { leaderAddress } : {}),
    ...(retryAfter !== undefined && Number.isFinite(Number(retryAfter)) ? { retryAfterMs: Number(retryAfter) } : {}),
  };
}

function serviceError(code: status, message: string): ServiceError {
  return Object.assign(new Error(message), { code, details: message, metadata: undefined as never });
}

export interface JsonGateway {
  /** Answers the request when its path names a public method; false otherwise (not touched). */
  handle(req: IncomingMessage, res: ServerResponse): boolean;
}

export function createJsonGateway(services: readonly RegisteredService[], registry: FileRegistry, logger: Logger): JsonGateway {
  const methods = new Map<string, GatewayMethod>();
  const streamsOnlyOverGrpc = new Set<string>();
  for (const { definition, implementation } of services) {
    for (const [key, def] of Object.entries(definition)) {
      const [, serviceName, methodName] = def.path.split('/');
      if (!serviceName?.startsWith(PUBLIC_PACKAGE)) continue;
      if (def.requestStream) {
        streamsOnlyOverGrpc.add(def.path);
        continue;
      }
      const desc = registry.getService(serviceName)?.methods.find((m) => m.name === methodName);
      const handler = implementation[key];
      if (!desc || typeof handler !== 'function') continue;
      methods.set(def.path, { path: def.path, definition: def, handler: handler as GatewayMethod['handler'], input: desc.input, output: desc.output });
    }
  }

  const sendJson = (res: ServerResponse, code: number, body: unknown): void => {
    if (res.headersSent) return;
    res.writeHead(code, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }).end(JSON.stringify(body));
  };
  const sendError = (res: ServerResponse, se: ServiceError): void => {
    const body = errorBody(se);
    if (body.retryAfterMs !== undefined) res.setHeader('retry-after', String(Math.max(1, Math.ceil(body.retryAfterMs / 1000))));
    sendJson(res, httpStatusOf[se.code] ?? 500, body);
  };
  const toJsonMessage = (m: GatewayMethod, message: unknown): JsonValue =>
    toJson(m.output, fromBinary(m.output, m.definition.responseSerialize(message)), { alwaysEmitImplicit: true });

  function decodeRequest(m: GatewayMethod, body: Buffer): unknown {
    let json: JsonValue;
    const text = body.toString('utf8').trim();
    try {
      json = text === '' ? {} : (JSON.parse(text) as JsonValue);
    } catch (e) {
      throw new HeraldError('INVALID_ARGUMENT', `the request body is not JSON (${(e as Error).message}); send a ${m.input.typeName} as proto3 JSON, e.g. '{}'`);
    }
    let message;
    try {
      message = fromJson(m.input, json);
    } catch (e) {
      throw new HeraldError('INVALID_ARGUMENT', `the request body is not a valid ${m.input.typeName}: ${(e as Error).message}`);
    }
    return m.definition.requestDeserialize(Buffer.from(toBinary(m.input, message)));
  }

  function unary(m: GatewayMethod, req: IncomingMessage, res: ServerResponse, request: unknown): void {
    const call = new HttpCall(request, metadataOf(req), deadlineOf(req), m.path, `${req.socket.remoteAddress ?? ''}:${req.socket.remotePort ?? 0}`);
    res.on('close', () => {
      if (!res.writableFinished) call.cancel();
    });
    const callback = (err: ServiceError | null, value?: unknown): void => {
      if (err) return sendError(res, err);
      try {
        sendJson(res, 200, toJsonMessage(m, value));
      } catch (e) {
        logger.error({ err: e, method: m.path }, 'encoding an HTTP answer failed');
        sendError(res, toServiceError(e));
      }
    };
    (m.handler as unknown as (call: unknown, cb: typeof callback) => void)(call, callback);
  }

  function serverStream(m: GatewayMethod, req: IncomingMessage, res: ServerResponse, request: unknown): void {
    // Headers go out with the first message, so an error before it is a plain HTTP error answer.
    const open = (): void => {
      if (!res.headersSent) res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
    };
    const call = new HttpStreamCall(request, metadataOf(req), deadlineOf(req), m.path, `${req.socket.remoteAddress ?? ''}:${req.socket.remotePort ?? 0}`, {
      write: (message) => {
        open();
        return res.write(`data: ${JSON.stringify(toJsonMessage(m, message))}\n\n`);
      },
      end: () => {
        open();
        res.end();
      },
    });
    res.on('drain', () => call.emit('drain'));
    res.on('close', () => {
      call.cancel();
      call.emit('close');
    });
    call.on('error', (err: unknown) => {
      const se = toServiceError(err);
      if (!res.headersSent) return sendError(res, se);
      res.end(`event: error\ndata: ${JSON.stringify(errorBody(se))}\n\n`);
    });
    (m.handler as unknown as (call: unknown) => void)(call);
  }

  return {
    handle(req, res) {
      const path = (req.url ?? '').split('?')[0]!;
      if (!path.startsWith(`/${PUBLIC_PACKAGE}`)) return false;
      const m = methods.get(path);
      if (!m) {
        const why = streamsOnlyOverGrpc.has(path) ? `${path} streams requests both ways and is served on the gRPC port only` : `no method ${path}`;
        sendError(res, serviceError(status.UNIMPLEMENTED, why));
        return true;
      }
      if (req.method !== 'POST') {
        res.setHeader('allow', 'POST');
        sendJson(res, 405, { code: 'UNIMPLEMENTED', message: `${path}: use POST with the request as a JSON body` });
        return true;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY_BYTES) {
          sendError(res, toServiceError(new HeraldError('LIMIT_EXCEEDED', `the request body is over ${MAX_BODY_BYTES} bytes`)));
          req.destroy();
          return;
        }
        chunks.push(c);
      });
      req.on('end', () => {
        if (size > MAX_BODY_BYTES) return;
        let request: unknown;
        try {
          request = decodeRequest(m, Buffer.concat(chunks));
        } catch (e) {
          return sendError(res, toServiceError(e));
        }
        try {
          if (m.definition.responseStream) serverStream(m, req, res, request);
          else unary(m, req, res, request);
        } catch (e) {
          logger.error({ err: e, method: path }, 'HTTP call failed unexpectedly');
          sendError(res, toServiceError(e));
        }
      });
      return true;
    },
  };
}
