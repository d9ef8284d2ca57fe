// One simulated cluster node: the real RaftDriver over simulated ports (sim-log.ts over a log
// SimDisk, SimKvMachine over a state-machine SimDisk, SimTransport over the SimNetwork, staged
// snapshots in memory, SimTimers on simulated time). A crash kills the incarnation (its timers
// and in-flight I/O vanish, its disks keep only what was synced, or what the disk model lets
// survive); a restart rebuilds everything from the disks, as `herald server` does at startup
// (create-node.ts): load and validate the log, open the state machine, finish the restore of a
// staged snapshot the log records, then start a new driver at the state machine's applied index.

import type { Logger } from 'pino';
import { pino } from 'pino';
import type { MemoryStorage } from '../core/memory-storage.js';
import type { CoreMutation } from '../core/mutations.js';
import type { DriverMutation } from '../driver/mutations.js';
import { RaftDriver } from '../driver/raft-driver.js';
import { LEADER_MESSAGES } from '../core/core-messages.js';
import { incarnationOf } from '../core/membership.js';
import type { ConfState, Entry, Message, MessageType, NodeId } from '../types.js';
import type { Prng } from './prng.js';
import type { RuntimeOptions } from './runtime-options.js';
import { SimDisk, type CrashFaults } from './sim-disk.js';
import { SimIo } from './sim-io.js';
import { SimKvMachine, type SmImage } from './sim-kv-machine.js';
import { CorruptLog, loadSimLog, logKey, SimLogSink, type LogValue } from './sim-log.js';
import type { SimNetwork } from './sim-network.js';
import { SimTimers, type Owner, type SimScheduler } from './sim-scheduler.js';
import { SimTransport, type Packet } from './sim-transport.js';

export interface NodeParams {
  electionTicks: number;
  tickUnits: number;
  maxSizePerMsg: number;
  maxInflightMsgs: number;
  preVote: boolean;
  checkQuorum: boolean;
  runtime: RuntimeOptions;
  coreMutations: ReadonlySet<CoreMutation>;
  mutations: ReadonlySet<DriverMutation>;
  crashFaults: CrashFaults;
}

/** What the simulator watches, in the order things happen. Only a live incarnation reports. */
export interface NodeHooks {
  sent(node: SimNode, m: Message): void;
  /** Log entries that landed on disk. */
  landed(node: SimNode, entries: readonly Entry[]): void;
  /** An entry the state machine evaluates. */
  evaluated(node: SimNode, e: Entry): void;
  /** The driver's applied index moved (the state machine's must agree). */
  applied(node: SimNode, index: number): void;
  becameLeader(node: SimNode, term: number): void;
  /** The driver failed (an I/O error): the process exits; its supervisor restarts it. */
  fatal(node: SimNode, err: Error): void;
  /** A new incarnation loaded its log and state machine; its driver starts next. */
  started(node: SimNode, applied: number): void;
  /** A restart found its disks in a state it cannot serve from. */
  broken(node: SimNode, kind: string, detail: string): void;
}

const silent: Logger = pino({ level: 'silent' });

const RESPONSES: ReadonlySet<MessageType> = new Set(['appResp', 'heartbeatResp', 'voteResp', 'preVoteResp', 'readIndexResp']);

export class SimNode {
  driver!: RaftDriver;
  sm!: SimKvMachine;
  storage!: MemoryStorage;
  up = false;
  /** Process starts (restarts), for seeding. */
  incarnation = 0;
  /** The member incarnation: chosen at a start on empty disks, so a wipe makes a new one. */
  memberIncarnation = 'g1';
  /** The configuration a start on empty disks begins with (bootstrap voters, or none: joining). */
  bootstrap: ConfState;
  logDisk: SimDisk<LogValue>;
  smDisk: SimDisk<SmImage>;
  private wipes = 0;
  /** Snapshots received and staged (files: they survive a crash until pruned). */
  private readonly staged = new Map<number, Uint8Array>();
  private owner: Owner = { alive: false };
  private io!: SimIo;
  private transport!: SimTransport;

  constructor(
    readonly id: NodeId,
    /** Every node id the network knows (members, spares). */
    private readonly voters: readonly NodeId[],
    private readonly params: NodeParams,
    private readonly sched: SimScheduler,
    private readonly net: SimNetwork<Packet>,
    /** The node's clock rate (units per simulated ms). */
    private readonly unitsPerMs: number,
    private readonly rng: Prng,
    private readonly hooks: NodeHooks,
  ) {
    this.logDisk = new SimDisk<LogValue>({ rng: rng.fork('log-disk'), crashFaults: params.crashFaults });
    this.smDisk = new SimDisk<SmImage>({ rng: rng.fork('sm-disk'), crashFaults: params.crashFaults });
    this.bootstrap = { voters: [...voters] };
  }

  /**
   * The disks are replaced by empty ones (the process must be down). A correct restart is a new
   * member incarnation that knows no configuration (it waits to be added); `asBefore` is the
   * bug of coming back under the old incarnation, as a voter of `conf`.
   */
  wipe(asBefore: ConfState | undefined): void {
    this.wipes++;
    const rng = this.rng.fork(`wipe-${this.wipes}`);
    this.logDisk = new SimDisk<LogValue>({ rng: rng.fork('log-disk'), crashFaults: this.params.crashFaults });
    this.smDisk = new SimDisk<SmImage>({ rng: rng.fork('sm-disk'), crashFaults: this.params.crashFaults });
    this.staged.clear();
    if (asBefore) {
      this.bootstrap = asBefore;
    } else {
      this.memberIncarnation = `g${this.wipes + 1}`;
      this.bootstrap = { voters: [] };
    }
  }

  /** I/O failures injected into this node, over all its incarnations. */
  readonly counts = { ioErrors: 0 };

  /** The live incarnation (its events run while it lives). */
  get current(): Owner {
    return this.owner;
  }

  /** Changes the I/O error rate of the running incarnation (the liveness phase calms it). */
  setIoErrorRate(rate: number): void {
    this.params.runtime.ioErrorRate = rate;
    if (this.io) this.io.opts.errorRate = rate;
  }

  /** Starts a new incarnation from the disks; false when it could not (it stays down). */
  async start(): Promise<boolean> {
    const owner: Owner = { alive: true };
    const live = () => owner.alive;
    const rt = this.params.runtime;
    const io = new SimIo(this.sched, owner, this.rng.fork(`io-${this.incarnation}`), { maxDelay: rt.ioMaxDelay, errorRate: rt.ioErrorRate }, this.counts);
    this.owner = owner;
    this.io = io;
    this.incarnation++;
    let loaded: ReturnType<typeof loadSimLog>;
    try {
      io.read('log load');
      loaded = loadSimLog(this.logDisk, this.bootstrap);
    } catch (e) {
      owner.alive = false;
      if (e instanceof CorruptLog) this.hooks.broken(this, 'corrupt-log', `${this.id}: ${e.message}`);
      return false;
    }
    const storage = loaded.storage;
    let sm: SimKvMachine;
    try {
      sm = new SimKvMachine(this.smDisk, io, rt.writeBehind, (e) => live() && this.hooks.evaluated(this, e));
      const base = storage.firstIndex() - 1;
      if (sm.applied < base) {
        const snap = storage.snapshot();
        const data = this.staged.get(snap.index);
        if (!data) {
          owner.alive = false;
          this.hooks.broken(this, 'snapshot-lost', `${this.id}: applied ${sm.applied} is behind the compaction point ${base} and no snapshot ${snap.index} is staged`);
          return false;
        }
        await sm.restore(snap, (async function* () {
          yield data;
        })());
        this.staged.clear();
      }
    } catch {
      owner.alive = false; // an I/O error while starting: the supervisor tries again later
      return false;
    }
    this.storage = storage;
    this.sm = sm;
    this.hooks.started(this, sm.applied);
    const timers = new SimTimers(this.sched, owner, this.unitsPerMs);
    this.transport = new SimTransport(this.id, this.voters, this.net, timers, () => this.sched.now, (m) => {
      if (live()) this.hooks.sent(this, m);
    }, live, this.memberIncarnation, () => this.driver.confState());
    const staged = this.staged;
    const random = this.rng.fork(`raft-${this.incarnation}`);
    const p = this.params;
    this.driver = new RaftDriver(
      {
        id: this.id,
        members: this.voters.map((id) => ({ id, peerAddress: id, clientAddress: id })),
        log: new SimLogSink(this.logDisk, io, loaded.first, loaded.last, p.mutations, (es) => live() && this.hooks.landed(this, es)),
        storage,
        stateMachine: sm,
        transport: this.transport,
        snapshots: {
          read: async function* (meta) {
            const d = staged.get(meta.index);
            if (!d) throw new Error(`snapshot ${meta.index} is not staged`);
            yield d;
          },
          prune: async (installed) => {
            for (const index of [...staged.keys()]) if (index <= installed.index) staged.delete(index);
          },
        },
        timers,
        logger: silent,
        tickMs: p.tickUnits,
        electionTicks: p.electionTicks,
        heartbeatTicks: 1,
        maxSizePerMsg: p.maxSizePerMsg,
        maxInflightMsgs: p.maxInflightMsgs,
        preVote: p.preVote,
        checkQuorum: p.checkQuorum,
        defaultProposalTimeoutMs: 40 * p.tickUnits,
        followerApplyWindowMs: rt.followerApplyWindowMs,
        replicateEffects: rt.replicateEffects,
        snapshotEntries: rt.snapshotEntries,
        snapshotBytes: rt.snapshotBytes,
        compactionKeepEntries: rt.compactionKeepEntries,
        compactionKeepBytes: rt.compactionKeepBytes,
        random: () => random.next(),
        coreMutations: p.coreMutations,
        mutations: p.mutations,
      },
      sm.applied,
    );
    const driver = this.driver;
    driver.events.on('applied', ({ index }) => live() && this.hooks.applied(this, index));
    driver.events.on('becameLeader', ({ term }) => live() && this.hooks.becameLeader(this, term));
    driver.events.on('fatal', (err) => live() && this.hooks.fatal(this, err));
    this.up = true;
    driver.start();
    return true;
  }

  /** The process dies: timers and unfinished I/O vanish, the disks keep what they keep. */
  crash(): void {
    this.owner.alive = false;
    this.up = false;
    this.logDisk.crash();
    this.smDisk.crash();
  }

  deliver(from: NodeId, p: Packet): void {
    const driver = this.driver;
    const fromLeader = p.kind === 'snapshot' || (p.kind === 'raft' && LEADER_MESSAGES.has(p.m.type));
    // A response answers a request this incarnation sent; a lagging sender may name an older one.
    const response = p.kind === 'raft' && RESPONSES.has(p.m.type);
    if ((p.kind === 'raft' || p.kind === 'snapshot') && !this.acceptsIncarnations(from, p.fromInc, response ? '' : p.toInc, fromLeader)) return;
    switch (p.kind) {
      case 'raft':
        driver.step([p.m]);
        return;
      case 'effects':
        driver.receiveEffects([p.effects]);
        return;
      case 'snapshotResp':
        this.transport.settle(p.id, p.installed);
        return;
      case 'snapshot': {
        this.staged.set(p.meta.index, p.data);
        const owner = this.owner;
        const reply = (installed: boolean) => {
          if (owner.alive) this.net.send(this.id, from, { kind: 'snapshotResp', id: p.id, installed }, this.sched.now);
        };
        driver.offerSnapshot(from, p.term, p.meta).then(reply, () => reply(false));
        return;
      }
    }
  }

  /**
   * Member identity (what a real transport does with the incarnations in its handshake): drop a
   * packet meant for another incarnation of this id, or from an incarnation of the sender that
   * the configuration in force here does not list — except a leader's, which may have been added
   * by a configuration this node has not received yet (as the core takes leader messages from
   * non-members): a node replaying old configurations must still hear the current leader.
   */
  private acceptsIncarnations(from: NodeId, fromInc: string, toInc: string, fromLeader: boolean): boolean {
    if (toInc !== '' && toInc !== this.memberIncarnation) return false;
    if (fromLeader) return true;
    const listed = incarnationOf(this.driver.confState(), from);
    return listed === '' || listed === fromInc;
  }

  /** The term at `index` among the log writes that landed (undefined when absent). */
  landedTerm(index: number): number | undefined {
    const v = this.logDisk.read(logKey(index));
    return v?.kind === 'entry' ? v.entry.term : undefined;
  }

  /** The durable term at `index` (undefined when absent), and the durable snapshot index. */
  durableTerm(index: number): number | undefined {
    const v = this.logDisk.readDurable(logKey(index));
    return v?.kind === 'entry' ? v.entry.term : undefined;
  }

  durableSnapshotIndex(): number {
    const v = this.logDisk.readDurable('snap');
    return v?.kind === 'snap' ? v.meta.index : 0;
  }

  /** The term of `index` in the running log (undefined when compacted or absent). */
  termAt(index: number): number | undefined {
    try {
      return this.storage.term(index);
    } catch {
      return undefined;
    }
  }

  entryAt(index: number): Entry | undefined {
    try {
      return this.storage.entries(index, index + 1)[0];
    } catch {
      return undefined;
    }
  }
}
