// A Herald cluster as real `herald server` processes on 127.0.0.1, wired for fault injection:
// - every directed peer link A→B is a LinkProxy (A's --peers names B at the proxy's port), so a
//   partition is a set of blocked links, and one-way partitions are possible;
// - every node's client port has a proxy in front of it (the address clients and workers are
//   told, leader redirects included), so the worker↔leader link can be blackholed;
// - every node runs with chaos/preload/node-faults.mjs and its own control file (clock offsets,
//   crash points).
// Ports are fixed at creation, so a killed node restarts on the same ports behind the same
// proxies. Each node sees its peers at different addresses, hence the explicit --cluster-id.
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import { ClusterServiceClient, NodeRole, type GetStatusResponse } from '../../src/gen/herald/v1/cluster_service.js';
import { LinkProxy } from '../net/link-proxy.js';
import { Rng } from '../random.js';
import { link, type DirectedLink } from '../nemesis/partition-shapes.js';
import { ManagedProcess } from './managed-process.js';
import { NodeControl } from './node-control.js';
import { freePort, sleep } from './free-port.js';
import { SERVER_NODE_FLAGS } from '../../src/server/node/server-node-flags.js';

export const REPO_ROOT = join(import.meta.dirname, '..', '..');
export const HERALD_BIN = join(REPO_ROOT, 'bin', 'herald.mjs');
export const FAULT_PRELOAD = join(REPO_ROOT, 'chaos', 'preload', 'node-faults.mjs');

export interface ClusterOptions {
  nodes: number;
  /** Directory for data dirs, control files and logs (the caller owns and removes it). */
  root: string;
  clusterId: string;
  stateMachine: string;
  seed: number;
  tickMs?: number;
  electionTicks?: number;
  snapshotEntries?: number;
  compactionKeep?: number;
  /** Extra `herald server` flags for every node. */
  extraArgs?: string[];
  /** Transport-security flags of node `id` (certificate files); default `--insecure` (the nodes listen on loopback). */
  security?: (id: string) => string[];
  /** Extra environment for every node (test-only switches). */
  env?: NodeJS.ProcessEnv;
  /** The herald.mjs to run (default: the repo's; a run passes its own copy, see build-snapshot.ts). */
  heraldBin?: string;
}

export interface ClusterNode {
  id: string;
  peerPort: number;
  clientPort: number;
  dataDir: string;
  process: ManagedProcess;
  control: NodeControl;
  /** The proxy clients and workers use to reach this node. */
  clientProxy: LinkProxy;
}

export class ClusterProcesses {
  readonly nodes = new Map<string, ClusterNode>();
  readonly ids: string[];
  private readonly links = new Map<DirectedLink, LinkProxy>();
  private readonly statusClients = new Map<string, ClusterServiceClient>();
  private blocked = new Set<DirectedLink>();

  private constructor(readonly o: ClusterOptions) {
    this.ids = Array.from({ length: o.nodes }, (_, i) => `n${i + 1}`);
  }

  get tickMs(): number {
    return this.o.tickMs ?? 50;
  }

  /** The longest randomized election timeout. */
  get electionTimeoutMs(): number {
    return 2 * this.tickMs * (this.o.electionTicks ?? 10);
  }

  /** Allocates ports, starts every proxy (no node yet). */
  static async create(o: ClusterOptions): Promise<ClusterProcesses> {
    const c = new ClusterProcesses(o);
    const rng = new Rng(o.seed).fork('links');
    try {
      for (const id of c.ids) {
        const dataDir = join(o.root, id);
        mkdirSync(dataDir, { recursive: true });
        const peerPort = await freePort();
        const clientPort = await freePort();
        const cr = rng.fork(`client-${id}`);
        const clientProxy = new LinkProxy({ host: '127.0.0.1', port: clientPort }, () => cr.next());
        await clientProxy.start();
        c.nodes.set(id, {
          id,
          peerPort,
          clientPort,
          dataDir,
          clientProxy,
          control: new NodeControl(join(o.root, `${id}.control.json`)),
          // Replaced below, once every proxy port (part of the arguments) is known.
          process: new ManagedProcess({ name: `node ${id}`, command: process.execPath, args: [], cwd: REPO_ROOT }),
        });
      }
      for (const a of c.ids) {
        for (const b of c.ids) {
          if (a === b) continue;
          const r = rng.fork(`${a}>${b}`);
          const proxy = new LinkProxy({ host: '127.0.0.1', port: c.nodes.get(b)!.peerPort }, () => r.next());
          await proxy.start();
          c.links.set(link(a, b), proxy);
        }
      }
    } catch (e) {
      await c.close();
      throw e;
    }
    for (const n of c.nodes.values()) n.process = new ManagedProcess({ name: `node ${n.id}`, command: process.execPath, args: c.args(n.id), env: c.env(n.id), cwd: REPO_ROOT, logFile: join(o.root, `${n.id}.log`) });
    return c;
  }

  private env(id: string): NodeJS.ProcessEnv {
    return { ...process.env, ...this.o.env, CHAOS_CONTROL_FILE: this.nodes.get(id)!.control.file };
  }

  /** `herald server` arguments of one node: peers through its own outgoing link proxies. */
  args(id: string): string[] {
    const self = this.nodes.get(id)!;
    const peers = this.ids
      .map((other) => {
        const n = this.nodes.get(other)!;
        const peerPort = other === id ? n.peerPort : this.links.get(link(id, other))!.port;
        return `${other}=127.0.0.1:${peerPort}/127.0.0.1:${n.clientProxy.port}`;
      })
      .join(',');
    const o = this.o;
    return [
      ...SERVER_NODE_FLAGS,
      '--import',
      FAULT_PRELOAD,
      o.heraldBin ?? HERALD_BIN,
      'server',
      '--id',
      id,
      '--peers',
      peers,
      '--peer-addr',
      `127.0.0.1:${self.peerPort}`,
      '--client-addr',
      `127.0.0.1:${self.clientPort}`,
      '--data-dir',
      self.dataDir,
      '--cluster-id',
      o.clusterId,
      '--state-machine',
      o.stateMachine,
      '--tick-ms',
      String(this.tickMs),
      '--election-ticks',
      String(o.electionTicks ?? 10),
      ...(o.snapshotEntries ? ['--snapshot-entries', String(o.snapshotEntries)] : []),
      ...(o.compactionKeep !== undefined ? ['--compaction-keep', String(o.compactionKeep)] : []),
      ...(o.security ? o.security(id) : ['--insecure']),
      ...(o.extraArgs ?? []),
    ];
  }

  node(id: string): ClusterNode {
    const n = this.nodes.get(id);
    if (!n) throw new Error(`no node ${id}`);
    return n;
  }

  /** Starts a node (fresh or restart); resolves when it announced its ports. */
  async start(id: string): Promise<void> {
    await this.node(id).process.start((j) => j.event === 'listening', 60_000);
  }

  async startAll(): Promise<void> {
    await Promise.all(this.ids.map((id) => this.start(id)));
  }

  isUp(id: string): boolean {
    const p = this.node(id).process;
    return p.running && !p.paused;
  }

  async kill(id: string): Promise<void> {
    await this.node(id).process.kill();
  }

  pause(id: string): void {
    this.node(id).process.signal('SIGSTOP');
  }

  resume(id: string): void {
    this.node(id).process.signal('SIGCONT');
  }

  // ---- network ---------------------------------------------------------------------------

  peerLink(from: string, to: string): LinkProxy {
    const p = this.links.get(link(from, to));
    if (!p) throw new Error(`no link ${from}>${to}`);
    return p;
  }

  /** Blocks exactly these directed peer links (others are unblocked). */
  setBlocked(links: ReadonlySet<DirectedLink>): void {
    this.blocked = new Set(links);
    for (const [l, p] of this.links) p.setFaults({ blocked: links.has(l) });
  }

  get blockedLinks(): ReadonlySet<DirectedLink> {
    return this.blocked;
  }

  /** Delay and loss on every peer link. */
  setPeerLinkFaults(f: { delayMs?: number; resetProbability?: number }): void {
    for (const p of this.links.values()) p.setFaults(f);
  }

  /** Heals every peer link and client proxy. */
  healNetwork(): void {
    this.blocked = new Set();
    for (const p of this.links.values()) p.heal();
    for (const n of this.nodes.values()) n.clientProxy.heal();
  }

  /** Client addresses through the proxies (what SDK clients and workers use). */
  clientEndpoints(): string[] {
    return this.ids.map((id) => `127.0.0.1:${this.node(id).clientProxy.port}`);
  }

  /** Direct client addresses (the orchestrator's own status reads, unaffected by proxies). */
  directEndpoint(id: string): string {
    return `127.0.0.1:${this.node(id).clientPort}`;
  }

  // ---- status ----------------------------------------------------------------------------

  status(id: string, timeoutMs = 1_000): Promise<GetStatusResponse> {
    let c = this.statusClients.get(id);
    if (!c) {
      c = new ClusterServiceClient(this.directEndpoint(id), credentials.createInsecure());
      this.statusClients.set(id, c);
    }
    const client = c;
    return new Promise((resolve, reject) =>
      client.getStatus({}, new Metadata(), { deadline: Date.now() + timeoutMs }, (err: ServiceError | null, r) => (err ? reject(err) : resolve(r))),
    );
  }

  /** Statuses of the nodes that answer (running and not paused), by id. */
  async statuses(timeoutMs = 1_000): Promise<Map<string, GetStatusResponse>> {
    const out = new Map<string, GetStatusResponse>();
    await Promise.all(
      this.ids
        .filter((id) => this.isUp(id))
        .map(async (id) => {
          try {
            out.set(id, await this.status(id, timeoutMs));
          } catch {
            // not answering
          }
        }),
    );
    return out;
  }

  /**
   * The current leader as the nodes see it: a node that says it leads, with the highest term
   * among those that do, and that a majority of answering nodes agree on. Undefined otherwise.
   */
  async leader(timeoutMs = 1_000): Promise<string | undefined> {
    const st = await this.statuses(timeoutMs);
    let best: GetStatusResponse | undefined;
    for (const s of st.values()) if (s.role === NodeRole.NODE_ROLE_LEADER && (!best || s.term > best.term)) best = s;
    if (!best) return undefined;
    const agree = [...st.values()].filter((s) => s.leaderId === best!.nodeId && s.term === best!.term).length;
    return agree > this.ids.length / 2 ? best.nodeId : undefined;
  }

  async waitLeader(timeoutMs: number): Promise<{ leader: string; waitedMs: number }> {
    const start = Date.now();
    for (;;) {
      const l = await this.leader();
      if (l) return { leader: l, waitedMs: Date.now() - start };
      if (Date.now() - start > timeoutMs) throw new Error(`no leader within ${timeoutMs} ms`);
      await sleep(100);
    }
  }

  // ---- lifecycle -------------------------------------------------------------------------

  /** kill -9 every node, stop every proxy. Safe to call twice and after a failed create. */
  async close(): Promise<void> {
    for (const c of this.statusClients.values()) c.close();
    this.statusClients.clear();
    await Promise.all([...this.nodes.values()].map((n) => n.process.close()));
    await Promise.all([...this.links.values()].map((p) => p.stop()));
    await Promise.all([...this.nodes.values()].map((n) => n.clientProxy.stop()));
  }
}
