// A Herald cluster as real `herald server` processes, wired for fault injection on one of two
// networks (chaos/net/chaos-network.ts):
// - proxies (default): nodes on 127.0.0.1, every directed peer link A→B and every client port
//   behind a LinkProxy (chaos/net/proxy-network.ts);
// - kernel (`netns`): every node in a network namespace of its own on a bridge, faults made by
//   the kernel (chaos/net/kernel-network.ts).
// Every node runs with chaos/preload/node-faults.mjs and its own control file (clock offsets,
// crash points, the routes through its link proxies). Ports are fixed when a node is created, so a
// killed node restarts on the same ports (behind the same proxies).
// Membership moves (chaos/nemesis/membership-moves.ts) add machines at runtime — a node that
// starts with `herald server --join` — and retire them. The machines are kept in slots: the first
// n are the cluster's size at the start, a machine added to replace one takes its slot, and
// extras (a cluster grown past n) move into the slots of the machines retired when it shrinks.
// So a fault schedule drawn over n1..nN (fault-schedule.ts) still names one machine per id as
// the cluster moves: `resolve(id)`.
import { join } from 'node:path';
import { mkdirSync, rmSync } from 'node:fs';
import { credentials, Metadata, type ChannelCredentials, type ServiceError } from '@grpc/grpc-js';
import { ClusterServiceClient, NodeRole, type GetStatusResponse } from '../../src/gen/herald/v1/cluster_service.js';
import type { LinkProxy } from '../net/link-proxy.js';
import type { ChaosNetwork, NodePorts } from '../net/chaos-network.js';
import { ProxyNetwork } from '../net/proxy-network.js';
import { KernelNetwork } from '../net/kernel-network.js';
import type { NetnsLab } from '../net/netns.js';
import type { DirectedLink } from '../nemesis/partition-shapes.js';
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
  /**
   * Transport-security flags of node `id` (certificate files); default `--insecure`, plus
   * `--allow-insecure-network` on a kernel network (the nodes listen on the lab's bridge addresses).
   */
  security?: (id: string) => string[];
  /** How the orchestrator's status reads dial the client ports (with `security`); default plaintext. */
  statusCredentials?: ChannelCredentials;
  /** Extra environment for every node (test-only switches). */
  env?: NodeJS.ProcessEnv;
  /** The herald.mjs to run (default: the repo's; a run passes its own copy, see build-snapshot.ts). */
  heraldBin?: string;
  /**
   * Run on kernel network faults: node i in member i-1's namespace of this lab (workers in the
   * members after the nodes). The caller owns the lab. Default: the proxy network.
   */
  netns?: NetnsLab;
}

export interface ClusterNode {
  id: string;
  peerPort: number;
  clientPort: number;
  dataDir: string;
  process: ManagedProcess;
  control: NodeControl;
  /** Started with `--join` these client endpoints (a member added at runtime), not `--peers`. */
  join?: string[];
  /**
   * Wiped and waiting for the operator (replace-node keeping the id): never started until
   * `rejoin`, since the configuration may still list its old self (a bootstrap member is listed
   * without an incarnation, so a restart on the empty dir would pass for it).
   */
  parked?: boolean;
}

export class ClusterProcesses {
  /** Every node ever created, retired ones included (their logs stay in the root). */
  readonly nodes = new Map<string, ClusterNode>();
  /** The ids of the start (what a fault schedule names). */
  readonly initialIds: readonly string[];
  /** The machines in service by slot (see the header); undefined: a slot between machines. */
  private readonly slots: Array<string | undefined>;
  private nextNumber: number;
  /** Set by create(): where nodes listen and are dialled, and the network faults. */
  network!: ChaosNetwork;
  private readonly statusClients = new Map<string, ClusterServiceClient>();
  /** Old processes of nodes whose process was replaced (a rejoin), closed with the rest. */
  private readonly replaced: ManagedProcess[] = [];

  private constructor(readonly o: ClusterOptions) {
    this.initialIds = Array.from({ length: o.nodes }, (_, i) => `n${i + 1}`);
    this.slots = [...this.initialIds];
    this.nextNumber = o.nodes + 1;
  }

  /** The machines in service (not retired), in slot order. */
  get ids(): string[] {
    return this.slots.filter((id): id is string => id !== undefined);
  }

  /** The machine in service that stands for schedule id `id` (the one in its slot). */
  resolve(id: string): string {
    const i = this.initialIds.indexOf(id);
    const current = i >= 0 ? this.slots[i] : undefined;
    if (current !== undefined) return current;
    if (this.slots.includes(id)) return id;
    const up = this.ids;
    return up[Math.max(0, i) % up.length] ?? id;
  }

  get tickMs(): number {
    return this.o.tickMs ?? 50;
  }

  /** The longest randomized election timeout. */
  get electionTimeoutMs(): number {
    return 2 * this.tickMs * (this.o.electionTicks ?? 10);
  }

  /** Allocates ports, sets up the network (proxies or the lab's addresses); no node yet. */
  static async create(o: ClusterOptions): Promise<ClusterProcesses> {
    const c = new ClusterProcesses(o);
    const ports = new Map<string, NodePorts>();
    for (const id of c.ids) {
      const dataDir = join(o.root, id);
      mkdirSync(dataDir, { recursive: true });
      const peerPort = await freePort();
      const clientPort = await freePort();
      ports.set(id, { peerPort, clientPort });
      c.nodes.set(id, {
        id,
        peerPort,
        clientPort,
        dataDir,
        control: new NodeControl(join(o.root, `${id}.control.json`)),
        // Replaced below, once the network (part of the arguments) is known.
        process: new ManagedProcess({ name: `node ${id}`, command: process.execPath, args: [], cwd: REPO_ROOT }),
      });
    }
    c.network = o.netns ? new KernelNetwork(o.netns, ports) : await ProxyNetwork.create(ports, o.seed);
    c.syncRoutes();
    for (const n of c.nodes.values()) n.process = c.processOf(n.id);
    return c;
  }

  private processOf(id: string): ManagedProcess {
    const [command, ...prefix] = [...this.network.nodePrefix(id), process.execPath];
    return new ManagedProcess({ name: `node ${id}`, command: command!, args: [...prefix, ...this.args(id)], env: this.env(id), cwd: REPO_ROOT, logFile: join(this.o.root, `${id}.log`) });
  }

  /** Every node's routes as the network is now (a node's dials follow within its control poll). */
  private syncRoutes(): void {
    for (const id of this.ids) this.node(id).control.setRoutes(this.network.routes(id));
  }

  /**
   * A new machine (not started): a fresh id, ports, a data dir and links to every machine in
   * service; its process runs `herald server --join <the machines' client endpoints>`. It takes
   * the first free slot, else an extra one.
   */
  async addMachine(): Promise<ClusterNode> {
    const id = `n${this.nextNumber++}`;
    const dataDir = join(this.o.root, id);
    mkdirSync(dataDir, { recursive: true });
    const ports = { peerPort: await freePort(), clientPort: await freePort() };
    await this.network.addNode(id, ports);
    const endpoints = this.clientEndpoints();
    const n: ClusterNode = { id, ...ports, dataDir, join: endpoints, control: new NodeControl(join(this.o.root, `${id}.control.json`)), process: undefined as unknown as ManagedProcess };
    this.nodes.set(id, n);
    n.process = this.processOf(id);
    const free = this.slots.findIndex((s) => s === undefined);
    if (free >= 0) this.slots[free] = id;
    else this.slots.push(id);
    this.syncRoutes();
    return n;
  }

  /**
   * The node's disk died: kill -9 and an empty data dir; it stays down (parked) until `rejoin`
   * makes it a new incarnation that joins (same id, same ports).
   */
  async wipe(id: string): Promise<void> {
    const n = this.node(id);
    n.parked = true;
    await n.process.kill();
    rmSync(n.dataDir, { recursive: true, force: true });
    mkdirSync(n.dataDir, { recursive: true });
  }

  /** A wiped node's next start joins the cluster (`--join`), as a new incarnation. */
  rejoin(id: string): void {
    const n = this.node(id);
    if (n.process.running) throw new Error(`${id} is running; wipe it first`);
    n.join = this.clientEndpoints().filter((e) => e !== this.network.clientAddress(id));
    n.parked = false;
    this.replaced.push(n.process);
    n.process = this.processOf(id);
  }

  /**
   * Takes a machine out of service for good: kill -9, its data dir deleted, off the network. Its
   * slot goes to an extra machine if there is one (a shrink), else stays free for a replacement.
   */
  async retire(id: string): Promise<void> {
    const i = this.slots.indexOf(id);
    if (i < 0) return;
    const n = this.node(id);
    await n.process.kill();
    this.slots[i] = undefined;
    const extra = this.slots.findIndex((s, k) => k >= this.o.nodes && s !== undefined);
    if (i < this.o.nodes && extra >= 0) {
      this.slots[i] = this.slots[extra];
      this.slots[extra] = undefined;
    }
    while (this.slots.length > this.o.nodes && this.slots[this.slots.length - 1] === undefined) this.slots.pop();
    this.statusClients.get(id)?.close();
    this.statusClients.delete(id);
    await this.network.removeNode(id);
    this.syncRoutes();
    rmSync(n.dataDir, { recursive: true, force: true });
  }

  private env(id: string): NodeJS.ProcessEnv {
    return { ...process.env, ...this.o.env, CHAOS_CONTROL_FILE: this.nodes.get(id)!.control.file };
  }

  /**
   * `herald server` arguments of one node: a bootstrap member lists its peers (as it names them),
   * a member added at runtime joins through the given client endpoints.
   */
  args(id: string): string[] {
    const self = this.nodes.get(id)!;
    const host = this.network.listenHost(id);
    const peers = () => this.initialIds.map((other) => `${other}=${this.network.peerAddress(id, other)}/${this.network.clientAddress(other)}`).join(',');
    const o = this.o;
    return [
      ...SERVER_NODE_FLAGS,
      '--import',
      FAULT_PRELOAD,
      o.heraldBin ?? HERALD_BIN,
      'server',
      '--id',
      id,
      ...(self.join ? ['--join', self.join.join(',')] : ['--peers', peers()]),
      '--peer-addr',
      `${host}:${self.peerPort}`,
      '--client-addr',
      `${host}:${self.clientPort}`,
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
      ...(o.security ? o.security(id) : ['--insecure', ...(o.netns ? ['--allow-insecure-network'] : [])]),
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
    const n = this.node(id);
    if (n.parked) throw new Error(`${id} was wiped and waits for the operator (rejoin)`);
    await n.process.start((j) => j.event === 'listening', 60_000);
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

  private get proxies(): ProxyNetwork {
    if (!(this.network instanceof ProxyNetwork)) throw new Error('this cluster runs on kernel network faults, not proxies');
    return this.network;
  }

  /** Proxy network only: the proxy of one directed peer link. */
  peerLink(from: string, to: string): LinkProxy {
    return this.proxies.peerLink(from, to);
  }

  /** Proxy network only: blocks exactly these directed peer links (others are unblocked). */
  setBlocked(links: ReadonlySet<DirectedLink>): void {
    this.proxies.setBlocked(links);
  }

  /** Heals every network fault (proxy network: at once; kernel: when the promise resolves). */
  healNetwork(): Promise<void> {
    return this.network.heal();
  }

  /** Client addresses of the machines in service (what SDK clients and workers use; through the proxies on a proxy network). */
  clientEndpoints(): string[] {
    return this.ids.map((id) => this.network.clientAddress(id));
  }

  /** The address the cluster records for a node's peer port (`herald cluster add --peer-addr`). */
  peerAddress(id: string): string {
    return this.network.peerAddress(id, id);
  }

  /** The address the orchestrator's own status reads use (unaffected by proxies). */
  directEndpoint(id: string): string {
    return this.network.statusAddress(id);
  }

  // ---- status ----------------------------------------------------------------------------

  status(id: string, timeoutMs = 1_000): Promise<GetStatusResponse> {
    let c = this.statusClients.get(id);
    if (!c) {
      c = new ClusterServiceClient(this.directEndpoint(id), this.o.statusCredentials ?? credentials.createInsecure());
      this.statusClients.set(id, c);
    }
    const client = c;
    return new Promise((resolve, reject) =>
      client.getStatus({}, new Metadata(), { deadline: Date.now() + timeoutMs }, (err: ServiceError | null, r) => {
        if (!err) return resolve(r);
        // A fresh channel next time: one whose connect went unanswered (a silent cut) would wait
        // out gRPC's reconnect backoff after the heal instead of dialling again.
        if (this.statusClients.get(id) === client) {
          this.statusClients.delete(id);
          client.close();
        }
        reject(err);
      }),
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
    await Promise.all(this.replaced.map((p) => p.close()));
    await this.network?.close();
  }
}
