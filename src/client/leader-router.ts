// Where the next call goes. The SDK prefers the leader (writes are served there without a
// forwarding hop, and linearizable reads need it anyway); it learns the leader from
// ClusterService.GetStatus on any endpoint and from the "herald-leader-address" trailer of
// UNAVAILABLE answers, and falls back to rotating through the configured endpoints when no one
// knows (during an election). It follows membership: the members' client addresses each status
// answer lists join the rotation (and members removed since leave it), so a client configured with
// endpoints of machines the cluster has since left keeps working while one of them still answers.
import type { GetStatusResponse } from '../gen/herald/v1/cluster_service.js';
import type { ClientLogger } from './logger.js';

/** Asks one node for its view of the cluster, giving up at `deadline` (epoch ms). */
export type StatusProbe = (address: string, deadline: number) => Promise<GetStatusResponse>;

export class LeaderRouter {
  private leader: string | undefined;
  private cursor = 0;
  private discovery: Promise<string | undefined> | undefined;
  // Nodes a call gave up on because they sent nothing within the first-byte bound. Such a node
  // may still answer GetStatus (a process whose service calls hang, or a stale claim of
  // leadership), so discovery prefers another node's leader claim over one naming it.
  private readonly silent = new Set<string>();

  /** The configured endpoints, then the members' client addresses the cluster reported. */
  private endpoints: readonly string[];
  private learned: readonly string[] = [];

  constructor(
    private readonly configured: readonly string[],
    private readonly probe: StatusProbe,
    private readonly logger: ClientLogger,
  ) {
    if (configured.length === 0) throw new Error('at least one endpoint is required');
    this.endpoints = configured;
  }

  /** The members' client addresses, from a status answer: they join the rotation (removed ones leave it). */
  noteMembers(members: GetStatusResponse['members']): void {
    const addrs = members.map((m) => m.clientAddress).filter((a) => a !== '');
    if (addrs.length === 0 || addrs.join(',') === this.learned.join(',')) return;
    this.learned = addrs;
    this.endpoints = [...new Set([...this.configured, ...addrs])];
    this.logger.debug({ endpoints: this.endpoints }, 'cluster members learned');
  }

  /** Where discovery and rotation go: configured endpoints and the members learned since. */
  knownEndpoints(): readonly string[] {
    return this.endpoints;
  }

  /** The leader's client address, when known. */
  get leaderAddress(): string | undefined {
    return this.leader;
  }

  /** The node the next call should go to. */
  target(): string {
    return this.leader ?? this.endpoints[this.cursor % this.endpoints.length]!;
  }

  /** Records a leader hint (from a status answer, a trailer or a stream redirect). */
  noteLeader(address: string): void {
    if (address === '' || address === this.leader) return;
    this.logger.debug({ leader: address, previous: this.leader }, 'leader address learned');
    this.leader = address;
  }

  /** Records that `address` could not serve: forget it as leader, and move past it in rotation. */
  noteFailure(address: string): void {
    if (address === this.leader) this.leader = undefined;
    if (this.endpoints[this.cursor % this.endpoints.length] === address) this.cursor += 1;
  }

  /** Records that `address` took a call but sent nothing within the first-byte bound. */
  noteSilent(address: string): void {
    this.silent.add(address);
    this.noteFailure(address);
  }

  /** Records that `address` answered a call: it is no longer suspected of being silent. */
  noteAnswered(address: string): void {
    this.silent.delete(address);
  }

  /**
   * Asks every endpoint at once for the leader and takes the first answer that names one — a
   * leader not suspected of being silent at once; a suspected one only when no answer names
   * another (it may be the real leader, just slow). Calls share one discovery in flight, so a
   * burst of calls after a leader loss probes each node once.
   */
  discover(deadline: number): Promise<string | undefined> {
    this.discovery ??= this.runDiscovery(deadline).finally(() => {
      this.discovery = undefined;
    });
    return this.discovery;
  }

  private runDiscovery(deadline: number): Promise<string | undefined> {
    return new Promise((resolve) => {
      let pending = this.endpoints.length;
      let done = false;
      let suspect: string | undefined;
      const finish = (leader: string | undefined): void => {
        if (done) return;
        done = true;
        if (leader !== undefined) this.noteLeader(leader);
        resolve(leader);
      };
      for (const address of this.endpoints) {
        this.probe(address, deadline).then(
          (st) => {
            pending -= 1;
            this.noteMembers(st.members);
            const named = st.leaderAddress;
            if (named !== '' && !this.silent.has(named)) finish(named);
            else {
              if (named !== '') suspect ??= named;
              if (pending === 0) finish(suspect);
            }
          },
          (err: unknown) => {
            pending -= 1;
            this.logger.debug({ address, err: String(err) }, 'status probe failed');
            if (pending === 0) finish(suspect);
          },
        );
      }
    });
  }
}
