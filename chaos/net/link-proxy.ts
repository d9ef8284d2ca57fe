import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * One directed network link (A → B) as a TCP proxy: node A dials B through it, so cutting it
 * cuts exactly the messages A sends to B (Raft streams are one-way per direction; B → A goes
 * through B's own proxy). Faults:
 * - `blocked`: bytes stop flowing both ways on the link's connections, as in a real partition:
 *   connections stall (nothing is dropped mid-frame) and new ones are accepted but stall too.
 *   When a stalled connection buffers more than `maxStallBytes` it is reset.
 * - `delayMs`: every chunk is held this long (order kept).
 * - `resetProbability`: each chunk may reset its connection instead (message loss: what was in
 *   flight on that connection is gone, the sender reconnects).
 * - `reset()`: closes every connection now.
 */
export interface LinkFaults {
  blocked: boolean;
  delayMs: number;
  resetProbability: number;
}

export interface LinkStats {
  connections: number;
  bytesForwarded: number;
  resets: number;
}

const HEALTHY: LinkFaults = { blocked: false, delayMs: 0, resetProbability: 0 };

export class LinkProxy {
  private server?: Server;
  private readonly pairs = new Set<Pair>();
  private faults: LinkFaults = { ...HEALTHY };
  readonly stats: LinkStats = { connections: 0, bytesForwarded: 0, resets: 0 };
  port = 0;

  constructor(
    private readonly target: { host: string; port: number },
    private readonly random: () => number,
    private readonly options: { listenPort?: number; maxStallBytes?: number } = {},
  ) {}

  async start(): Promise<number> {
    this.server = createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(this.options.listenPort ?? 0, '127.0.0.1', () => resolve());
    });
    const addr = this.server.address();
    this.port = typeof addr === 'object' && addr ? addr.port : 0;
    return this.port;
  }

  setFaults(faults: Partial<LinkFaults>): void {
    const wasBlocked = this.faults.blocked;
    this.faults = { ...this.faults, ...faults };
    if (wasBlocked && !this.faults.blocked) for (const p of this.pairs) p.flush();
  }

  heal(): void {
    this.setFaults(HEALTHY);
  }

  get current(): Readonly<LinkFaults> {
    return this.faults;
  }

  reset(): void {
    for (const p of [...this.pairs]) p.destroy();
  }

  async stop(): Promise<void> {
    this.reset();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private accept(client: Socket): void {
    this.stats.connections++;
    const upstream = connect(this.target.port, this.target.host);
    const pair = new Pair(client, upstream, this);
    this.pairs.add(pair);
    pair.onClose = () => this.pairs.delete(pair);
  }

  /** @internal */
  decide(bytes: number): 'forward' | 'hold' | 'reset' {
    if (this.faults.blocked) return 'hold';
    if (this.faults.resetProbability > 0 && this.random() < this.faults.resetProbability) {
      this.stats.resets++;
      return 'reset';
    }
    this.stats.bytesForwarded += bytes;
    return 'forward';
  }

  /** @internal */
  get delayMs(): number {
    return this.faults.delayMs;
  }

  /** @internal */
  get maxStallBytes(): number {
    return this.options.maxStallBytes ?? 8 * 1024 * 1024;
  }
}

/** One proxied connection: two sockets and the bytes held while the link is blocked. */
class Pair {
  onClose: () => void = () => undefined;
  private held: Array<{ to: Socket; chunk: Buffer }> = [];
  private heldBytes = 0;
  private closed = false;
  private readonly lastDue = new Map<Socket, number>();

  constructor(
    private readonly a: Socket,
    private readonly b: Socket,
    private readonly link: LinkProxy,
  ) {
    a.on('data', (chunk: Buffer) => this.pass(b, chunk));
    b.on('data', (chunk: Buffer) => this.pass(a, chunk));
    for (const s of [a, b]) {
      s.on('error', () => this.destroy());
      s.on('close', () => this.destroy());
    }
  }

  flush(): void {
    const held = this.held;
    this.held = [];
    this.heldBytes = 0;
    for (const h of held) this.pass(h.to, h.chunk);
  }

  destroy(): void {
    if (this.closed) return;
    this.closed = true;
    this.a.destroy();
    this.b.destroy();
    this.onClose();
  }

  private pass(to: Socket, chunk: Buffer): void {
    if (this.closed) return;
    const verdict = this.link.decide(chunk.length);
    if (verdict === 'reset') return this.destroy();
    if (verdict === 'hold') {
      this.held.push({ to, chunk });
      this.heldBytes += chunk.length;
      if (this.heldBytes > this.link.maxStallBytes) this.destroy();
      return;
    }
    const delay = this.link.delayMs;
    const last = this.lastDue.get(to) ?? 0;
    if (delay <= 0 && last <= Date.now()) {
      to.write(chunk);
      return;
    }
    // Never let a shorter delay overtake bytes already held for a longer one.
    const due = Math.max(Date.now() + delay, last);
    this.lastDue.set(to, due);
    setTimeout(() => !this.closed && to.write(chunk), due - Date.now());
  }
}
