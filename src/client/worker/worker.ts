// The Worker library: runs user handlers for the runs the leader assigns over one long-lived
// WorkerService.Connect stream (DESIGN §3 steps 3–5). This file is its public API and lifecycle:
// start, drain, shutdown with a bounded grace, run() under signals, and the welcome that
// re-attaches a stream. The parts, each stating the promises to the cluster that it keeps:
// - held-runs.ts: one HeldRun per run whose lease the worker holds (its phase, timer, abort and
//   result); active runs and free slots are counted from their phases.
// - run-executor.ts: assignment → handler → outcome; never more runs executing than
//   `concurrency`; a run whose lease is gone is aborted and its outcome never reported.
// - worker-outbox.ts: results and credits; credits only for free slots, results before credits.
// - lease-watch.ts: heartbeats keep every held run's lease; with no contact for two lease
//   durations a lease is presumed lost and its run aborted.
// - worker-connection.ts: the stream, redirects and reconnects; every hello lists the held runs.
//
// Kept here: a result is delivered at least once. It is re-sent on each new stream until a
// result_ack (accepted or not) or lease loss settles it. Results carry the fencing token, so a
// duplicate or stale one is rejected by the server rather than applied twice.
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { HeldRun as HeldRunRef, ResultAck, WorkerWelcome } from '../../gen/herald/v1/worker_service.js';
import type { ConnectionOptions } from '../connection-pool.js';
import { childLogger, silentLogger, type ClientLogger } from '../logger.js';
import { HeldRuns } from './held-runs.js';
import { LeaseWatch } from './lease-watch.js';
import { RunExecutor } from './run-executor.js';
import type { Handler } from './run-context.js';
import { WorkerConnection, type ConnectionOwner } from './worker-connection.js';
import { WorkerOutbox } from './worker-outbox.js';
import type { WorkerStream } from './worker-stream.js';

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

function defaultWorkerId(): string {
  const host = hostname().replace(/[^A-Za-z0-9._:-]/g, '-').slice(0, 80) || 'worker';
  return `${host}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

export class Worker extends EventEmitter<WorkerEvents> {
  readonly workerId: string;
  private readonly endpoints: string[];
  private readonly concurrency: number;
  private readonly shutdownGraceMs: number;
  private readonly abortWaitMs: number;
  private readonly logger: ClientLogger;
  private readonly runs: HeldRuns;
  private readonly outbox: WorkerOutbox;
  private readonly leases: LeaseWatch;
  private readonly executor: RunExecutor;
  private readonly connection: WorkerConnection;

  private stateValue: WorkerState = 'new';
  private stopping: Promise<void> | undefined;
  private cutGrace: (() => void) | undefined;

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
    const handlers = { ...options.handlers };
    this.concurrency = concurrency;
    this.shutdownGraceMs = options.shutdownGraceMs ?? 30_000;
    this.abortWaitMs = options.abortWaitMs ?? 2_000;
    this.logger = childLogger(options.logger ?? silentLogger, { workerId: this.workerId });
    this.runs = new HeldRuns(concurrency, this.logger, () => this.outbox.topUp());
    this.outbox = new WorkerOutbox(this, this.runs);
    this.leases = new LeaseWatch(options.heartbeatIntervalMs ?? 5_000, this.runs, this.logger);
    this.executor = new RunExecutor(this.workerId, handlers, this.runs, this.outbox, this.logger, this.leases);
    const hello = { workerId: this.workerId, taskTypes: Object.keys(handlers), version: options.version ?? '' };
    this.connection = new WorkerConnection(options, hello, this.connectionOwner(), this.runs, this.executor, this.logger);
  }

  get state(): WorkerState {
    return this.stateValue;
  }

  /** True while a stream is open and welcomed. */
  get connected(): boolean {
    return this.connection.connected;
  }

  /** Where the worker looks for the leader: its configured endpoints and the members the cluster told it. */
  get knownEndpoints(): readonly string[] {
    return this.connection.knownEndpoints();
  }

  /** Runs this worker holds (executing, queued, or awaiting the ack of their result). */
  get heldRuns(): HeldRunRef[] {
    return this.runs.refs();
  }

  /** Handlers currently executing. */
  get activeRuns(): number {
    return this.runs.activeRuns;
  }

  /** Connects and starts taking runs. Returns at once; (re)connection continues in the background. */
  start(): void {
    if (this.stateValue !== 'new') throw new Error(`Worker: start() called in state ${this.stateValue}`);
    this.stateValue = 'running';
    this.logger.info({ endpoints: this.endpoints, concurrency: this.concurrency }, 'worker starting');
    this.connection.connect();
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
        reject(new Error(`Worker: not connected to a leader within ${timeoutMs}ms (endpoints: ${this.connection.knownEndpoints().join(', ')})`));
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
      this.logger.info({ held: this.runs.size }, 'worker draining');
      this.outbox.revokeCredits();
      this.connection.send({ message: { $case: 'drain', drain: {} } });
      // Over-assigned runs waiting for a slot were claimed for us; they still run (the claim is
      // committed), so the queue is left alone.
    }
    await this.runs.idle();
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
      this.connection.close();
      this.emit('stopped');
      return;
    }
    const drained = this.drain();
    const cut = new Promise<void>((resolve) => (this.cutGrace = resolve));
    if (!(await this.within(Promise.race([drained, cut]), graceMs))) {
      this.logger.warn({ held: this.runs.size, running: this.runs.activeRuns }, 'shutdown grace over: aborting in-flight runs');
    }
    if (!this.runs.isIdle()) {
      for (const h of this.runs.values()) {
        if (h.phase !== 'reporting') h.abort.abort('shutdown', 'worker shutting down');
      }
      // Queued and waiting runs never started: leave them to lease expiry rather than spend an attempt.
      this.runs.dropUnstarted();
      await this.within(this.runs.idle(), this.abortWaitMs);
    }
    this.stateValue = 'stopped';
    this.leases.stop();
    this.outbox.flush();
    const stream = this.connection.stop();
    this.outbox.streamLeft();
    if (stream) await stream.end(500);
    this.connection.close();
    this.logger.info({ abandoned: this.runs.size }, 'worker stopped');
    // Runs still held are abandoned (their leases expire on the server); nobody waits on them.
    this.runs.releaseIdleWaiters();
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

  // ---- the connection's events -------------------------------------------------------------

  /** What the connection tells the worker; made once, so a message costs no closures. */
  private connectionOwner(): ConnectionOwner {
    const worker = this;
    return {
      get state() {
        return worker.stateValue;
      },
      streamOpened: () => this.outbox.streamOpened(),
      streamWelcomed: (stream, welcome) => this.onWelcome(stream, welcome),
      streamLeft: () => {
        this.outbox.streamLeft();
        this.leases.streamLeft();
      },
      disconnected: (address, err) => this.emit('disconnected', address, err),
      pinged: (seq) => this.leases.pinged(seq),
      settled: (ack) => this.onSettled(ack),
    };
  }

  /** A stream was welcomed: re-attach what the server kept, and carry on where the last one left off. */
  private onWelcome(stream: WorkerStream, welcome: WorkerWelcome): void {
    this.outbox.streamWelcomed(stream, welcome.batches);
    this.leases.streamWelcomed(stream, welcome.heartbeatIntervalMs, welcome.silenceTimeoutMs);
    this.runs.rejected(welcome);
    this.runs.touchAll();
    this.logger.info({ address: stream.address, nodeId: welcome.nodeId, adopted: welcome.adopted.length }, 'worker connected');
    this.emit('connected', stream.address, welcome.nodeId);
    this.leases.startHeartbeats();
    // Results that did not get an ack on an earlier stream.
    for (const h of this.runs.values()) if (h.result) stream.send({ message: { $case: 'result', result: h.result } });
    this.outbox.topUp();
  }

  private onSettled(ack: ResultAck): void {
    if (this.listenerCount('settled') > 0) this.emit('settled', { runId: ack.runId, fencingToken: ack.fencingToken, accepted: ack.accepted, reason: ack.reason });
  }
}
