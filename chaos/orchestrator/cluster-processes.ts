// A Herald cluster as real `herald server` processes, wired for fault injection on one of two
// networks (chaos/net/chaos-network.ts):
// - proxies (default): nodes on 127.0.0.1, every directed peer link A→B and every client port
//   behind a LinkProxy (chaos/net/proxy-network.ts);
// - kernel (`netns`): every node in a network namespace of its own on a bridge, faults made by
//   the kernel (chaos/net/kernel-network.ts).
// Every node runs with chaos/preload/node-faults.mjs and its own control file (clock offsets,
// crash points). Ports are fixed at creation, so a killed node restarts on the same ports (behind
// the same proxies). Each node may see its peers at different addresses, hence the explicit
// --cluster-id.
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
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
}

export class ClusterProcesses {
  readonly nodes = new Map<string, ClusterNode>();
  readonly ids: string[];
  /** Set by create(): where nodes listen and are dialled, and the network faults. */
  network!: ChaosNetwork;
  private readonly statusClients = new Map<string, ClusterServiceClient>();

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
    for (const n of c.nodes.values()) {
      const [command, ...prefix] = [...c.network.nodePrefix(n.id), process.execPath];
      n.process = new ManagedProcess({ name: `node ${n.id}`, command: command!, args: [...prefix, ...c.args(n.id)], env: c.env(n.id), cwd: REPO_ROOT, logFile: join(o.root, `${n.id}.log`) });
    }
    return c;
  }

  private env(id: string): NodeJS.ProcessEnv {
    return { ...process.env, ...this.o.env, CHAOS_CONTROL_FILE: this.nodes.get(id)!.control.file };
  }

  /** `herald server` arguments of one node: peers as this node dials them (through proxies or not). */
  args(id: string): string[] {
    const self = this.nodes.get(id)!;
    const host = this.network.listenHost(id);
    const peers = this.ids.map((other) => `${other}=${this.network.peerAddress(id, other)}/${this.network.clientAddress(other)}`).join(',');
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

  /** Client addresses (what SDK clients and workers use; through the proxies on a proxy network). */
  clientEndpoints(): string[] {
    return this.ids.map((id) => this.network.clientAddress(id));
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
    await this.network?.close();
  }
}
