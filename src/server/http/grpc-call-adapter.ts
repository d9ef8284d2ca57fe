// The HTTP side of a call, shaped as the grpc-js call object the registered handlers take: the
// request, the metadata (from the HTTP headers), the deadline, the peer and cancellation. The
// handlers (and the shared path in api/unary-handler.ts they run through) see no difference
// between the two transports, so validation, auth and error mapping are the gRPC port's own.
import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { Metadata } from '@grpc/grpc-js';
import { REQUEST_ID_KEY } from '../api/unary-handler.js';

/**
 * The HTTP headers that become call metadata. Only these: in particular the marker a node puts on
 * a call it forwards to the leader must never be settable from outside.
 */
const PASSED_HEADERS = ['authorization', REQUEST_ID_KEY];
/** Header with the call's deadline in milliseconds from now (gRPC's `grpc-timeout`, in plain numbers). */
export const TIMEOUT_HEADER = 'timeout-ms';

export function metadataOf(req: IncomingMessage): Metadata {
  const md = new Metadata();
  for (const key of PASSED_HEADERS) {
    const v = req.headers[key];
    if (typeof v === 'string' && v !== '') md.set(key, v);
  }
  return md;
}

/** The wall-clock deadline grpc-js would report (Infinity without the header). */
export function deadlineOf(req: IncomingMessage): number {
  const raw = req.headers[TIMEOUT_HEADER];
  const ms = typeof raw === 'string' ? Number(raw) : NaN;
  return Number.isFinite(ms) && ms > 0 ? Date.now() + ms : Infinity;
}

/** What the registered handlers use of a grpc-js ServerUnaryCall / ServerWritableStream. */
export class HttpCall<Req> extends EventEmitter {
  cancelled = false;
  constructor(
    readonly request: Req,
    readonly metadata: Metadata,
    private readonly deadline: number,
    private readonly path: string,
    private readonly peer: string,
  ) {
    super();
  }
  getDeadline(): number {
    return this.deadline;
  }
  getPath(): string {
    return this.path;
  }
  getPeer(): string {
    return this.peer;
  }
  getHost(): string {
    return '';
  }
  /** No TLS identity travels over the HTTP port: callers authenticate with a bearer token. */
  getAuthContext(): Record<string, never> {
    return {};
  }
  sendMetadata(): void {}
  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.emit('cancelled', 'cancelled');
  }
}

/** The server-streaming variant: `write` goes to the HTTP response (server-sent events). */
export class HttpStreamCall<Req> extends HttpCall<Req> {
  constructor(
    request: Req,
    metadata: Metadata,
    deadline: number,
    path: string,
    peer: string,
    private readonly sink: { write(message: unknown): boolean; end(): void },
  ) {
    super(request, metadata, deadline, path, peer);
  }
  write(message: unknown): boolean {
    return this.cancelled ? false : this.sink.write(message);
  }
  end(): void {
    this.sink.end();
  }
  destroy(): void {
    this.cancel();
    this.sink.end();
  }
}
