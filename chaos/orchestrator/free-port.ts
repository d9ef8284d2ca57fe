import { createServer } from 'node:net';

// Ports are handed out below the kernel's ephemeral range (32768–60999 on Linux by default), so no
// outgoing connection can grab a port between our probe and the server's bind — the race that
// made a node die with EADDRINUSE when tests ran in parallel. Each vitest worker (VITEST_POOL_ID;
// 0 outside vitest) draws from its own block, so parallel test files never pick the same port.
const RANGE_START = 10_000;
const BLOCK = 1_500;
const BLOCKS = 8;
let cursor = -1;

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** A port on 127.0.0.1 that is free now and that no other caller of this module will get. */
export async function freePort(): Promise<number> {
  const pool = Number(process.env.VITEST_POOL_ID ?? 0) % BLOCKS;
  const start = RANGE_START + pool * BLOCK;
  if (cursor < 0) cursor = Math.floor(Math.random() * BLOCK);
  for (let tries = 0; tries < BLOCK; tries++) {
    // Reserve synchronously so concurrent callers in one process never probe the same port.
    const port = start + (cursor++ % BLOCK);
    if (await canBind(port)) return port;
  }
  throw new Error(`no free port in ${start}-${start + BLOCK - 1}`);
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it returns something other than undefined/false; throws after timeoutMs. */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs: number, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v as T;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(everyMs);
  }
}
