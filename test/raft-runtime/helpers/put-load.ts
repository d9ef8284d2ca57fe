// Closed-loop put load from many concurrent clients, recording which puts were acknowledged
// (must survive anything) and which failed with an error that leaves the outcome unknown.

import type { KvClient } from './kv-client.js';
import { isSafeToRetry } from './kv-client.js';
import { sleep } from './cluster.js';

export class PutLoad {
  readonly acked = new Map<string, string>();
  readonly failures: Array<{ key: string; error: string }> = [];
  retries = 0;
  private running = false;
  private workers: Promise<void>[] = [];

  constructor(
    private readonly kv: KvClient,
    /** Nodes to send to (re-read on every attempt, so tests can change it). */
    private readonly targets: () => string[],
    private readonly opts: { concurrency: number; prefix: string; timeoutMs?: number },
  ) {}

  start(): this {
    this.running = true;
    for (let w = 0; w < this.opts.concurrency; w++) this.workers.push(this.worker(w));
    return this;
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.workers);
  }

  private async worker(w: number): Promise<void> {
    let seq = 0;
    let rr = w;
    while (this.running) {
      const key = `${this.opts.prefix}-${w}-${seq++}`;
      const value = `${key}:${'x'.repeat(32)}`;
      for (;;) {
        const ts = this.targets();
        const target = ts[rr++ % ts.length]!;
        try {
          const r = await this.kv.forward(target, { op: 'put', key, value: Buffer.from(value) }, this.opts.timeoutMs ?? 5000);
          if (!r.ok) throw new Error(`put ${key} returned not ok`);
          this.acked.set(key, value);
          break;
        } catch (e) {
          if (isSafeToRetry(e) && this.running) {
            this.retries++;
            await sleep(20);
            continue;
          }
          this.failures.push({ key, error: `${(e as { code?: string }).code ?? ''} ${(e as Error).message}` });
          break;
        }
      }
    }
  }
}
