// The Worker library: runs user handlers for the runs the leader assigns over one long-lived
// WorkerService.Connect stream (DESIGN §3 steps 3–5).
//
// The worker's promises to the cluster, and where each is kept:
// - Never more runs executing than `concurrency`: credits are granted only for free slots
//   (hello capacity + credits ≤ free slots), and a result is sent before the credit that its
//   freed slot allows, so the server's own count never exceeds concurrency either.
// - A held run keeps its lease: every held run is listed in periodic heartbeats, including runs
//   whose result awaits its ack, and in the hello of every new stream (re-attach).
// - A run whose lease is gone (lease_lost, rejected in welcome, cancelled) is aborted through its
//   AbortSignal and its outcome is never reported.
// - A run is not executed on a lease the worker cannot have kept: with no contact to the cluster
//   for two lease durations (one lease, plus the grace a new leader gives after a failover), the
//   lease is presumed lost and the run is aborted as 'lease-lost'. Finished runs awaiting an ack
//   keep their result for the next stream; the server decides whether it still counts.
// - A result is delivered at least once: it is re-sent on each new stream until a result_ack
//   (accepted or not) or lease loss settles it. Results carry the fencing token, so a duplicate
//   or stale one is rejected by the server rather than applied twice.
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { ChannelOptions } from '@grpc/grpc-js';
import type {
  ConnectRequest,
  ConnectResponse,
  HeldRun,
  RunAssignment,
  RunFailure,
  ResultAck,
  RunResult,
  WorkerWelcome,
} from '../../gen/herald/v1/worker_service.js';
import { ConnectionPool, type ConnectionOptions } from '../connection-pool.js';
import { HandlerError, type AbortCause } from './handler-errors.js';
import { childLogger, silentLogger, type ClientLogger } from '../logger.js';
import { Backoff, type RetryOptions } from '../retry-policy.js';
import { HandlerContext, encodeOutput, type Handler, type HandlerOutput, type RunContextOwner } from './run-context.js';
import { RunAbort } from './run-abort.js';
import { WorkerStream } from './worker-stream.js';

export interface WorkerOptions extends ConnectionOptions {
  /** Client addresses (host:port) of some or all cluster nodes. */
  endpoints: string[];
  /** Handlers by task type; the worker subscribes to exactly these task types. */
  handlers: Record<string, Handler>;
  /** Stable worker id; default `<host>-<pid>-<random>`. */
  workerId?: string;
  /** Runs executed at once; default 1. */
  concurrency?: number;
  /** Heartbeat period until the server's welcome says otherwise; default 5000 ms. */
  heartbeatIntervalMs?: number;
  /** Reconnect backoff; defaults 100 ms growing to 5 s. */
  reconnect?: { initialBackoffMs?: number; maxBackoffMs?: number };
  /** How long shutdown() waits for in-flight runs before aborting them; default 30 s. */
  shutdownGraceMs?: number;
  /** After aborting, how long shutdown() waits for handlers to settle and results to be acked; default 2 s. */
  abortWaitMs?: number;
  /** Free-form version sent in hello, for operators. */
  version?: string;
  logger?: ClientLogger;
}

export type WorkerState = 'new' | 'running' | 'draining' | 'stopped';

/** waiting: claimed ahead of its instant (start_delay_ms), held until then; queued: waiting for a free slot. */
type Phase = 'waiting' | 'queued' | 'executing' | 'reporting';

/** A run whose lease this worker holds. */
interface HeldRunState {
  assignment: RunAssignment;
  /** Monotonic time (performance.now) of the last sign that the cluster still knows our lease. */
  lastContact: number;
  abort: RunAbort;
  phase: Phase;
  result: RunResult | undefined;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Events: 'connected' (address, nodeId), 'disconnected' (address, error?), 'stopped', and
 * 'settled' when the cluster acknowledged a run's result: accepted (the outcome is committed) or
 * not (reason says why, e.g. the lease had moved on). A run is settled at most once per attempt.
 */
export interface WorkerEvents {
  connected: [address: string, nodeId: string];
  disconnected: [address: string, error: Error | undefined];
  stopped: [];
  settled: [settlement: RunSettlement];
}

export interface RunSettlement {
  runId: string;
  fencingToken: number;
  accepted: boolean;
  /** Why the result was not accepted ('' when it was). */
  reason: string;
}

const MAX_MESSAGE_CHARS = 4_096;
/** A start delay is at most this (the server's lead is ≤ 1 s; a bogus one must not park a run for long). */
const MAX_START_DELAY_MS = 60_000;
/** The lease duration the server applies when a job does not set one (JobSpec.lease_duration_ms). */
const DEFAULT_LEASE_MS = 30_000;
const MAX_OUTPUT_BYTES = 64 * 1024;
/** A WorkerBatch is cut at about this many bytes of outputs and messages. */
const MAX_BATCH_BYTES = 1 << 20;
/** The outcome of a handler that returned nothing: shared, as outcomes are only read (encoded). */
const EMPTY_SUCCESS: RunResult['outcome'] = { $case: 'success', success: { output: encodeOutput(undefined) } };

function isPromiseLike(v: HandlerOutput | Promise<HandlerOutput>): v is PromiseLike<HandlerOutput> {
  return typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';
}

function defaultWorkerId(): string {
  const host = hostname().replace(/[^A-Za-z0-9._:-]/g, '-').slice(0, 80) || 'worker';
  return `${host}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

function heldRun(a: RunAssignment): HeldRun {
  return { runId: a.runId, fencingToken: a.fencingToken };
}

/** Maps whatever a handler threw (and why its signal fired) to a RunFailure. */
export function failureOf(err: unknown, abortReason: AbortCause | undefined): RunFailure {
  const message = (err instanceof Error ? err.message : String(err)).slice(0, MAX_MESSAGE_CHARS);
  if (abortReason === 'timeout') return { retryable: true, errorType: 'ExecutionTimeout', message };
  if (err instanceof HandlerError) return { retryable: err.retryable, errorType: err.type ?? err.name, message };
  if (abortReason === 'shutdown') return { retryable: true, errorType: 'WorkerShutdown', message };
  if (err instanceof Error) return { retryable: true, errorType: err.name || 'Error', message };
  return { retryable: true, errorType: 'Error', message };
}

export class Worker extends EventEmitter<WorkerEvents> {
  readonly workerId: string;
  private readonly endpoints: string[];
  private readonly handlers: Record<string, Handler>;
  private readonly concurrency: number;
  private readonly shutdownGraceMs: number;
  private readonly abortWaitMs: number;
  private readonly version: string;
  private readonly logger: ClientLogger;
  private readonly pool: ConnectionPool;
  private readonly backoff: Backoff;
  /**
   * Retries while the cluster answers but has no leader for us (a failover: followers point at
   * the dead leader, then know none until the election ends): short, growing slowly to 0.5 s. The
   * reconnect backoff, growing to 5 s, is for when no node answers. A worker that backed off like
   * that through a failover came back seconds after the new leader (failover bench: fire gap
   * 2.4–4.7 s with a 1 s election timeout).
   */
  private readonly electionBackoff: Backoff;
  /** A node redirected us since the last welcome: the cluster is up, a leader is being found. */
  private clusterAnswered = false;

  private stateValue: WorkerState = 'new';
  private heartbeatIntervalMs: number;
  private readonly held = new Map<string, HeldRunState>();
  private readonly queue: string[] = [];
  /** Handlers not yet settled, including ones whose run was dropped but which ignore the signal. */
  private running = 0;
  /** Runs in phase 'waiting': each holds the credit it came with until it starts. */
  private waiting = 0;

  private stream: WorkerStream | undefined;
  private welcomed = false;
  /** Credits granted on the current stream and not yet used by an assignment. */
  private outstanding = 0;
  /** The server of the current stream takes WorkerBatch messages (said so in its welcome). */
  private serverBatches = false;
  /**
   * Results and credits of the current turn of the event loop, sent as one WorkerBatch: a message
   * per result and per credit cost the worker and the leader more than the results themselves.
   */
  private outbox: { stream: WorkerStream; results: RunResult[]; credits: number } | undefined;
  private leaderHint: string | undefined;
  private redirectsSinceWelcome = 0;
  private cursor = 0;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private watchdogTimer: NodeJS.Timeout | undefined;
  private idleWaiters: Array<() => void> = [];
  private stopping: Promise<void> | undefined;
  private cutGrace: (() => void) | undefined;
  /** Runs whose handler starts in the next microtask (execute). */
  private starting: HeldRunState[] = [];
  /** What handler contexts call back into; one for all runs, so a run costs no closures. */
  private readonly contextOwner: RunContextOwner = {
    runLogger: (a) => this.runLogger(a),
    heartbeat: (a) => this.heartbeatRun(a),
  };

  constructor(options: WorkerOptions) {
    super();
    if (!Array.isArray(options.endpoints) || options.endpoints.length === 0) {
      throw new TypeError('Worker: `endpoints` must list at least one host:port');
    }
    const taskTypes = Object.keys(options.handlers ?? {});
    if (taskTypes.length === 0) throw new TypeError('Worker: `handlers` must map at least one task type to a function');
    for (const t of taskTypes) {
      if (typeof options.handlers[t] !== 'function') throw new TypeError(`Worker: handler for "${t}" is not a function`);
    }
    const concurrency = options.concurrency ?? 1;
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new TypeError('Worker: `concurrency` must be a whole number >= 1');
    this.workerId = options.workerId ?? defaultWorkerId();
    if (!/^[A-Za-z0-9._:-]{1,128}$/.test(this.workerId)) {
      throw new TypeError(`Worker: workerId "${this.workerId}" must be 1–128 characters of [A-Za-z0-9._:-]`);
    }
    this.endpoints = [...options.endpoints];
    this.handlers = { ...options.handlers };
    this.concurrency = concurrency;
    this.heartbeatIntervalMs = options.heartbeatIntervalMs ?? 5_000;
    this.shutdownGraceMs = options.shutdownGraceMs ?? 30_000;
    this.abortWaitMs = options.abortWaitMs ?? 2_000;
    this.version = options.version ?? '';
    this.logger = childLogger(options.logger ?? silentLogger, { workerId: this.workerId });
    // Long-lived stream: keepalive pings detect a silently dead leader (no heartbeat replies
    // exist in the protocol), and the server side is configured to accept them (issue 7).
    const channelOptions: ChannelOptions = {
      'grpc.keepalive_time_ms': 10_000,
      'grpc.keepalive_timeout_ms': 5_000,
      ...options.channelOptions,
    };
    this.pool = new ConnectionPool({ ...options, channelOptions });
    const retry: RetryOptions = {
      maxAttempts: Infinity,
      initialBackoffMs: options.reconnect?.initialBackoffMs ?? 100,
      maxBackoffMs: options.reconnect?.maxBackoffMs ?? 5_000,
    };
    this.backoff = new Backoff(retry);
    this.electionBackoff = new Backoff({ maxAttempts: Infinity, initialBackoffMs: retry.initialBackoffMs, maxBackoffMs: Math.max(retry.initialBackoffMs, 500), multiplier: 1.5 });
  }

  get state(): WorkerState {
    return this.stateValue;
  }

  /** True while a stream is open and welcomed. */
  get connected(): boolean {
    return this.welcomed && this.stream !== undefined && !this.stream.closed;
  }

  /** Runs this worker holds (executing, queued, or awaiting the ack of their result). */
  get heldRuns(): HeldRun[] {
    return [...this.held.values()].map((h) => heldRun(h.assignment));
  }

  /** Handlers currently executing. */
  get activeRuns(): number {
    return this.running;
  }

  /** Connects and starts taking runs. Returns at once; (re)connection continues in the background. */
  start(): void {
    if (this.stateValue !== 'new') throw new Error(`Worker: start() called in state ${this.stateValue}`);
    this.stateValue = 'running';
    this.logger.info({ endpoints: this.endpoints, concurrency: this.concurrency }, 'worker starting');
    this.connect();
  }

  /** Resolves once a stream is welcomed (at once if it is); rejects after `timeoutMs` or on stop. */
  waitUntilConnected(timeoutMs = 30_000): Promise<void> {
    if (this.connected) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const cleanup = (): void => {
        clearTimeout(timer);
        this.off('connected', onConnected);
        this.off('stopped', onStopped);
      };
      const onConnected = (): void => {
        cleanup();
        resolve();
      };
      const onStopped = (): void => {
        cleanup();
        reject(new Error('Worker stopped before it connected'));
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`Worker: not connected to a leader within ${timeoutMs}ms (endpoints: ${this.endpoints.join(', ')})`));
      }, timeoutMs);
      this.on('connected', onConnected);
      this.on('stopped', onStopped);
    });
  }

  /**
   * Stops taking new runs and resolves once every held run has finished and its result was
   * acknowledged (or its lease lost), or the worker stopped. Runs keep heartbeating meanwhile.
   */
  async drain(): Promise<void> {
    if (this.stateValue === 'running') {
      this.stateValue = 'draining';
      this.logger.info({ held: this.held.size }, 'worker draining');
      this.outstanding = 0;
      this.stream?.send({ message: { $case: 'drain', drain: {} } });
      // Over-assigned runs waiting for a slot were claimed for us; they still run (the claim is
      // committed), so the queue is left alone.
    }
    await this.idle();
  }

  /**
   * Drains, then after `graceMs` aborts what is still running (signal reason 'shutdown'), waits
   * briefly for those handlers to settle and report, and closes the connection. Idempotent.
   */
  shutdown(options: { graceMs?: number } = {}): Promise<void> {
    const graceMs = options.graceMs ?? this.shutdownGraceMs;
    if (this.stopping) {
      // A later call with a shorter grace shortens the one in progress (never lengthens it).
      const cut = this.cutGrace;
      if (cut) setTimeout(cut, graceMs).unref();
      return this.stopping;
    }
    this.stopping = this.doShutdown(graceMs);
    return this.stopping;
  }

  /**
   * Starts the worker and installs signal handlers: the first SIGTERM/SIGINT drains and shuts
   * down gracefully, a second one aborts in-flight runs at once. Resolves when stopped.
   */
  async run(options: { signals?: NodeJS.Signals[]; process?: Pick<NodeJS.Process, 'on' | 'off'> } = {}): Promise<void> {
    const proc = options.process ?? process;
    const signals = options.signals ?? ['SIGTERM', 'SIGINT'];
    let received = 0;
    const onSignal = (sig: NodeJS.Signals): void => {
      received += 1;
      if (received === 1) {
        this.logger.info({ signal: sig }, 'signal received: draining (send again to force)');
        void this.shutdown();
      } else {
        this.logger.warn({ signal: sig }, 'second signal: aborting in-flight runs');
        this.force();
      }
    };
    for (const s of signals) proc.on(s, onSignal);
    try {
      if (this.stateValue === 'new') this.start();
      await new Promise<void>((resolve) => {
        if (this.stateValue === 'stopped') resolve();
        else this.once('stopped', () => resolve());
      });
    } finally {
      for (const s of signals) proc.off(s, onSignal);
    }
  }

  /** Cuts a shutdown's grace period short (aborting in-flight runs now); starts one if needed. */
  force(): void {
    void this.shutdown();
    this.cutGrace?.();
  }

  // ---- lifecycle internals ---------------------------------------------------------------

  private async doShutdown(graceMs: number): Promise<void> {
    if (this.stateValue === 'new') {
      this.stateValue = 'stopped';
      this.pool.close();
      this.emit('stopped');
      return;
    }
    const drained = this.drain();
    const cut = new Promise<void>((resolve) => (this.cutGrace = resolve));
    if (!(await this.within(Promise.race([drained, cut]), graceMs))) {
      this.logger.warn({ held: this.held.size, running: this.running }, 'shutdown grace over: aborting in-flight runs');
    }
    if (!this.isIdle()) {
      for (const [, h] of this.held) {
        if (h.phase !== 'reporting') this.abortRun(h, 'shutdown', 'worker shutting down');
      }
      // Queued and waiting runs never started: leave them to lease expiry rather than spend an attempt.
      for (const id of this.queue.splice(0)) this.dropRun(id);
      for (const [id, h] of [...this.held]) if (h.phase === 'waiting') this.dropRun(id);
      await this.within(this.idle(), this.abortWaitMs);
    }
    this.stateValue = 'stopped';
    clearTimeout(this.reconnectTimer);
    this.stopHeartbeats();
    this.stopWatchdog();
    this.flushOutbox();
    const stream = this.stream;
    this.stream = undefined;
    this.welcomed = false;
    if (stream) await stream.end(500);
    this.pool.close();
    this.logger.info({ abandoned: this.held.size }, 'worker stopped');
    // Runs still held are abandoned (their leases expire on the server); nobody waits on them.
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
    this.emit('stopped');
  }

  /** Resolves true if `p` settles within `ms`. */
  private async within(p: Promise<unknown>, ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
    const result = await Promise.race([p.then(() => true as const), timeout]);
    clearTimeout(timer);
    return result;
  }

  private isIdle(): boolean {
    return this.held.size === 0 && this.running === 0;
  }

  private idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private checkIdle(): void {
    if (!this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  // ---- connection ------------------------------------------------------------------------

  private nextAddress(): string {
    return this.leaderHint ?? this.endpoints[this.cursor % this.endpoints.length]!;
  }

  private connect(): void {
    if (this.stateValue === 'stopped' || this.stream) return;
    const address = this.nextAddress();
    let stream: WorkerStream;
    try {
      stream = new WorkerStream(address, this.pool.workers(address), {
        onMessage: (msg) => this.onMessage(stream, msg),
        onClose: (err) => this.onClose(stream, err),
      });
    } catch (err) {
      this.logger.warn({ address, err: String(err) }, 'could not open worker stream');
      this.scheduleReconnect(false);
      return;
    }
    this.stream = stream;
    this.welcomed = false;
    this.serverBatches = false;
    this.outbox = undefined;
    const free = this.stateValue === 'running' ? this.freeSlots() : 0;
    this.outstanding = free;
    this.logger.debug({ address, held: this.held.size, capacity: free }, 'worker stream opening');
    stream.send({
      message: {
        $case: 'hello',
        hello: {
          workerId: this.workerId,
          taskTypes: Object.keys(this.handlers),
          capacity: free,
          heldRuns: this.heldRuns,
          version: this.version,
          batches: true,
        },
      },
    });
    if (this.stateValue === 'draining') stream.send({ message: { $case: 'drain', drain: {} } });
  }

  private onClose(stream: WorkerStream, err: Error | undefined): void {
    if (stream !== this.stream) return; // an old stream we replaced or closed on purpose
    const wasWelcomed = this.welcomed;
    this.stream = undefined;
    this.welcomed = false;
    this.outstanding = 0;
    this.stopHeartbeats();
    this.logger.warn({ address: stream.address, err: err?.message }, 'worker stream closed');
    this.emit('disconnected', stream.address, err);
    this.startWatchdog();
    if (!wasWelcomed) {
      // The node did not take us in: it is down or unreachable. Stop preferring it. When a live
      // follower sent us there (to a dead leader it still believes in), the cluster is still up:
      // retries stay short. A partition between this worker and a live leader loops the same way,
      // at most two streams a second.
      if (this.leaderHint === stream.address) this.leaderHint = undefined;
      else {
        this.cursor += 1;
        this.clusterAnswered = false;
      }
    }
    this.scheduleReconnect(false);
  }

  private scheduleReconnect(immediately: boolean): void {
    if (this.stateValue === 'stopped' || this.reconnectTimer) return;
    const delay = immediately ? 0 : (this.clusterAnswered ? this.electionBackoff : this.backoff).next();
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.connect();
    }, delay);
  }

  /** Leaves the current stream on purpose (redirect) and connects to `address` next. */
  private moveTo(address: string | undefined, immediately: boolean): void {
    const stream = this.stream;
    this.stream = undefined;
    this.welcomed = false;
    this.outstanding = 0;
    this.stopHeartbeats();
    stream?.cancel();
    this.startWatchdog();
    if (address) {
      this.leaderHint = address;
      this.scheduleReconnect(immediately);
    } else {
      this.leaderHint = undefined;
      this.cursor += 1;
      this.scheduleReconnect(false);
    }
  }

  // ---- messages from the server ----------------------------------------------------------

  private onMessage(stream: WorkerStream, msg: ConnectResponse): void {
    if (stream !== this.stream) return;
    // Any message on a welcomed stream shows the leader is alive and holds our leases (it sends
    // lease_lost otherwise); the welcome itself refreshes the runs it did not reject.
    if (this.welcomed) this.touchAll();
    const m = msg.message;
    switch (m?.$case) {
      case 'welcome':
        return this.onWelcome(stream, m.welcome);
      case 'assignment':
        return this.onAssignment(m.assignment);
      case 'assignments':
        for (const a of m.assignments.assignments) this.onAssignment(a);
        return;
      case 'cancel': {
        const h = this.held.get(m.cancel.runId);
        if (!h || (m.cancel.fencingToken !== 0 && m.cancel.fencingToken !== h.assignment.fencingToken)) return;
        // A finished run's result is already on its way; the server settles it with an ack.
        if (h.phase === 'reporting') return;
        this.logger.info({ runId: m.cancel.runId, reason: m.cancel.reason }, 'run cancelled');
        this.abortRun(h, 'cancelled', m.cancel.reason || 'run cancelled');
        this.dropRun(m.cancel.runId);
        return;
      }
      case 'leaseLost': {
        const h = this.held.get(m.leaseLost.runId);
        if (!h || (m.leaseLost.fencingToken !== 0 && m.leaseLost.fencingToken !== h.assignment.fencingToken)) return;
        this.logger.warn({ runId: m.leaseLost.runId, reason: m.leaseLost.reason }, 'lease lost');
        this.abortRun(h, 'lease-lost', m.leaseLost.reason || 'lease lost');
        this.dropRun(m.leaseLost.runId);
        return;
      }
      case 'redirect': {
        const to = m.redirect.leaderAddress;
        this.logger.info({ from: stream.address, to }, 'redirected to leader');
        // Follow at once only the first hop after a welcome: followers with stale views could
        // otherwise bounce the worker between them at full speed during an election.
        const first = this.redirectsSinceWelcome === 0;
        this.redirectsSinceWelcome += 1;
        this.clusterAnswered = true;
        return this.moveTo(to !== '' && to !== stream.address ? to : undefined, first);
      }
      case 'resultAck':
        return this.onResultAck(m.resultAck);
      case 'resultAcks':
        for (const ack of m.resultAcks.acks) this.onResultAck(ack);
        return;
      default:
        this.logger.debug({ msg }, 'ignoring unknown message from server');
    }
  }

  private onResultAck(ack: ResultAck): void {
    const h = this.held.get(ack.runId);
    if (!h || h.assignment.fencingToken !== ack.fencingToken || h.phase !== 'reporting') return;
    if (!ack.accepted) this.logger.warn({ runId: ack.runId, reason: ack.reason }, 'result not accepted');
    this.dropRun(ack.runId);
    if (this.listenerCount('settled') > 0) this.emit('settled', { runId: ack.runId, fencingToken: ack.fencingToken, accepted: ack.accepted, reason: ack.reason });
  }

  private onWelcome(stream: WorkerStream, welcome: WorkerWelcome): void {
    this.welcomed = true;
    this.serverBatches = welcome.batches;
    this.backoff.reset();
    this.electionBackoff.reset();
    this.clusterAnswered = false;
    this.redirectsSinceWelcome = 0;
    // Whoever welcomed us is the leader (followers redirect): come back here after a drop.
    this.leaderHint = stream.address;
    if (welcome.heartbeatIntervalMs > 0) this.heartbeatIntervalMs = welcome.heartbeatIntervalMs;
    for (const r of welcome.rejected) {
      const h = this.held.get(r.runId);
      if (!h || h.assignment.fencingToken !== r.fencingToken) continue;
      this.logger.warn({ runId: r.runId }, 'held run rejected on re-attach');
      this.abortRun(h, 'lease-lost', 'run not re-attached: lease no longer held');
      this.dropRun(r.runId);
    }
    this.touchAll();
    this.stopWatchdog();
    this.logger.info({ address: stream.address, nodeId: welcome.nodeId, adopted: welcome.adopted.length }, 'worker connected');
    this.emit('connected', stream.address, welcome.nodeId);
    this.startHeartbeats();
    // Results that did not get an ack on an earlier stream.
    for (const h of this.held.values()) if (h.result) stream.send({ message: { $case: 'result', result: h.result } });
    this.topUp();
  }

  private onAssignment(a: RunAssignment): void {
    this.outstanding = Math.max(0, this.outstanding - 1);
    const existing = this.held.get(a.runId);
    if (existing) {
      if (existing.assignment.fencingToken === a.fencingToken) return; // a duplicate delivery
      // A newer claim of a run we still hold: our lease is gone by definition.
      this.abortRun(existing, 'lease-lost', 'run claimed again with a newer fencing token');
      this.dropRun(a.runId);
    }
    const h: HeldRunState = {
      assignment: a,
      lastContact: performance.now(),
      abort: new RunAbort(),
      phase: 'queued',
      result: undefined,
      timer: undefined,
    };
    this.held.set(a.runId, h);
    if (!this.handlers[a.taskType]) {
      this.finishRun(h, {
        $case: 'failure',
        failure: { retryable: true, errorType: 'NoHandler', message: `no handler for task type "${a.taskType}" on worker ${this.workerId}` },
      });
      this.topUp();
      return;
    }
    if (a.startDelayMs > 0) {
      // Handed out ahead of its instant: held (and heartbeated) until then, on the monotonic clock.
      h.phase = 'waiting';
      this.waiting += 1;
      h.timer = setTimeout(() => this.startTimeReached(h), Math.min(a.startDelayMs, MAX_START_DELAY_MS));
      return;
    }
    this.admit(h);
  }

  private startTimeReached(h: HeldRunState): void {
    h.timer = undefined;
    this.waiting -= 1;
    if (this.held.get(h.assignment.runId) !== h) return;
    h.phase = 'queued';
    this.admit(h);
  }

  /** Starts the run, or queues it when every slot is busy. */
  private admit(h: HeldRunState): void {
    if (this.running + this.queue.length >= this.concurrency) {
      // More assignments than credits: keep the lease (heartbeats) and run it when a slot frees.
      this.logger.warn({ runId: h.assignment.runId }, 'assignment beyond capacity; queued');
      this.queue.push(h.assignment.runId);
      return;
    }
    this.execute(h);
  }

  // ---- execution -------------------------------------------------------------------------

  private freeSlots(): number {
    return Math.max(0, this.concurrency - this.running - this.queue.length - this.waiting);
  }

  /** Grants credits for free slots not yet granted (never beyond concurrency). */
  private topUp(): void {
    if (this.stateValue !== 'running' || !this.welcomed || !this.stream) return;
    const want = this.freeSlots() - this.outstanding;
    if (want <= 0) return;
    if (this.serverBatches) {
      this.outboxOf(this.stream).credits += want;
      this.outstanding += want;
    } else if (this.stream.send({ message: { $case: 'credits', credits: { credits: want } } })) {
      this.outstanding += want;
    }
  }

  /** The outbox of `stream`, flushed at the end of this turn of the event loop. */
  private outboxOf(stream: WorkerStream): { results: RunResult[]; credits: number } {
    if (this.outbox?.stream !== stream) {
      this.outbox = { stream, results: [], credits: 0 };
      setImmediate(() => this.flushOutbox());
    }
    return this.outbox;
  }

  private flushOutbox(): void {
    const o = this.outbox;
    this.outbox = undefined;
    // A stream replaced meanwhile got its own hello (capacity) and re-sends held results itself.
    if (!o || o.stream !== this.stream || !this.welcomed) return;
    // Results first (the credits are the slots they freed); big outputs split the batch.
    let from = 0;
    let bytes = 0;
    for (let i = 0; i < o.results.length; i++) {
      const r = o.results[i]!.outcome;
      bytes += 64 + (r?.$case === 'success' ? r.success.output.length : (r?.failure.message.length ?? 0));
      if (bytes < MAX_BATCH_BYTES) continue;
      o.stream.send({ message: { $case: 'batch', batch: { results: o.results.slice(from, i + 1), credits: 0 } } });
      from = i + 1;
      bytes = 0;
    }
    const rest = o.results.slice(from);
    if (rest.length > 0 || o.credits > 0) o.stream.send({ message: { $case: 'batch', batch: { results: rest, credits: o.credits } } });
  }

  private execute(h: HeldRunState): void {
    const a = h.assignment;
    h.phase = 'executing';
    this.running += 1;
    if (a.executionTimeoutMs > 0) {
      h.timer = setTimeout(() => this.abortRun(h, 'timeout', `execution timeout of ${a.executionTimeoutMs}ms exceeded`), a.executionTimeoutMs);
    }
    this.logger.debug({ runId: a.runId, attempt: a.attempt, taskType: a.taskType }, 'run started');
    // Never inside the caller's turn: the handlers of this turn start together in one microtask
    // (an async function and an await per run cost more than running a no-op handler).
    this.starting.push(h);
    if (this.starting.length === 1) queueMicrotask(this.startHandlers);
  }

  private readonly startHandlers = (): void => {
    const starting = this.starting;
    this.starting = [];
    for (const h of starting) {
      try {
        this.runHandler(h);
      } catch (err) {
        // One run's failed bookkeeping must not keep the others of its turn from starting.
        this.logger.error({ err: String(err) }, 'worker bookkeeping failed');
      }
    }
  };

  private runLogger(a: RunAssignment): ClientLogger {
    return childLogger(this.logger, { runId: a.runId, attempt: a.attempt, fencingToken: a.fencingToken });
  }

  /** Runs the handler and reports what it did (at once when it returns no promise). */
  private runHandler(h: HeldRunState): void {
    const ctx = new HandlerContext(h.assignment, h.abort, this.contextOwner);
    let returned: HandlerOutput | Promise<HandlerOutput>;
    try {
      returned = this.handlers[h.assignment.taskType]!(ctx);
    } catch (err) {
      return this.handlerFailed(h, err);
    }
    if (!isPromiseLike(returned)) return this.handlerReturned(h, returned);
    // Promise.resolve: a foreign thenable settles it at most once, as an await would.
    Promise.resolve(returned).then(
      (value) => this.handlerReturned(h, value),
      (err: unknown) => this.handlerFailed(h, err),
    );
  }

  private handlerReturned(h: HeldRunState, value: HandlerOutput): void {
    let outcome: RunResult['outcome'];
    try {
      if (h.abort.cause === 'timeout') {
        outcome = { $case: 'failure', failure: failureOf(new Error('execution timeout exceeded'), 'timeout') };
      } else {
        const output = encodeOutput(value);
        outcome =
          output.length > MAX_OUTPUT_BYTES
            ? { $case: 'failure', failure: { retryable: false, errorType: 'OutputTooLarge', message: `output of ${output.length} bytes exceeds ${MAX_OUTPUT_BYTES}` } }
            : output.length === 0
              ? EMPTY_SUCCESS
              : { $case: 'success', success: { output } };
      }
    } catch (err) {
      return this.handlerFailed(h, err);
    }
    this.handlerSettled(h, outcome);
  }

  private handlerFailed(h: HeldRunState, err: unknown): void {
    const outcome: RunResult['outcome'] = { $case: 'failure', failure: failureOf(err, h.abort.cause) };
    this.runLogger(h.assignment).debug({ err: String(err) }, 'handler failed');
    this.handlerSettled(h, outcome);
  }

  private handlerSettled(h: HeldRunState, outcome: RunResult['outcome']): void {
    try {
      clearTimeout(h.timer);
      this.running -= 1;
      // Only a run still held reports: after lease loss or cancel the outcome is not ours.
      if (this.held.get(h.assignment.runId) === h) this.finishRun(h, outcome);
      this.startQueued();
      this.topUp();
      this.checkIdle();
    } catch (err) {
      this.logger.error({ err: String(err) }, 'worker bookkeeping failed');
    }
  }

  private startQueued(): void {
    while (this.queue.length > 0 && this.running < this.concurrency) {
      const id = this.queue.shift()!;
      const h = this.held.get(id);
      if (h && h.phase === 'queued') this.execute(h);
    }
  }

  /** Records the outcome and sends it (now, or after the next welcome). */
  private finishRun(h: HeldRunState, outcome: RunResult['outcome']): void {
    h.phase = 'reporting';
    h.result = { runId: h.assignment.runId, fencingToken: h.assignment.fencingToken, outcome };
    if (!this.welcomed || !this.stream) return; // sent after the next welcome
    if (this.serverBatches) this.outboxOf(this.stream).results.push(h.result);
    else this.stream.send({ message: { $case: 'result', result: h.result } });
  }

  private abortRun(h: HeldRunState, reason: AbortCause, message: string): void {
    h.abort.abort(reason, message);
  }

  /** Forgets a run: no more heartbeats, no report. Its handler may still be settling. */
  private dropRun(runId: string): void {
    const h = this.held.get(runId);
    if (!h) return;
    clearTimeout(h.timer);
    this.held.delete(runId);
    const q = this.queue.indexOf(runId);
    if (h.phase === 'waiting') {
      // Its start timer is cleared above: give back the credit it held.
      this.waiting -= 1;
      this.topUp();
    } else if (q >= 0) {
      this.queue.splice(q, 1);
      this.topUp();
    }
    this.checkIdle();
  }

  // ---- heartbeats ------------------------------------------------------------------------

  private startHeartbeats(): void {
    this.stopHeartbeats();
    this.heartbeatTimer = setInterval(() => this.sendHeartbeat(this.heldRuns), this.heartbeatIntervalMs);
  }

  private stopHeartbeats(): void {
    clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = undefined;
  }

  private sendHeartbeat(runs: HeldRun[]): void {
    if (!this.welcomed) return;
    const msg: ConnectRequest = { message: { $case: 'heartbeat', heartbeat: { runs } } };
    // A heartbeat written to an open, welcomed stream renews the lease (the transport fails the
    // stream, and so onClose, if it cannot be delivered).
    if (this.stream?.send(msg)) this.touchAll();
  }

  private touchAll(): void {
    const now = performance.now();
    for (const h of this.held.values()) h.lastContact = now;
  }

  // ---- lease watchdog (while disconnected) ------------------------------------------------

  private startWatchdog(): void {
    if (this.watchdogTimer || this.held.size === 0) return;
    this.watchdogTimer = setInterval(() => this.checkLeases(), Math.max(10, Math.min(this.heartbeatIntervalMs, 1_000)));
  }

  private stopWatchdog(): void {
    clearInterval(this.watchdogTimer);
    this.watchdogTimer = undefined;
  }

  private checkLeases(): void {
    if (this.connected) return this.stopWatchdog();
    const now = performance.now();
    for (const [id, h] of this.held) {
      if (h.phase === 'reporting') continue;
      const lease = h.assignment.leaseDurationMs > 0 ? h.assignment.leaseDurationMs : DEFAULT_LEASE_MS;
      const silent = now - h.lastContact;
      if (silent > 2 * lease) {
        this.logger.warn({ runId: id, silentMs: Math.round(silent), leaseMs: lease }, 'no contact with the cluster: lease presumed lost');
        this.abortRun(h, 'lease-lost', `no contact with the cluster for ${Math.round(silent)}ms (lease ${lease}ms): lease presumed lost`);
        this.dropRun(id);
      }
    }
    if (![...this.held.values()].some((h) => h.phase !== 'reporting')) this.stopWatchdog();
  }

  /** ctx.heartbeat(): only while the run is still held under that assignment (claim). */
  private heartbeatRun(a: RunAssignment): void {
    if (this.held.get(a.runId)?.assignment === a) this.sendHeartbeat([heldRun(a)]);
  }
}
