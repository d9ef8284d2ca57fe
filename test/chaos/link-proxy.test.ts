import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { LinkProxy } from '../../chaos/net/link-proxy.js';

async function echoServer(): Promise<{ server: Server; port: number }> {
  const server = createServer((s) => s.pipe(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const a = server.address();
  return { server, port: typeof a === 'object' && a ? a.port : 0 };
}

function received(sock: Socket): { text: () => string; closed: () => boolean } {
  let buf = '';
  let closed = false;
  sock.on('data', (d) => (buf += d.toString()));
  sock.on('close', () => (closed = true));
  sock.on('error', () => undefined);
  return { text: () => buf, closed: () => closed };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(5);
  }
}

describe('LinkProxy', () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    while (cleanup.length) await cleanup.pop()!();
  });

  async function setup() {
    const echo = await echoServer();
    const proxy = new LinkProxy({ host: '127.0.0.1', port: echo.port }, () => 0.5);
    const port = await proxy.start();
    const sock = connect(port, '127.0.0.1');
    const rx = received(sock);
    cleanup.push(() => new Promise<void>((r) => echo.server.close(() => r())), () => proxy.stop(), () => void sock.destroy());
    return { proxy, sock, rx };
  }

  it('forwards bytes both ways while healthy', async () => {
    const { sock, rx, proxy } = await setup();
    sock.write('hello');
    await until(() => rx.text() === 'hello');
    expect(proxy.stats.bytesForwarded).toBe(10);
  });

  it('stalls a blocked link without losing bytes, and delivers them in order on heal', async () => {
    const { sock, rx, proxy } = await setup();
    sock.write('a');
    await until(() => rx.text() === 'a');
    proxy.setFaults({ blocked: true });
    sock.write('b');
    sock.write('c');
    await sleep(150);
    expect(rx.text()).toBe('a');
    proxy.heal();
    await until(() => rx.text() === 'abc');
  });

  it('delays bytes by the configured time', async () => {
    const { sock, rx, proxy } = await setup();
    proxy.setFaults({ delayMs: 120 });
    const start = Date.now();
    sock.write('x');
    await until(() => rx.text() === 'x');
    expect(Date.now() - start).toBeGreaterThanOrEqual(200); // two delayed hops: there and back
  });

  it('resets connections on demand and by probability', async () => {
    const first = await setup();
    await until(() => first.proxy.stats.connections === 1);
    first.proxy.reset();
    await until(() => first.rx.closed());
    const second = await setup();
    second.proxy.setFaults({ resetProbability: 1 });
    second.sock.write('gone');
    await until(() => second.rx.closed());
    expect(second.rx.text()).toBe('');
    expect(second.proxy.stats.resets).toBe(1);
  });
});
