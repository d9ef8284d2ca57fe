// The proxy network of a chaos cluster (see chaos-network.ts): nodes on 127.0.0.1, a LinkProxy
// per directed peer link A→B (A's --peers names B at the proxy's port, so a partition is a set
// of blocked links and one-way partitions are possible) and one in front of every node's client
// port (the address clients and workers are told, leader redirects included, so the worker ↔
// leader link can be blackholed). Proxies are started before any node, so ports stay fixed and a
// restarted node is behind the same proxies.
import { Rng } from '../random.js';
import { link, isolate as isolateShape, type DirectedLink } from '../nemesis/partition-shapes.js';
import type { FaultKind } from '../nemesis/fault-kinds.js';
import { LinkProxy } from './link-proxy.js';
import type { ChaosNetwork, NodePorts } from './chaos-network.js';

const HOST = '127.0.0.1';

export class ProxyNetwork implements ChaosNetwork {
  readonly mode = 'proxy';
  readonly ledgerHost = HOST;
  private readonly links = new Map<DirectedLink, LinkProxy>();
  private readonly clientProxies = new Map<string, LinkProxy>();
  private blocked = new Set<DirectedLink>();

  private constructor(private readonly ports: ReadonlyMap<string, NodePorts>) {}

  static async create(ports: ReadonlyMap<string, NodePorts>, seed: number): Promise<ProxyNetwork> {
    const net = new ProxyNetwork(ports);
    const rng = new Rng(seed).fork('links');
    const ids = [...ports.keys()];
    try {
      for (const id of ids) {
        const cr = rng.fork(`client-${id}`);
        const p = new LinkProxy({ host: HOST, port: ports.get(id)!.clientPort }, () => cr.next());
        await p.start();
        net.clientProxies.set(id, p);
      }
      for (const a of ids) {
        for (const b of ids) {
          if (a === b) continue;
          const r = rng.fork(`${a}>${b}`);
          const proxy = new LinkProxy({ host: HOST, port: ports.get(b)!.peerPort }, () => r.next());
          await proxy.start();
          net.links.set(link(a, b), proxy);
        }
      }
    } catch (e) {
      await net.close();
      throw e;
    }
    return net;
  }

  listenHost(): string {
    return HOST;
  }

  peerAddress(from: string, to: string): string {
    return from === to ? `${HOST}:${this.ports.get(to)!.peerPort}` : `${HOST}:${this.peerLink(from, to).port}`;
  }

  clientAddress(id: string): string {
    return `${HOST}:${this.clientProxies.get(id)!.port}`;
  }

  statusAddress(id: string): string {
    return `${HOST}:${this.ports.get(id)!.clientPort}`;
  }

  nodePrefix(): string[] {
    return [];
  }

  workerPrefix(): string[] {
    return [];
  }

  unavailableKinds(): Partial<Record<FaultKind, string>> {
    return {};
  }

  peerLink(from: string, to: string): LinkProxy {
    const p = this.links.get(link(from, to));
    if (!p) throw new Error(`no link ${from}>${to}`);
    return p;
  }

  get blockedLinks(): ReadonlySet<DirectedLink> {
    return this.blocked;
  }

  /** Blocks exactly these directed peer links (others are unblocked); synchronous. */
  setBlocked(links: ReadonlySet<DirectedLink>): void {
    this.blocked = new Set(links);
    for (const [l, p] of this.links) p.setFaults({ blocked: links.has(l) });
  }

  async isolate(id: string, allIds: readonly string[]): Promise<void> {
    this.setBlocked(isolateShape(id, allIds));
  }

  async partition(blocked: ReadonlySet<DirectedLink>): Promise<void> {
    this.setBlocked(blocked);
  }

  async cutWorkerFrom(id: string): Promise<string> {
    // Clients and workers reach a node only through its client proxy: block the node's.
    const p = this.clientProxies.get(id)!;
    p.setFaults({ blocked: true });
    p.reset();
    return `every client and worker cut from ${id}'s client port`;
  }

  async linkFaults(f: { delayMs?: number; resetProbability?: number }): Promise<void> {
    for (const p of this.links.values()) p.setFaults(f);
  }

  /** Heals every peer link and client proxy; synchronous. */
  healNow(): void {
    this.blocked = new Set();
    for (const p of this.links.values()) p.heal();
    for (const p of this.clientProxies.values()) p.heal();
  }

  async heal(): Promise<void> {
    this.healNow();
  }

  async close(): Promise<void> {
    await Promise.all([...this.links.values()].map((p) => p.stop()));
    await Promise.all([...this.clientProxies.values()].map((p) => p.stop()));
  }
}
