// A simulated worker speaking the worker protocol (proto/herald/v1/worker_service.proto) to the
// real WorkerService handler over a SimWorkerStream: hello with the runs it holds, credits,
// heartbeats, assignments held until their start delay, a handler that writes the run's effect
// to the idempotent sink and reports a result, result acks, cancels, lost leases and redirects.
// Faults (driven by the simulation): a crash mid-run (everything held is forgotten; the process
// comes back empty-handed), a pause longer than a lease (nothing is sent, handlers stall; then it
// carries on and reports late), reconnects to another node, duplicate results. A rogue worker
// ignores lost leases and cancels: it keeps executing, writes its effect (the sink refuses a
// superseded token) and reports success with its old token (the server must refuse that).
import type { ConnectResponse, RunAssignment, RunResult } from '../../gen/herald/v1/worker_service.js';
import type { Prng } from '../../raft/sim/prng.js';
import type { Owner, SimScheduler } from '../../raft/sim/sim-scheduler.js';
import type { EffectSink } from './effect-sink.js';
import { MS_PER_UNIT, trueMs } from './sim-wall-clock.js';
import { SimWorkerStream } from './sim-worker-stream.js';

export const SIM_TASK_TYPE = 'sim';

export interface WorkerDial {
  /** Ids of the nodes a worker may dial. */
  readonly nodeIds: readonly string[];
  /** Connects the stream to node `id` (closes it at once when that node is down). */
  connect(id: string, stream: SimWorkerStream): void;
  /** The node's process the stream's server end belongs to. */
  ownerOf(id: string): Owner;
}

interface Held {
  token: number;
  slotMs: number;
  /** The handler wrote its effect (a crash after this re-executes it). */
  effect: boolean;
  /** Lost (lease lost, cancelled, rejected): a rogue worker carries on anyway. */
  lost: boolean;
}

export class SimWorker {
  private owner: Owner = { alive: false };
  private stream: SimWorkerStream | undefined;
  private readonly held = new Map<string, Held>();
  /** Results sent and not acknowledged yet: sent again on the next stream. */
  private readonly unacked = new Map<string, RunResult>();
  /** Results first sent when a newer token of their run had already been assigned: never to be accepted. */
  private readonly supersededReports = new Set<string>();
  private readonly sentResults = new Set<string>();
  private pausedUntil = 0;
  /** Cut off from the cluster until then (cutOff). */
  private cutUntil = 0;
  private seq = 0;
  private incarnation = 0;
  private preferred: string | undefined;
  readonly counts = { assignments: 0, results: 0, crashes: 0, pauses: 0, leaseLost: 0, reconnects: 0, duplicates: 0, cuts: 0 };

  constructor(
    readonly id: string,
    private readonly sched: SimScheduler,
    private readonly rng: Prng,
    private readonly dial: WorkerDial,
    private readonly sink: EffectSink,
    private readonly opts: { capacity: number; heartbeatMs: number; rogue: boolean; failRate: number; maxRunUnits: number; duplicateRate: number },
    private readonly log?: (line: string) => void,
  ) {}

  get up(): boolean {
    return this.owner.alive;
  }

  /**
   * Chance that an assignment is followed by a cut-off (cutOff) while its handler runs, drawn
   * from its own stream so the worker's other draws stay as they were. 0 outside the chaos.
   */
  cuts: { chance: number; rng: Prng } | undefined;

  /** Neither paused nor cut off. */
  get reachable(): boolean {
    return this.owner.alive && !this.paused() && this.sched.now >= this.cutUntil;
  }

  /** How many runs it holds now. */
  get holding(): number {
    return this.held.size;
  }

  start(): void {
    this.owner = { alive: true };
    this.incarnation++;
    const owner = this.owner;
    const every = Math.max(1, Math.round(this.opts.heartbeatMs / MS_PER_UNIT));
    this.sched.at(this.sched.now + every, owner, () => this.heartbeat(), every);
    this.connect();
  }

  /** The process dies: held runs and unacked results are gone; it comes back after `downUnits`. */
  crash(downUnits: number): void {
    if (!this.owner.alive) return;
    this.counts.crashes++;
    this.log?.(`t=${this.sched.now} worker ${this.id} CRASH (held ${this.held.size})`);
    this.owner.alive = false;
    this.stream?.close();
    this.stream = undefined;
    this.held.clear();
    this.unacked.clear();
    this.sched.at(this.sched.now + downUnits, { alive: true }, () => this.start());
  }

  /** Stops sending and running handlers for `units` (a GC pause, a stopped VM). */
  pause(units: number): void {
    if (!this.owner.alive) return;
    this.counts.pauses++;
    this.pausedUntil = Math.max(this.pausedUntil, this.sched.now + units);
    this.log?.(`t=${this.sched.now} worker ${this.id} PAUSE for ${units} units`);
  }

  /**
   * Cut off from the cluster for `units` (a network partition on the worker's side, which also
   * holds up its handlers' downstream): its stream drops, it cannot dial until the cut heals, and
   * its running handlers finish only after that. Its leases run out meanwhile; its hello on
   * reconnecting lists runs that may have been claimed again under newer tokens.
   */
  cutOff(units: number): void {
    if (!this.owner.alive || this.paused()) return;
    this.cutUntil = Math.max(this.cutUntil, this.sched.now + units);
    this.counts.cuts++;
    this.log?.(`t=${this.sched.now} worker ${this.id} CUT OFF for ${units} units (held ${this.held.size})`);
    this.stream?.close();
  }

  /** The cluster heals: a cut-off worker reaches it again now. */
  healCut(): void {
    if (!this.owner.alive || this.sched.now >= this.cutUntil) return;
    this.cutUntil = this.sched.now;
    this.sched.at(this.sched.now, this.owner, () => {
      if (!this.stream) this.connect();
    });
  }

  /** Hangs up and dials another node. */
  reconnect(): void {
    if (!this.owner.alive || this.paused()) return;
    this.stream?.close();
  }

  private paused(): boolean {
    return this.sched.now < this.pausedUntil;
  }

  /** Runs `fn` now, or when a pause is over (a paused process does nothing). */
  private whenAwake(fn: () => void): void {
    if (!this.paused()) return fn();
    this.sched.at(this.pausedUntil, this.owner, () => this.whenAwake(fn));
  }

  /** Runs `fn` now, or a little after a cut heals (the handler's downstream was cut off too). */
  private whenReachable(fn: () => void): void {
    if (this.sched.now >= this.cutUntil) return fn();
    this.sched.at(this.cutUntil + this.rng.int(5, 30), this.owner, () => this.whenReachable(fn));
  }

  private connect(): void {
    const owner = this.owner;
    if (!owner.alive) return;
    if (this.sched.now < this.cutUntil) {
      this.sched.at(this.cutUntil, owner, () => {
        if (!this.stream) this.connect();
      });
      return;
    }
    const ids = this.dial.nodeIds;
    const target = this.preferred && this.rng.chance(0.8) ? this.preferred : ids[this.rng.int(0, ids.length)]!;
    this.preferred = undefined;
    const stream = new SimWorkerStream(this.sched, this.rng, 3, this.dial.ownerOf(target), owner, {
      received: (msg) => this.whenAwake(() => this.received(stream, msg)),
      closed: () => this.whenAwake(() => this.closed(stream)),
    });
    this.stream = stream;
    this.counts.reconnects++;
    this.dial.connect(target, stream);
    const heldRuns = [...this.held].filter(([, h]) => !h.lost || this.opts.rogue).map(([runId, h]) => ({ runId, fencingToken: h.token }));
    if (heldRuns.length > 0) this.log?.(`t=${this.sched.now} worker ${this.id} hello to ${target} holding ${heldRuns.map((r) => `${r.runId}#${r.fencingToken}`).join(' ')}`);
    stream.send({
      message: {
        $case: 'hello',
        hello: { workerId: this.id, taskTypes: [SIM_TASK_TYPE], capacity: Math.max(0, this.opts.capacity - this.held.size), heldRuns, version: 'sim', batches: false },
      },
    });
  }

  private closed(stream: SimWorkerStream): void {
    if (this.stream !== stream || !this.owner.alive) return;
    this.stream = undefined;
    this.sched.at(this.sched.now + this.rng.int(2, 20), this.owner, () => this.connect());
  }

  private send(msg: Parameters<SimWorkerStream['send']>[0]): void {
    if (!this.paused()) this.stream?.send(msg);
  }

  private heartbeat(): void {
    if (this.paused() || !this.stream) return;
    // The rogue's heartbeats renew nothing (a client whose renewal loop died): its long runs
    // lose their leases while it carries on, and it reports them all the same.
    const runs = this.opts.rogue ? [] : [...this.held].filter(([, h]) => !h.lost).map(([runId, h]) => ({ runId, fencingToken: h.token }));
    this.send({ message: { $case: 'heartbeat', heartbeat: { runs, seq: ++this.seq } } });
  }

  private received(stream: SimWorkerStream, msg: ConnectResponse): void {
    if (this.stream !== stream) return;
    const m = msg.message;
    switch (m?.$case) {
      case 'welcome':
        for (const r of m.welcome.rejected) this.lose(r.runId, r.fencingToken, 'rejected');
        // Results the last stream did not see acknowledged go again (late, maybe duplicate).
        for (const r of this.unacked.values()) this.sendResult(r);
        return;
      case 'assignment':
        this.assigned(m.assignment);
        return;
      case 'assignments':
        for (const a of m.assignments.assignments) this.assigned(a);
        return;
      case 'cancel':
        this.lose(m.cancel.runId, m.cancel.fencingToken, 'cancelled');
        return;
      case 'leaseLost':
        this.counts.leaseLost++;
        this.lose(m.leaseLost.runId, m.leaseLost.fencingToken, 'lease lost');
        return;
      case 'resultAck':
        this.acked(m.resultAck.runId, m.resultAck.fencingToken, m.resultAck.accepted);
        return;
      case 'resultAcks':
        for (const a of m.resultAcks.acks) this.acked(a.runId, a.fencingToken, a.accepted);
        return;
      case 'redirect':
        this.preferred = m.redirect.leaderId || undefined;
        stream.close();
        return;
      default:
        return;
    }
  }

  /** Sends a result, noting whether its token was already superseded when it left. */
  private sendResult(result: RunResult): void {
    if (this.paused() || !this.stream) return;
    this.log?.(`t=${this.sched.now} worker ${this.id} reports ${result.runId}#${result.fencingToken} ${result.outcome?.$case} (newest assigned token ${this.sink.maxAssigned(result.runId)})`);
    // Judged at a result's first sending: a re-send of a result that was on time may be
    // acknowledged as accepted again (its attempt already ended with it).
    const key = `${result.runId}#${result.fencingToken}`;
    if (!this.sentResults.has(key)) {
      this.sentResults.add(key);
      if (this.sink.maxAssigned(result.runId) > result.fencingToken) {
        this.supersededReports.add(key);
        this.sink.supersededReports++;
      }
    }
    this.send({ message: { $case: 'result', result } });
  }

  private acked(runId: string, token: number, accepted: boolean): void {
    this.log?.(`t=${this.sched.now} worker ${this.id} ack ${runId}#${token} ${accepted ? 'accepted' : 'refused'}`);
    if (accepted && this.supersededReports.has(`${runId}#${token}`)) this.sink.staleAccepted.push(`${runId}#${token} from ${this.id}`);
    const r = this.unacked.get(runId);
    if (r && r.fencingToken === token) this.unacked.delete(runId);
  }

  private lose(runId: string, token: number, why: string): void {
    const h = this.held.get(runId);
    if (!h || h.token !== token) return;
    this.log?.(`t=${this.sched.now} worker ${this.id} ${runId}#${token} ${why}${this.opts.rogue ? ' (rogue: carries on)' : ''}`);
    if (this.opts.rogue) {
      h.lost = true;
      return;
    }
    this.held.delete(runId);
    this.send({ message: { $case: 'credits', credits: { credits: 1 } } });
  }

  private assigned(a: RunAssignment): void {
    this.counts.assignments++;
    const owner = this.owner;
    const token = a.fencingToken;
    const prev = this.held.get(a.runId);
    if (prev && prev.token >= token) return;
    this.log?.(`t=${this.sched.now} worker ${this.id} assigned ${a.runId}#${token} (start in ${a.startDelayMs} ms)`);
    this.held.set(a.runId, { token, slotMs: a.slotUnixMs, effect: false, lost: false });
    this.sink.assigned(a.runId, token);
    const startAt = this.sched.now + Math.ceil(Math.max(0, a.startDelayMs) / MS_PER_UNIT);
    const cuts = this.cuts;
    if (cuts && cuts.chance > 0 && cuts.rng.chance(cuts.chance)) {
      // Long enough to lose the lease, and mostly short enough to come back while the run's next
      // attempt (after the expiry sweep, the retry backoff and a dispatch) still holds it.
      const units = Math.ceil(a.leaseDurationMs / MS_PER_UNIT) + cuts.rng.int(15, 70);
      this.sched.at(startAt + 1, owner, () => this.cutOff(units));
    }
    this.sched.at(startAt, owner, () =>
      this.whenAwake(() => {
        const h = this.held.get(a.runId);
        if (!h || h.token !== token || (h.lost && !this.opts.rogue)) return;
        this.sink.started(a.runId, token, trueMs(this.sched), a.scheduledUnixMs);
        const runFor = this.rng.int(1, this.opts.maxRunUnits + 1);
        this.sched.at(this.sched.now + runFor, owner, () => this.whenAwake(() => this.whenReachable(() => this.finish(a.runId, token))));
      }),
    );
  }

  private finish(runId: string, token: number): void {
    const h = this.held.get(runId);
    if (!h || h.token !== token) return;
    let result: RunResult;
    const success: RunResult = { runId, fencingToken: token, outcome: { $case: 'success', success: { output: Buffer.alloc(0) } } };
    if (!this.opts.rogue && this.rng.chance(this.opts.failRate)) {
      result = { runId, fencingToken: token, outcome: { $case: 'failure', failure: { retryable: true, errorType: 'SimFailure', message: 'simulated failure' } } };
    } else {
      // A rogue writes and claims success whatever happened to its lease (the sink refuses a
      // superseded token's effect; the server must refuse its report).
      const ok = this.sink.write(runId, token, this.id, trueMs(this.sched));
      h.effect = ok;
      if (ok) this.sink.reportedSuccess(runId, token);
      result =
        ok || this.opts.rogue
          ? success
          : { runId, fencingToken: token, outcome: { $case: 'failure', failure: { retryable: false, errorType: 'StaleEffect', message: 'the sink refused a superseded token' } } };
    }
    this.held.delete(runId);
    this.counts.results++;
    this.unacked.set(runId, result);
    this.sendResult(result);
    if (this.rng.chance(this.opts.duplicateRate)) {
      this.counts.duplicates++;
      this.sendResult(result);
    }
    this.send({ message: { $case: 'credits', credits: { credits: 1 } } });
  }
}
