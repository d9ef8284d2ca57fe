// Raw gRPC calls by fully-qualified method name with empty request bytes (every field at its
// default), for the role × method matrix: the status a call gets, whatever the method's types.
import { Client, credentials, Metadata, status, type ChannelCredentials } from '@grpc/grpc-js';

export interface RawCallOptions {
  token?: string;
  metadata?: Record<string, string>;
  deadlineMs?: number;
}

function md(o: RawCallOptions): Metadata {
  const m = new Metadata();
  if (o.token !== undefined) m.set('authorization', `Bearer ${o.token}`);
  for (const [k, v] of Object.entries(o.metadata ?? {})) m.set(k, v);
  return m;
}

const identity = (b: Buffer): Buffer => b;

export function rawClient(address: string, creds: ChannelCredentials = credentials.createInsecure()): Client {
  return new Client(address, creds);
}

/** A unary call's status code (OK = 0) and message. */
export function rawUnary(client: Client, path: string, o: RawCallOptions = {}, body: Buffer = Buffer.alloc(0)): Promise<{ code: status; details: string }> {
  return new Promise((resolve) => {
    client.makeUnaryRequest(path, identity, identity, body, md(o), { deadline: Date.now() + (o.deadlineMs ?? 5_000) }, (err) => {
      resolve(err ? { code: err.code, details: err.details } : { code: status.OK, details: '' });
    });
  });
}

/**
 * A streaming call's status: the error it ended with, or OK when it was still open (or ended
 * cleanly) after `openMs` — a guarded stream is refused before the handler runs, at once.
 */
export function rawStream(client: Client, path: string, kind: 'server' | 'bidi', o: RawCallOptions = {}, body: Buffer = Buffer.alloc(0), openMs = 400): Promise<{ code: status; details: string }> {
  return new Promise((resolve) => {
    const call =
      kind === 'server'
        ? client.makeServerStreamRequest(path, identity, identity, body, md(o), { deadline: Date.now() + (o.deadlineMs ?? 5_000) })
        : client.makeBidiStreamRequest(path, identity, identity, md(o), { deadline: Date.now() + (o.deadlineMs ?? 5_000) });
    let done = false;
    const finish = (r: { code: status; details: string }) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      call.cancel();
      resolve(r);
    };
    const timer = setTimeout(() => finish({ code: status.OK, details: 'open' }), openMs);
    call.on('data', () => undefined);
    call.on('error', (e: { code: status; details: string }) => finish({ code: e.code, details: e.details }));
    call.on('status', (s: { code: status; details: string }) => finish({ code: s.code, details: s.details }));
    if (kind === 'bidi') (call as unknown as { write(b: Buffer): void }).write(body);
  });
}
