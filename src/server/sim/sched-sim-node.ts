// One simulated scheduler node: the real RaftDriver (over the Raft simulator's log disk, network
// and timers, src/raft/sim), the real SchedulerStateMachine on an in-memory store behind the
// real AppliedResultsFeed, the real ClusterClock fed from heartbeat responses, the real
// LeaderServices started when this node becomes leader (on simulated time through the leader
// timers port), and the real WorkerService handler taking simulated worker streams.
//
// The leader runs the production feature-level raise loop (node/feature-level-raise.ts: the
// same rule and proposal as scheduler-node.ts); every simulated node runs this build, and reports
// its level with every Raft packet it sends, as the peer stream does.
//
// A crash is a process crash: timers, leader services, worker streams and unlanded log writes
// vanish; what was written to the store stays (it was in the OS page cache). A restart loads the
// log, opens the machine on the store (finishing a staged snapshot's restore), and starts a new
// driver at its applied index, as create-node.ts does.
import { pino, type Logger } from 'pino';
import { AppliedResultsFeed } from '../leader/applied-results-feed.js';
import { decodeCommand, SchedulerStateMachine, type UnsafeSwitches } from '../../fsm/index.js';
import { AttemptOutcome } from '../../gen/herald/v1/run.js';
import type { ConnectRequest, ConnectResponse, HeldRun } from '../../gen/herald/v1/worker_service.js';
import { MemoryDb } from '../../fsm/store/memory-db.js';
import { RaftDriver } from '../../raft/driver/raft-driver.js';
import { proposalBytes } from '../../raft/driver/proposal-tracker.js';
import type { ConfState, Entry, NodeId } from '../../raft/types.js';
import type { MemoryStorage } from '../../raft/core/memory-storage.js';
import type { Prng } from '../../raft/sim/prng.js';
import { SimDisk } from '../../raft/sim/sim-disk.js';
import { SimIo } from '../../raft/sim/sim-io.js';
import { loadSimLog, SimLogSink, type LogValue } from '../../raft/sim/sim-log.js';
import type { SimNetwork } from '../../raft/sim/sim-network.js';
import { SimTimers, type Owner, type SimScheduler } from '../../raft/sim/sim-scheduler.js';
import { SimTransport, type Packet } from '../../raft/sim/sim-transport.js';
import { createWorkerService } from '../api/worker-service.js';
import { ClusterClock } from '../node/cluster-clock.js';
import { armLeaderTimeFloor } from '../node/leader-time-floor.js';
import { createNodeMetrics, type NodeMetrics } from '../node/metrics.js';
import type { SchedulerConfig } from '../leader/leader-config.js';
import { LeaderServices } from '../leader/leader-services.js';
import type { LeaderNode } from '../leader/leader-term.js';
import type { WorkerServiceServer } from '../../gen/herald/v1/worker_service.js';
import { OneChunkSnapshots } from './one-chunk-snapshots.js';
import { createRaiser, ReportedFeatureLevels } from '../node/feature-level-raise.js';
import { SUPPORTED_FEATURE_LEVEL } from '../../fsm/commands/feature-levels.js';
import { proposeCommand } from '../leader/leader-term.js';
import type { SimWallClock } from './sim-wall-clock.js';
import type { SimWorkerStream } from './sim-worker-stream.js';

export interface SchedNodeParams {
  electionTicks: number;
  /** Raft tick in simulated ms (the driver's tickMs). */
  tickMs: number;
  /** The node's clock rate: simulated units per ms of its monotonic clock. */
  unitsPerMs: number;
  preVote: boolean;
  checkQuorum: boolean;
  ioMaxDelay: number;
  ioErrorRate: number;
  followerApplyWindowMs: number;
  replicateEffects: boolean;
  snapshotEntries: number;
  compactionKeepEntries: number;
  scheduler: SchedulerConfig;
  unsafe: UnsafeSwitches;
  /** fire-by-local-wall-clock (sched-mutations.ts): the services read this node's wall clock as cluster time. */
  leaderUsesLocalWallClock: boolean;
}

export interface SchedNodeHooks {
  becameLeader(node: SchedSimNode, term: number): void;
  /** The driver failed (an I/O error): the process exits; its supervisor restarts it. */
  fatal(node: SchedSimNode, err: Error): void;
  broken(node: SchedSimNode, detail: string): void;
  /** A leader-side promise broken, seen as it happens (the checks of TermWatch). */
  violation(node: SchedSimNode, kind: string, detail: string): void;
  /** Entries about to apply on this node (every committed entry reaches some node's apply). */
  applying?(entries: readonly Entry[]): void;
  /** A line for the trace (lease expiries proposed), when tracing. */
  note?(node: SchedSimNode, line: string): void;
  /** The keys of every write to this node's state machine store. */
  storeWrites?(keys: readonly string[]): void;
}

/**
 * What the simulation watches of one term's leader services, for two checks made as things
 * happen (the end-of-run checks cannot see them: the store keeps no lease grace, and a refused
 * or adopted hello leaves no record):
 * - lease-grace-denied: a lease the term adopted at takeover (token at or below the log's last
 *   index when leadership began, so not granted in this term) expired before one lease duration
 *   from the term's start, though its holder sent no hello that left the run out (the one
 *   legitimate early expiry, WorkerLeases.releaseUnheld);
 * - stale-adoption: a welcome re-attached a held run whose token this node's own applied state
 *   already knew to be superseded (a newer attempt), and the held attempt had not ended with its
 *   worker's own result (WorkerLeases.resultRecorded).
 */
interface TermWatch {
  services: LeaderServices;
  /** Monotonic ms when the services were made (at or before their takeover adoption). */
  startMono: number;
  /** The last log index when this node became leader: tokens above it were granted in this term. */
  lastIndexAtElection: number;
  /** Hellos received since: worker id and the run ids listed. */
  hellos: Array<{ workerId: string; listed: Set<string> }>;
}

const silent: Logger = pino({ level: 'silent' });

const RESULT_OUTCOMES = new Set([AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED, AttemptOutcome.ATTEMPT_OUTCOME_FAILED, AttemptOutcome.ATTEMPT_OUTCOME_TIMED_OUT]);

export class SchedSimNode {
  driver!: RaftDriver;
  fsm!: SchedulerStateMachine;
  storage!: MemoryStorage;
  clusterClock!: ClusterClock;
  up = false;
  incarnation = 0;
  readonly logDisk: SimDisk<LogValue>;
  /** The state machine's store: survives a process crash. */
  readonly store = new MemoryDb();
  private readonly staged = new Map<number, Uint8Array>();
  private owner: Owner = { alive: false };
  private services: LeaderServices | undefined;
  private workerService: WorkerServiceServer | undefined;
  private readonly streams = new Set<SimWorkerStream>();
  private transport: SimTransport | undefined;
  private io: SimIo | undefined;
  private quiet = false;
  /** One metrics registry for every incarnation (prom-client registries are not cheap). */
  private readonly metrics: NodeMetrics;
  readonly counts = { ioErrors: 0, leaderTerms: 0, storeFaults: 0 };
  /** Draws of the state machine's store faults (setStoreFaults), a stream of their own. */
  private readonly storeFaultRng: Prng;
  private watch: TermWatch | undefined;
  private lastIndexAtElection = 0;
  /** The levels peers reported to this process (gone with it, as in production). */
  private reported = new ReportedFeatureLevels();

  constructor(
    readonly id: NodeId,
    private readonly ids: readonly NodeId[],
    private readonly params: SchedNodeParams,
    private readonly sched: SimScheduler,
    private readonly net: SimNetwork<Packet>,
    readonly wall: SimWallClock,
    /** Every node's wall clock, for the heartbeat responses' clock samples. */
    private readonly wallOf: (id: NodeId) => SimWallClock,
    private readonly rng: Prng,
    private readonly hooks: SchedNodeHooks,
  ) {
    this.logDisk = new SimDisk<LogValue>({ rng: rng.fork('log-disk'), crashFaults: { unsyncedSurvival: 'all', tornRate: 0 } });
    this.metrics = createNodeMetrics({ nodeId: id }, { defaultMetrics: false });
    this.storeFaultRng = rng.fork('store-faults');
    if (hooks.storeWrites) this.store.onWrite = (keys) => hooks.storeWrites!(keys);
  }

  /**
   * I/O errors in the state machine's store at `rate` per operation (0: none): reads that fail,
   * writes that fail before landing or land and still fail. Such an error is this replica's alone,
   * so it must stop the node (the driver fails, the process restarts), never become a result.
   */
  setStoreFaults(rate: number): void {
    if (rate <= 0) {
      this.store.faults = undefined;
      return;
    }
    const rng = this.storeFaultRng;
    this.store.faults = (op) => {
      if (!rng.chance(rate)) return undefined;
      this.counts.storeFaults++;
      return op === 'write' && rng.chance(0.5) ? 'after' : 'before';
    };
  }

  get current(): Owner {
    return this.owner;
  }

  /** The leader services while this incarnation leads and they are ready. */
  leaderServices(): LeaderServices | undefined {
    return this.services;
  }

  setIoErrorRate(rate: number): void {
    this.params.ioErrorRate = rate;
    if (this.io) this.io.opts.errorRate = rate;
  }

  async start(): Promise<boolean> {
    const owner: Owner = { alive: true };
    const live = () => owner.alive;
    const p = this.params;
    const io = new SimIo(this.sched, owner, this.rng.fork(`io-${this.incarnation}`), { maxDelay: p.ioMaxDelay, errorRate: p.ioErrorRate }, this.counts);
    this.owner = owner;
    this.io = io;
    this.incarnation++;
    const bootstrap: ConfState = { voters: [...this.ids] };
    const loaded = loadSimLog(this.logDisk, bootstrap);
    const fsm = await SchedulerStateMachine.openOn(this.store.asDb(), { unsafe: p.unsafe, recordCacheBytes: 1 << 20 });
    const feed = new AppliedResultsFeed(fsm);
    const sm = new OneChunkSnapshots(feed, this.hooks.applying);
    const base = loaded.storage.firstIndex() - 1;
    if ((await fsm.appliedIndex()) < base) {
      const snap = loaded.storage.snapshot();
      const data = this.staged.get(snap.index);
      if (!data) {
        owner.alive = false;
        this.hooks.broken(this, `${this.id}: applied is behind the compaction point ${base} and no snapshot ${snap.index} is staged`);
        return false;
      }
      await sm.restore(snap, (async function* () {
        yield data;
      })());
      this.staged.clear();
    }
    if (!live()) return false;
    this.fsm = fsm;
    this.storage = loaded.storage;
    const timers = new SimTimers(this.sched, owner, p.unitsPerMs);
    const transport = new SimTransport(this.id, this.ids, this.net, timers, () => this.sched.now, () => undefined, live, '', () => this.driver.confState());
    this.transport = transport;
    const staged = this.staged;
    const random = this.rng.fork(`raft-${this.incarnation}`);
    const driver = new RaftDriver(
      {
        id: this.id,
        members: this.ids.map((id) => ({ id, peerAddress: id, clientAddress: id })),
        log: new SimLogSink(this.logDisk, io, loaded.first, loaded.last, new Set(), () => undefined),
        storage: loaded.storage,
        stateMachine: sm,
        transport,
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
        tickMs: p.tickMs,
        electionTicks: p.electionTicks,
        heartbeatTicks: 1,
        preVote: p.preVote,
        checkQuorum: p.checkQuorum,
        defaultProposalTimeoutMs: 40 * p.tickMs,
        followerApplyWindowMs: p.followerApplyWindowMs,
        replicateEffects: p.replicateEffects,
        snapshotEntries: p.snapshotEntries,
        compactionKeepEntries: p.compactionKeepEntries,
        random: () => random.next(),
      },
      await fsm.appliedIndex(),
    );
    this.driver = driver;
    const clock = new ClusterClock({
      selfId: this.id,
      voters: this.ids,
      wall: this.wall,
      monotonic: timers,
      maxSampleAgeMs: driver.electionTimeoutMs() * 2,
      floorRequired: true,
    });
    this.clusterClock = clock;
    armLeaderTimeFloor({ driver, clock, highestCommandTimeMs: () => fsm.highestCommandTimeMs, timers, live });
    const wall = this.wall;
    const node: LeaderNode = {
      clusterClock: p.leaderUsesLocalWallClock ? ({ nowMs: () => wall.nowMs() } as unknown as ClusterClock) : clock,
      driver,
      // The watch sees the bytes as they are appended (a proposal may encode itself then).
      propose: (command, o) =>
        driver.propose(
          () => {
            const bytes = proposalBytes(command);
            this.proposing(bytes, timers);
            return bytes;
          },
          { timeoutMs: o?.timeoutMs },
        ),
      proposeBackToBack: (commands, o) => driver.proposeAll(commands, o),
      readIndex: (o) => driver.readIndex(o),
    };
    const startServices = (term: number) => {
      this.stopServices();
      if (this.quiet) return;
      const s = new LeaderServices({ node, feed, config: p.scheduler, metrics: this.metrics, log: silent, term, timers });
      this.services = s;
      this.watch = { services: s, startMono: timers.nowMs(), lastIndexAtElection: this.lastIndexAtElection, hellos: [] };
      this.counts.leaderTerms++;
      const attempt = () => {
        s.start().catch(() => {
          if (this.services !== s || !s.active || !live()) return;
          timers.after(200, () => {
            if (this.services === s && driver.isLeader()) startServices(term);
          });
        });
      };
      attempt();
    };
    driver.events.on('becameLeader', ({ term }) => {
      if (!live()) return;
      this.lastIndexAtElection = driver.status().lastIndex;
      startServices(term);
      this.hooks.becameLeader(this, term);
    });
    driver.events.on('lostLeadership', () => {
      clock.reset();
      if (live()) this.stopServices();
    });
    driver.events.on('fatal', (err) => live() && this.hooks.fatal(this, err));
    const reported = new ReportedFeatureLevels();
    this.reported = reported;
    const raiser = createRaiser({
      selfId: this.id,
      isLeader: () => live() && !this.quiet && driver.isLeader(),
      clusterLevel: () => fsm.appliedFeatureLevel,
      selfLevel: () => SUPPORTED_FEATURE_LEVEL,
      conf: () => driver.confState(),
      reported: (id) => reported.get(id),
      proposeRaise: async (level) => {
        const nowMs = node.clusterClock.nowMs();
        if (nowMs === undefined) throw new Error('no cluster time yet');
        await proposeCommand(node, { type: 'setFeatureLevel', nowMs, level }, 'empty', 40 * p.tickMs);
      },
      log: silent,
    });
    // As scheduler-node.ts: every 100 ms and at once on election.
    const checkRaise = () => void raiser.check().catch(() => undefined);
    timers.every(100, checkRaise);
    driver.events.on('becameLeader', () => live() && checkRaise());
    this.workerService = createWorkerService({
      nodeId: this.id,
      leaderServices: () => (live() ? this.services : undefined),
      leader: () => {
        const l = driver.leaderChange();
        return { leaderId: l.leaderId, leaderAddress: l.leaderAddress };
      },
      accepting: live,
      heartbeatIntervalMs: p.scheduler.heartbeatIntervalMs,
      silenceTimeoutMs: p.scheduler.workerSilenceTimeoutMs ?? driver.electionTimeoutMs() * 2,
      log: silent,
      timers,
    });
    this.up = true;
    driver.start();
    return true;
  }

  /**
   * The end of a run: the leader services stop for good (nothing more is proposed), so the
   * replicas can be compared at one applied index.
   */
  quiesce(): void {
    this.quiet = true;
    this.stopServices();
  }

  /** Leadership of this term is over: the services stop and their workers are sent elsewhere. */
  private stopServices(): void {
    const s = this.services;
    this.services = undefined;
    this.watch = undefined;
    if (!s) return;
    const sessions = s.stop();
    // As scheduler-node.ts does once the new leader is known; here at once (the worker asks around).
    for (const session of sessions) session.redirect('', '');
  }

  /** A worker dials this node: the real WorkerService handler takes the stream. */
  connect(stream: SimWorkerStream): void {
    if (!this.up || !this.workerService) {
      stream.close();
      return;
    }
    this.streams.add(stream);
    stream.once('close', () => this.streams.delete(stream));
    this.tap(stream);
    this.workerService.connect(stream as never);
  }

  /** Watches a worker stream's hello and the welcome answering it (TermWatch). */
  private tap(stream: SimWorkerStream): void {
    let hello: { workerId: string; held: HeldRun[] } | undefined;
    stream.on('data', (msg: ConnectRequest) => {
      if (msg.message?.$case !== 'hello') return;
      const h = msg.message.hello;
      hello = { workerId: h.workerId, held: h.heldRuns };
      this.watch?.hellos.push({ workerId: h.workerId, listed: new Set(h.heldRuns.map((r) => r.runId)) });
    });
    const write = stream.write.bind(stream);
    stream.write = (msg: ConnectResponse) => {
      if (msg.message?.$case === 'welcome' && hello) {
        const rejected = new Set(msg.message.welcome.rejected.map((r) => `${r.runId}#${r.fencingToken}`));
        const adopted = hello.held.filter((h) => !rejected.has(`${h.runId}#${h.fencingToken}`));
        // A store read failing (injected store faults) leaves this hello unjudged.
        if (adopted.length > 0) this.checkAdopted(hello.workerId, adopted).catch(() => undefined);
      }
      return write(msg);
    };
  }

  private async checkAdopted(workerId: string, adopted: HeldRun[]): Promise<void> {
    const fsm = this.fsm;
    for (const h of adopted) {
      const run = await fsm.getRun(h.runId);
      if (!run) continue;
      const newer = run.attempts.find((a) => a.fencingToken > h.fencingToken);
      if (!newer) continue;
      const own = run.attempts.find((a) => a.fencingToken === h.fencingToken);
      const ownResult = own && own.workerId === workerId && RESULT_OUTCOMES.has(own.outcome);
      if (ownResult) continue;
      this.hooks.violation(this, 'stale-adoption', `${this.id} re-attached ${h.runId}#${h.fencingToken} for ${workerId}, though its applied state holds attempt ${newer.number} under token ${newer.fencingToken}`);
    }
  }

  /** A leader proposal: an expiry of a lease adopted at takeover must wait out the grace. */
  private proposing(command: Uint8Array, timers: SimTimers): void {
    const w = this.watch;
    if (!w || this.services !== w.services) return;
    const cmd = decodeCommand(command);
    if (cmd.type !== 'expireLeases') return;
    this.hooks.note?.(this, `${this.id} proposes lease expiry of ${cmd.items.map((i) => `${i.runId}#${i.fencingToken}`).join(' ')}`);
    const now = timers.nowMs();
    for (const item of cmd.items) {
      if (item.fencingToken > w.lastIndexAtElection) continue; // granted in this term
      const lease = w.services.leases.get(item.runId);
      if (!lease || lease.fencingToken !== item.fencingToken) continue;
      if (now >= w.startMono + lease.durationMs) continue;
      if (w.hellos.some((h) => h.workerId === lease.workerId && !h.listed.has(item.runId))) continue; // releaseUnheld
      this.hooks.violation(
        this,
        'lease-grace-denied',
        `${this.id} expires ${item.runId}#${item.fencingToken} (held by ${lease.workerId}) ${Math.round(now - w.startMono)} ms into its term, before the takeover grace of ${lease.durationMs} ms`,
      );
    }
  }

  /** The process dies: timers, services, streams and unlanded log writes vanish. */
  crash(): void {
    if (this.services) {
      this.services.stop();
      this.services = undefined;
    }
    this.owner.alive = false;
    this.up = false;
    this.logDisk.crash();
    for (const s of [...this.streams]) s.close();
    this.streams.clear();
  }

  deliver(from: NodeId, p: Packet): void {
    const driver = this.driver;
    switch (p.kind) {
      case 'raft':
        this.reported.report(from, SUPPORTED_FEATURE_LEVEL);
        // A heartbeat response carries the follower's wall clock (peer-transport.ts does this on
        // the real wire); the follower's clock is read as it is now, with no round trip.
        if (p.m.type === 'heartbeatResp' && driver.isLeader()) this.clusterClock.observe(from, this.wallOf(from).nowMs(), 0);
        driver.step([p.m]);
        return;
      case 'effects':
        driver.receiveEffects([p.effects]);
        return;
      case 'snapshotResp':
        this.transport?.settle(p.id, p.installed);
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
}
