// The membership faults, carried out the way an operator would (docs/membership.md): machines
// started with `herald server --join`, then `herald cluster add`, `promote` (retried while the
// learner is still catching up: LEARNER_BEHIND) and `remove`, through the real CLI
// (orchestrator/operator-cli.ts). Each move is split into the fault (what happens to the cluster)
// and its heal (what the operator then does), so the nemesis holds the cluster in between:
// - replace-node: the fault is a dead disk (kill -9, data dir wiped); the heal brings a new
//   incarnation in. With a new member id: join, add as learner, promote, remove the old member.
//   Keeping the id (the config cannot list one id twice): remove the old member, then join, add,
//   promote the new incarnation under it.
// - grow-shrink: the fault grows the cluster by two voters (join, add, promote each); the heal
//   removes two voters — the leader among them when the step says so — and retires their machines.
// `reconcile()` puts the membership back to the cluster's size (every machine in service a voter,
// nothing else) after a move that failed half way, and is where the end of the run starts from.
import type { ClusterProcesses } from '../orchestrator/cluster-processes.js';
import { OperatorCommandError, type ClusterView, type OperatorCli } from '../orchestrator/operator-cli.js';
import { sleep } from '../orchestrator/free-port.js';

export interface MembershipDeps {
  cluster: ClusterProcesses;
  operator: OperatorCli;
  log: (line: string) => void;
}

/** Refusals that only mean "not now": retried until the bound. */
const TRANSIENT = ['LEARNER_BEHIND', 'CONF_CHANGE_PENDING', 'NO_LEADER', 'UNAVAILABLE', 'DEADLINE_EXCEEDED', 'PROPOSAL_TIMEOUT', 'NOT_LEADER', 'TIMEOUT'];
/** How long one operator command is retried. */
const RETRY_MS = 60_000;

export class MembershipMoves {
  constructor(private readonly d: MembershipDeps) {}

  private get c(): ClusterProcesses {
    return this.d.cluster;
  }

  /**
   * Runs `herald <args>` until it succeeds, an `already` code says an earlier attempt did (its
   * answer lost), or a refusal that is not transient; exit 5 (unavailable) and TRANSIENT codes retry.
   */
  private async operate(args: string[], already: string[] = []): Promise<void> {
    const end = Date.now() + RETRY_MS;
    for (;;) {
      const r = await this.d.operator.run(args);
      if (r.code === 0) return;
      const err = new OperatorCommandError(args, r);
      if (already.some((a) => err.has(a))) return;
      const transient = r.code === 5 || r.code === null || TRANSIENT.some((t) => err.has(t));
      if (!transient || Date.now() > end) throw err;
      await sleep(500);
    }
  }

  private add(id: string): Promise<void> {
    return this.operate(['cluster', 'add', id, '--peer-addr', this.c.peerAddress(id), '--client-addr', this.c.network.clientAddress(id)], ['ALREADY_EXISTS']);
  }

  private promote(id: string): Promise<void> {
    return this.operate(['cluster', 'promote', id], ['already a voter']);
  }

  private remove(id: string): Promise<void> {
    return this.operate(['cluster', 'remove', id], ['MEMBER_NOT_FOUND']);
  }

  /** Starts a joining machine (new or rejoining), then adds it as a learner and promotes it. */
  private async bringIn(id: string): Promise<void> {
    await this.c.start(id);
    await this.add(id);
    await this.promote(id);
  }

  /** The cluster's view, retried while it has no leader. */
  async view(boundMs = 30_000): Promise<ClusterView> {
    const end = Date.now() + boundMs;
    for (;;) {
      try {
        return await this.d.operator.status();
      } catch (e) {
        if (Date.now() > end) throw e;
        await sleep(500);
      }
    }
  }

  /** replace-node, the fault: the node's disk dies. Returns the operator's procedure (the heal). */
  async killAndWipe(id: string, sameId: boolean): Promise<{ heal: () => Promise<{ detail: string; newId: string }>; detail: string }> {
    const before = await this.view();
    const oldInc = before.members.find((m) => m.id === id)?.incarnation || 'not recorded: a bootstrap member';
    await this.c.wipe(id);
    if (sameId) {
      return {
        detail: `${id} (incarnation ${oldInc}) killed and wiped; it comes back under its id`,
        heal: async () => {
          // Removed before its new incarnation starts: a configuration lists an id once.
          await this.remove(id);
          this.c.rejoin(id);
          await this.bringIn(id);
          const inc = (await this.view()).members.find((m) => m.id === id)?.incarnation ?? '?';
          return { detail: `${id} removed, rejoined as incarnation ${inc}, added, promoted`, newId: id };
        },
      };
    }
    await this.c.retire(id);
    return {
      detail: `${id} (incarnation ${oldInc}) killed and wiped; a new member replaces it`,
      heal: async () => {
        const n = await this.c.addMachine();
        await this.bringIn(n.id);
        await this.remove(id);
        return { detail: `${n.id} joined, added, promoted; ${id} removed`, newId: n.id };
      },
    };
  }

  /** grow-shrink, the fault: two machines join and become voters. */
  async grow(): Promise<string[]> {
    const added: string[] = [];
    for (let k = 0; k < 2; k++) {
      const n = await this.c.addMachine();
      added.push(n.id);
      await this.bringIn(n.id);
    }
    return added;
  }

  /**
   * grow-shrink, the heal: two voters leave (the leader first when `removeLeader`; `choice` picks
   * among the others) and their machines are retired.
   */
  async shrink(removeLeader: boolean, choice: number): Promise<string[]> {
    const v = await this.view();
    const voters = v.members.filter((m) => m.member === 'voter').map((m) => m.id);
    const others = voters.filter((id) => id !== v.leaderId);
    const picked: string[] = [];
    if (removeLeader) picked.push(v.leaderId);
    while (picked.length < 2 && others.length > 0) picked.push(others.splice(Math.floor(choice * others.length), 1)[0]!);
    for (const id of picked) {
      await this.remove(id);
      await this.c.retire(id);
    }
    return picked;
  }

  /**
   * Back to the cluster's size, every machine in service a voter: members without a machine
   * (or with a wiped one) removed, learners promoted while voters are short, extra members
   * removed and their machines retired, machines outside the configuration added or retired.
   * One change at a time, re-reading the view after each; bounded.
   */
  async reconcile(boundMs = 120_000): Promise<string[]> {
    const done: string[] = [];
    const end = Date.now() + boundMs;
    const target = this.c.initialIds.length;
    for (;;) {
      if (Date.now() > end) throw new Error(`membership not reconciled within ${boundMs} ms (${done.join('; ')})`);
      const v = await this.view();
      const machines = new Set(this.c.ids);
      const listed = new Map(v.members.map((m) => [m.id, m]));
      const own = await this.c.statuses(2_000);
      // Why a member cannot stay: no machine, a parked (wiped) one, or a machine running another
      // incarnation than the configuration lists (bootstrap members are listed without one: '').
      const staleWhy = (m: { id: string; incarnation: string }): string | undefined => {
        if (!machines.has(m.id)) return 'no machine';
        if (this.c.node(m.id).parked) return 'its machine was wiped';
        const runs = own.get(m.id)?.incarnation;
        if (m.incarnation && runs && runs !== m.incarnation) return `its machine runs incarnation ${runs}, the configuration lists ${m.incarnation}`;
        return undefined;
      };
      const isStale = (m: { id: string; incarnation: string }) => staleWhy(m) !== undefined;
      const stale = v.members.find(isStale);
      const voters = v.members.filter((m) => m.member === 'voter');
      const learners = v.members.filter((m) => m.member === 'learner');
      const ready = learners.find((m) => !isStale(m));
      const outside = this.c.ids.filter((id) => !listed.has(id));
      let step: string | undefined;
      if (ready && voters.length < target) {
        step = `promote ${ready.id}`;
        await this.promote(ready.id);
      } else if (stale) {
        step = `remove ${stale.id} (${staleWhy(stale)})`;
        await this.remove(stale.id);
      } else if (voters.length + learners.length > target) {
        const extra = [...learners, ...voters.filter((m) => m.id !== v.leaderId).reverse()][0]!;
        step = `remove ${extra.id} (more members than ${target})`;
        await this.remove(extra.id);
        await this.c.retire(extra.id);
      } else if (outside.length > 0) {
        const id = outside[0]!;
        if (voters.length + learners.length < target) {
          step = `bring ${id} in`;
          if (this.c.node(id).parked) this.c.rejoin(id);
          if (!this.c.node(id).process.running) await this.c.start(id);
          await this.add(id);
        } else {
          step = `retire ${id} (not a member)`;
          await this.c.retire(id);
        }
      } else if (voters.length < target) {
        step = `add a machine (${voters.length} voters of ${target})`;
        const n = await this.c.addMachine();
        await this.c.start(n.id);
        await this.add(n.id);
      }
      if (step === undefined) return done;
      this.d.log(`membership: ${step}`);
      done.push(step);
    }
  }
}
