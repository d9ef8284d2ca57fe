// The running `herald dev` takes requests from other CLI processes on a unix socket in its data
// dir (<data-dir>/dev.sock; nothing on the network): `herald dev add-node` asks it to start and add
// a node, because the nodes are its children and stop with it. One JSON line in; progress lines
// and one final line out.
import { existsSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { join } from 'node:path';

export function devSocketPath(dataDir: string): string {
  return join(dataDir, 'dev.sock');
}

export type DevRequest = { op: 'add-node' };
export type DevReply = { progress: string } | { done: Record<string, unknown> } | { error: string };

export interface DevControl {
  close(): void;
}

/** Serves requests one at a time (a second waits for the first). */
export async function startDevControl(dataDir: string, handle: (req: DevRequest, progress: (line: string) => void) => Promise<Record<string, unknown>>): Promise<DevControl> {
  const path = devSocketPath(dataDir);
  // A socket file left by a dev that was killed: nobody listens on it.
  if (existsSync(path)) rmSync(path, { force: true });
  let queue: Promise<unknown> = Promise.resolve();
  const server: Server = createServer((sock) => {
    let buf = '';
    const reply = (r: DevReply) => {
      if (!sock.destroyed) sock.write(JSON.stringify(r) + '\n');
    };
    sock.on('error', () => undefined);
    sock.on('data', (d) => {
      buf += d.toString('utf8');
      const nl = buf.indexOf('\n');
      if (nl < 0) {
        if (buf.length > 4096) sock.destroy();
        return;
      }
      const line = buf.slice(0, nl);
      buf = '';
      let req: DevRequest;
      try {
        req = JSON.parse(line) as DevRequest;
      } catch {
        reply({ error: 'not a JSON request' });
        sock.end();
        return;
      }
      if (req.op !== 'add-node') {
        reply({ error: `unknown request "${String((req as { op?: unknown }).op)}"` });
        sock.end();
        return;
      }
      queue = queue.then(() =>
        handle(req, (p) => reply({ progress: p })).then(
          (done) => reply({ done }),
          (e: unknown) => reply({ error: e instanceof Error ? e.message : String(e) }),
        ).finally(() => sock.end()),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  return {
    close: () => {
      server.close();
      rmSync(path, { force: true });
    },
  };
}

/** Sends a request to the dev running on `dataDir`; calls `onProgress` per line; resolves with the final answer. */
export function requestDev(dataDir: string, req: DevRequest, onProgress: (line: string) => void): Promise<Record<string, unknown>> {
  const path = devSocketPath(dataDir);
  return new Promise((resolve, reject) => {
    if (!existsSync(path)) {
      reject(new DevNotRunning(dataDir));
      return;
    }
    const sock = createConnection(path);
    let buf = '';
    let settled = false;
    const settle = (f: () => void) => {
      if (!settled) {
        settled = true;
        f();
      }
    };
    sock.on('connect', () => sock.write(JSON.stringify(req) + '\n'));
    sock.on('error', (e: NodeJS.ErrnoException) => settle(() => reject(e.code === 'ECONNREFUSED' || e.code === 'ENOENT' ? new DevNotRunning(dataDir) : e)));
    sock.on('data', (d) => {
      buf += d.toString('utf8');
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const r = JSON.parse(buf.slice(0, nl)) as DevReply;
        buf = buf.slice(nl + 1);
        if ('progress' in r) onProgress(r.progress);
        else if ('done' in r) settle(() => resolve(r.done));
        else settle(() => reject(new Error(r.error)));
      }
    });
    sock.on('close', () => settle(() => reject(new Error('herald dev closed the request without an answer (did it stop?)'))));
  });
}

export class DevNotRunning extends Error {
  constructor(dataDir: string) {
    super(`no herald dev is running on ${dataDir} (start one with \`npx herald dev\`, or give its --data-dir)`);
  }
}
