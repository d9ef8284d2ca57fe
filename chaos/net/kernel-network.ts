// The kernel network of a chaos cluster (`--netns`, see chaos-network.ts): node i (ids n1..nN)
// is lab member i-1, the worker in pool slot s is member N+s; each in a namespace of its own on
// the lab's bridge, where the orchestrator, the ledger and the SDK clients (root namespace) reach
// them. Nodes talk to each other and workers to nodes directly: no proxy anywhere, so every
// fault is the kernel's and silent both ways —
// - isolate (isolate-one, isolate-leader): the node's link goes down: nobody reaches it, it
//   reaches nobody (the orchestrator included);
// - partition (majority/minority, ring, one-way): nftables drops frames between node addresses on
//   the bridge, per direction;
// - worker cut from the leader: drops both ways between that worker and the leader only;
// - link loss: random frame loss between nodes (nft numgen).
// Link delay needs tc netem, which this suite does not use in the kernel: not available here.
import type { DirectedLink } from '../nemesis/partition-shapes.js';
import type { FaultKind } from '../nemesis/fault-kinds.js';
import type { NetnsLab } from './netns.js';
import type { ChaosNetwork, NodePorts } from './chaos-network.js';

const MEMBERSHIP_UNAVAILABLE = 'kernel mode (--netns) has a namespace per node of the start only; membership faults add nodes: run without --netns for them';

export class KernelNetwork implements ChaosNetwork {
  readonly mode = 'netns';

  /** `lab` must have a member per node and per worker slot (nodes first); its owner destroys it. */
  constructor(
    private readonly lab: NetnsLab,
    private readonly ports: ReadonlyMap<string, NodePorts>,
  ) {
    if (lab.size < ports.size) throw new Error(`the lab has ${lab.size} members for ${ports.size} nodes`);
  }

  private member(id: string): number {
    const i = [...this.ports.keys()].indexOf(id);
    if (i < 0) throw new Error(`no node ${id}`);
    return i;
  }

  private workerMember(slot: number): number {
    const m = this.ports.size + slot;
    if (m >= this.lab.size) throw new Error(`no namespace for worker slot ${slot} (lab of ${this.lab.size})`);
    return m;
  }

  get ledgerHost(): string {
    return this.lab.hostAddress;
  }

  listenHost(id: string): string {
    return this.lab.address(this.member(id));
  }

  peerAddress(_from: string, to: string): string {
    return `${this.listenHost(to)}:${this.ports.get(to)!.peerPort}`;
  }

  routes(): Record<string, string> {
    return {};
  }

  async addNode(id: string): Promise<void> {
    throw new Error(`cannot add ${id}: ${MEMBERSHIP_UNAVAILABLE}`);
  }

  async removeNode(): Promise<void> {
    // The namespace stays until the lab is destroyed.
  }

  clientAddress(id: string): string {
    return `${this.listenHost(id)}:${this.ports.get(id)!.clientPort}`;
  }

  statusAddress(id: string): string {
    return this.clientAddress(id);
  }

  nodePrefix(id: string): string[] {
    return this.lab.exec(this.member(id));
  }

  workerPrefix(slot: number): string[] {
    return this.lab.exec(this.workerMember(slot));
  }

  unavailableKinds(): Partial<Record<FaultKind, string>> {
    return {
      'link-delay': 'kernel mode (--netns) makes no delay: tc netem is not used; run without --netns for link-delay',
      'replace-node': MEMBERSHIP_UNAVAILABLE,
      'grow-shrink': MEMBERSHIP_UNAVAILABLE,
    };
  }

  async isolate(id: string): Promise<void> {
    await this.lab.cut(this.member(id));
  }

  async partition(blocked: ReadonlySet<DirectedLink>): Promise<void> {
    const pairs = [...blocked].map((l) => {
      const [a, b] = l.split('>') as [string, string];
      return [this.member(a), this.member(b)] as const;
    });
    await this.lab.drop(pairs);
  }

  async cutWorkerFrom(id: string, slot: number): Promise<string> {
    const w = this.workerMember(slot);
    const n = this.member(id);
    await this.lab.drop([
      [w, n],
      [n, w],
    ]);
    return `worker slot ${slot} (${this.lab.address(w)}) cut from ${id} (${this.lab.address(n)}) both ways`;
  }

  async linkFaults(f: { delayMs?: number; resetProbability?: number }): Promise<void> {
    if (f.delayMs) throw new Error(this.unavailableKinds()['link-delay']);
    // The proxy's loss resets a connection per chunk; here each frame between nodes may vanish.
    await this.lab.loss(
      [...this.ports.keys()].map((id) => this.member(id)),
      Math.round((f.resetProbability ?? 0) * 1000),
    );
  }

  async heal(): Promise<void> {
    await Promise.all(this.lab.cutNow.map((m) => this.lab.heal(m)));
    await this.lab.drop([]);
    await this.lab.loss([], 0);
  }

  async close(): Promise<void> {
    // The lab belongs to whoever made it (run-chaos.ts destroys it after every process is gone).
  }
}
