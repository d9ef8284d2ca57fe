// The network a chaos cluster runs on, as the orchestrator and the nemesis see it: where each
// node listens and is dialled, and the network faults it can make. Two kinds:
// - ProxyNetwork (proxy-network.ts): every node on 127.0.0.1 behind a TCP proxy per directed peer
//   link and one in front of its client port; faults stall, delay or reset the proxies' own
//   connections.
// - KernelNetwork (kernel-network.ts, `--netns`): every node and every worker in a network
//   namespace of its own on a bridge; faults are made in the kernel (link down, nftables drops)
//   and are silent — no RST, no FIN, no ICMP.
import type { DirectedLink } from '../nemesis/partition-shapes.js';
import type { FaultKind } from '../nemesis/fault-kinds.js';

export interface NodePorts {
  peerPort: number;
  clientPort: number;
}

export interface ChaosNetwork {
  readonly mode: 'proxy' | 'netns';
  /** The host node `id` binds its peer and client ports to. */
  listenHost(id: string): string;
  /** host:port at which node `from` names its peer `to` (--peers, `herald cluster add`). */
  peerAddress(from: string, to: string): string;
  /** Where node `id`'s dials to a peer address really go (its link proxies), or {} (see node-faults.mjs). */
  routes(id: string): Record<string, string>;
  /** Puts a node added at runtime on the network; refused where the network cannot grow. */
  addNode(id: string, ports: NodePorts): Promise<void>;
  /** Takes a retired node off the network. */
  removeNode(id: string): Promise<void>;
  /** host:port of node `id`'s client port as clients, workers and leader redirects name it. */
  clientAddress(id: string): string;
  /** host:port the orchestrator reads a node's status at (never behind a fault of its own making). */
  statusAddress(id: string): string;
  /** The command prefix a node's process is started under (e.g. `ip netns exec ...`), or []. */
  nodePrefix(id: string): string[];
  /** The command prefix of the worker in pool slot `slot`, or []. */
  workerPrefix(slot: number): string[];
  /** The host the ledger binds so that workers reach it. */
  readonly ledgerHost: string;
  /** Fault kinds this network cannot make, with the reason. */
  unavailableKinds(): Partial<Record<FaultKind, string>>;
  /** Node `id` hears nobody and nobody hears it. */
  isolate(id: string, allIds: readonly string[]): Promise<void>;
  /** Exactly these directed peer links are cut (others flow). */
  partition(blocked: ReadonlySet<DirectedLink>): Promise<void>;
  /**
   * The worker(s) lose node `id` (the leader) while keeping every other node; returns what was
   * cut, for the fault record. A proxy network cuts every client from the node's client port;
   * a kernel network cuts only the worker in pool slot `slot`.
   */
  cutWorkerFrom(id: string, slot: number): Promise<string>;
  /** Delay and/or loss on every peer link. */
  linkFaults(f: { delayMs?: number; resetProbability?: number }): Promise<void>;
  /** Undoes every fault. */
  heal(): Promise<void>;
  /** Releases what the network holds (proxies); a kernel lab is destroyed by its owner. */
  close(): Promise<void>;
}
