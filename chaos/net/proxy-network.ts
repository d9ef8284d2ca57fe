// The proxy network of a chaos cluster (see chaos-network.ts): nodes on 127.0.0.1, a LinkProxy
// per directed peer link A→B and one in front of every node's client port (the address clients and
// workers are told, leader redirects included, so the worker ↔ leader link can be blackholed).
// Every node names a peer by one address, its real peer port (so --peers, the configuration's
// address book and `herald cluster add` agree whoever records them); node A's routes
// (chaos/preload/node-faults.mjs) send its dials to B's port through the A→B proxy instead, so a
// partition is a set of blocked links and one-way partitions are possible. Proxies are started
// before a node, so ports stay fixed and a restarted node is behind the same proxies; nodes added
// at runtime (membership faults) get links to and from every node, removed ones lose theirs.
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
  private readonly ports = new Map<string, NodePorts>();

  private constructor(private readonly rng: Rng) {}

  static async create(ports: ReadonlyMap<string, NodePorts>, seed: number): Promise<ProxyNetwork> {
    const net = new ProxyNetwork(new Rng(seed).fork('links'));
    try {
      for (const [id, p] of ports) await net.addNode(id, p);
    } catch (e) {
      await net.close();
      throw e;
    }
    return net;
  }

  /** A client proxy for the node and a link proxy each way between it and every node there is. */
  async addNode(id: string, ports: NodePorts): Promise<void> {
    if (this.ports.has(id)) throw new Error(`node ${id} is on the network already`);
    this.ports.set(id, ports);
    const cr = this.rng.fork(`client-${id}`);
    const p = new LinkProxy({ host: HOST, port: ports.clientPort }, () => cr.next());
    this.clientProxies.set(id, p);
    await p.start();
    for (const other of this.ports.keys()) {
      if (other === id) continue;
      for (const [a, b] of [
        [id, other],
        [other, id],
      ] as const) {
        const r = this.rng.fork(`${a}>${b}`);
        const proxy = new LinkProxy({ host: HOST, port: this.ports.get(b)!.peerPort }, () => r.next());
        this.links.set(link(a, b), proxy);
        await proxy.start();
      }
    }
  }

  /** Stops the node's proxies (a retired machine: its client address refuses connections). */
  async removeNode(id: string): Promise<void> {
    const gone: LinkProxy[] = [];
    for (const [l, p] of this.links) {
      const [a, b] = l.split('>');
      if (a === id || b === id) {
        gone.push(p);
        this.links.delete(l);
      }
    }
    const c = this.clientProxies.get(id);
    if (c) gone.push(c);
    this.clientProxies.delete(id);
    this.ports.delete(id);
    await Promise.all(gone.map((p) => p.stop()));
  }

  listenHost(): string {
    return HOST;
  }

  peerAddress(_from: string, to: string): string {
    return `${HOST}:${this.ports.get(to)!.peerPort}`;
  }

  routes(id: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const to of this.ports.keys()) if (to !== id) out[this.peerAddress(id, to)] = `${HOST}:${this.peerLink(id, to).port}`;
    return out;
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
