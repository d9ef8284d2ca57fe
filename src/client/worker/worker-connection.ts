// The worker's one WorkerService.Connect stream at a time: opens it with a hello, follows
// redirects to the leader, reconnects with backoff when it ends, and hands each message from the
// server to the part of the worker it is about.
//
// Keeps the promise that a held run keeps its lease across streams (re-attach): the hello of every
// new stream lists every held run, and a result not yet acked is re-sent after each welcome (by
// the worker, which owns the results).
import { performance } from 'node:perf_hooks';
import type { ChannelOptions } from '@grpc/grpc-js';
import type {
  ConnectRequest,
  ConnectResponse,
  HeldRun as HeldRunRef,
  LeaseLost,
  ResultAck,
  RunAssignment,
  RunCancel,
  WorkerWelcome,
} from '../../gen/herald/v1/worker_service.js';
import { ConnectionPool, type ConnectionOptions } from '../connection-pool.js';
import type { ClientLogger } from '../logger.js';
import { Backoff, type RetryOptions } from '../retry-policy.js';
import { WorkerStream } from './worker-stream.js';

/** What the hello of every stream says besides capacity and held runs. */
export interface HelloFields {
  workerId: string;
  taskTypes: string[];
  version: string;
}

/** What the connection needs from the worker around each stream. */
export interface ConnectionOwner {
  /** No (re)connecting once 'stopped'; a 'draining' worker says so on each new stream. */
  readonly state: string;
  /** A stream opens: the capacity its hello offers. */
  streamOpened(): number;
  streamWelcomed(stream: WorkerStream, welcome: WorkerWelcome): void;
  /** The current stream is gone (closed, or left for another node). */
  streamLeft(): void;
  /** It was closed, or abandoned because the server went silent (not left on purpose). */
  disconnected(address: string, error: Error | undefined): void;
  /** A StreamPing acknowledged the periodic heartbeats up to `heartbeatSeq`. */
  pinged(heartbeatSeq: number): void;
  /** A result_ack settled a result this worker reported. */
  settled(ack: ResultAck): void;
}

/** The messages about runs, and what a hello and a sign of life need of the held runs. */
export interface RunMessages {
  refs(): HeldRunRef[];
  /** The cluster still knows our leases. */
  touchAll(): void;
  cancel(c: RunCancel): void;
  leaseLost(l: LeaseLost): void;
  /** True when the ack settled a result this worker reported. */
  acknowledged(ack: ResultAck): boolean;
}

/**
 * How long a stream may stay silent before any welcome told the worker the cluster's bound: long
 * enough for a server that sends no pings to get its leader services ready (it holds the hello
 * up to 5 s), short against the minutes a SYN into a silent network can hang.
 */
export const UNWELCOMED_SILENCE_MS = 10_000;

export interface WorkerConnectionOptions extends ConnectionOptions {
  endpoints: string[];
  reconnect?: { initialBackoffMs?: number; maxBackoffMs?: number };
}

export class WorkerConnection {
  private readonly configured: readonly string[];
  /** The configured endpoints, then the members' addresses the cluster told us (welcome, pings). */
  private endpoints: string[];
  private readonly pool: ConnectionPool;
  private readonly backoff: Backoff;
  /**
   * Retries while the cluster answers but has no leader for us (a failover: followers point at
   * the dead leader, then know none until the election ends): short, growing slowly to 0.5 s. The
   * reconnect backoff, growing to 5 s, is for when no node answers; a worker that backed off like
   * that through a failover came back seconds after the new leader.
   */
  private readonly electionBackoff: Backoff;
  /** A node redirected us since the last welcome: the cluster is up, a leader is being found. */
  private clusterAnswered = false;
  private streamValue: WorkerStream | undefined;
  private welcomed = false;
  private leaderHint: string | undefined;
  private redirectsSinceWelcome = 0;
  private cursor = 0;
  private reconnectTimer: NodeJS.Timeout | undefined;
  /** WorkerWelcome.silence_timeout_ms of the last welcome (0: the server does not ping). */
  private silenceMs = 0;
  /** Monotonic time the current stream last heard from its server (or was opened). */
  private lastHeard = 0;
  private silenceTimer: NodeJS.Timeout | undefined;
  private silenceTick = 0;
  /** A node whose stream went silent, avoided until `suspectUntil` (or another node welcomes us). */
  private suspect: string | undefined;
  private suspectUntil = 0;

  constructor(
    options: WorkerConnectionOptions,
    private readonly hello: HelloFields,
    private readonly owner: ConnectionOwner,
    private readonly runs: RunMessages,
    private readonly assigned: { onAssignment(a: RunAssignment): void },
    private readonly logger: ClientLogger,
  ) {
    this.configured = [...options.endpoints];
    this.endpoints = [...options.endpoints];
    // Long-lived stream: transport keepalive is the fallback for servers that send no
    // StreamPings (the silence bound detects a silent leader in seconds otherwise); the server
    // side is configured to accept these pings (issue 7).
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

  /** True while a stream is open and welcomed. */
  get connected(): boolean {
    return this.welcomed && this.streamValue !== undefined && !this.streamValue.closed;
  }

  /** Writes to the current stream (welcomed or not); false when there is none open. */
  send(msg: ConnectRequest): boolean {
    return this.streamValue?.send(msg) ?? false;
  }

  /** Stops reconnecting and lets go of the current stream, returned to be ended gracefully. */
  stop(): WorkerStream | undefined {
    clearTimeout(this.reconnectTimer);
    clearInterval(this.silenceTimer);
    this.silenceTimer = undefined;
    const stream = this.streamValue;
    this.streamValue = undefined;
    this.welcomed = false;
    return stream;
  }

  /** Closes the channels (after stop). */
  close(): void {
    this.pool.close();
  }

  private nextAddress(): string {
    if (this.leaderHint !== undefined) return this.leaderHint;
    // In rotation, a node that just went silent comes last.
    for (let i = 0; i < this.endpoints.length; i++) {
      const a = this.endpoints[this.cursor % this.endpoints.length]!;
      if (!this.isSuspect(a)) return a;
      this.cursor += 1;
    }
    return this.endpoints[this.cursor % this.endpoints.length]!;
  }

  /**
   * The members' client addresses, as the leader told them: they join the rotation (members
   * removed since leave it; configured endpoints stay), so a worker configured with machines the
   * cluster has since left keeps finding it while it hears from one member now and then.
   */
  private learnMembers(addresses: readonly string[]): void {
    if (addresses.length === 0) return;
    const next = [...new Set([...this.configured, ...addresses])];
    if (next.join(',') === this.endpoints.join(',')) return;
    this.endpoints = next;
    this.logger.debug({ endpoints: next }, 'cluster members learned');
  }

  /** Where the worker looks for the leader: configured endpoints and the members learned since. */
  knownEndpoints(): readonly string[] {
    return this.endpoints;
  }

  private isSuspect(address: string): boolean {
    if (this.suspect !== address) return false;
    if (performance.now() < this.suspectUntil) return true;
    this.suspect = undefined;
    return false;
  }

  /** The bound on silence for the current stream. */
  private silenceBound(): number {
    if (this.welcomed) return this.silenceMs;
    return this.silenceMs > 0 ? this.silenceMs : UNWELCOMED_SILENCE_MS;
  }

  /** Checks the current stream against its silence bound a few times per bound. */
  private watchSilence(): void {
    const bound = this.silenceBound();
    if (bound <= 0) {
      clearInterval(this.silenceTimer);
      this.silenceTimer = undefined;
      return;
    }
    const tick = Math.max(10, Math.floor(bound / 8));
    if (this.silenceTimer && this.silenceTick === tick) return;
    clearInterval(this.silenceTimer);
    this.silenceTick = tick;
    this.silenceTimer = setInterval(() => this.checkSilence(), tick);
  }

  private checkSilence(): void {
    const stream = this.streamValue;
    if (!stream || stream.closed) return;
    const bound = this.silenceBound();
    const silent = performance.now() - this.lastHeard;
    if (bound <= 0 || silent <= bound) return;
    // No RST or FIN will come: the network may swallow everything. Leave, and try another node
    // first (a follower that knows the new leader redirects us there); held runs re-attach.
    const wasWelcomed = this.welcomed;
    this.logger.warn({ address: stream.address, silentMs: Math.round(silent), boundMs: bound, welcomed: wasWelcomed }, 'worker stream silent: trying another node');
    this.streamValue = undefined;
    this.welcomed = false;
    this.owner.streamLeft();
    stream.cancel();
    // A fresh channel next time: the old connection may stay half-dead until TCP keepalive.
    this.pool.drop(stream.address);
    this.suspect = stream.address;
    this.suspectUntil = performance.now() + 2 * Math.max(bound, this.silenceMs);
    this.leaderHint = undefined;
    this.cursor += 1;
    this.owner.disconnected(stream.address, new Error(`no message from ${stream.address} for ${Math.round(silent)}ms`));
    this.scheduleReconnect(true);
  }

  connect(): void {
    if (this.owner.state === 'stopped' || this.streamValue) return;
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
    this.streamValue = stream;
    this.welcomed = false;
    this.lastHeard = performance.now();
    this.watchSilence();
    const capacity = this.owner.streamOpened();
    const heldRuns = this.runs.refs();
    this.logger.debug({ address, held: heldRuns.length, capacity }, 'worker stream opening');
    const { workerId, taskTypes, version } = this.hello;
    stream.send({ message: { $case: 'hello', hello: { workerId, taskTypes, capacity, heldRuns, version, batches: true } } });
    if (this.owner.state === 'draining') stream.send({ message: { $case: 'drain', drain: {} } });
  }

  private onClose(stream: WorkerStream, err: Error | undefined): void {
    if (stream !== this.streamValue) return; // an old stream we replaced or closed on purpose
    const wasWelcomed = this.welcomed;
    this.streamValue = undefined;
    this.welcomed = false;
    this.owner.streamLeft();
    this.logger.warn({ address: stream.address, err: err?.message }, 'worker stream closed');
    this.owner.disconnected(stream.address, err);
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
    if (this.owner.state === 'stopped' || this.reconnectTimer) return;
    const delay = immediately ? 0 : (this.clusterAnswered ? this.electionBackoff : this.backoff).next();
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.connect();
    }, delay);
  }

  /** Leaves the current stream on purpose (redirect) and connects to `address` next. */
  private moveTo(address: string | undefined, immediately: boolean): void {
    const stream = this.streamValue;
    this.streamValue = undefined;
    this.welcomed = false;
    this.owner.streamLeft();
    stream?.cancel();
    if (address) {
      this.leaderHint = address;
      this.scheduleReconnect(immediately);
    } else {
      this.leaderHint = undefined;
      this.cursor += 1;
      this.scheduleReconnect(false);
    }
  }

  private onWelcome(stream: WorkerStream, welcome: WorkerWelcome): void {
    this.welcomed = true;
    this.learnMembers(welcome.memberAddresses);
    this.silenceMs = welcome.silenceTimeoutMs > 0 ? welcome.silenceTimeoutMs : 0;
    this.suspect = undefined;
    this.watchSilence();
    this.backoff.reset();
    this.electionBackoff.reset();
    this.clusterAnswered = false;
    this.redirectsSinceWelcome = 0;
    // Whoever welcomed us is the leader (followers redirect): come back here after a drop.
    this.leaderHint = stream.address;
    this.owner.streamWelcomed(stream, welcome);
  }

  private onMessage(stream: WorkerStream, msg: ConnectResponse): void {
    if (stream !== this.streamValue) return;
    this.lastHeard = performance.now();
    // Against a server that does not acknowledge heartbeats (no pings), any message on a welcomed
    // stream is taken to show the leader is alive and holds our leases (it sends lease_lost
    // otherwise); the welcome itself refreshes the runs it did not reject.
    if (this.welcomed && this.silenceMs === 0) this.runs.touchAll();
    const m = msg.message;
    switch (m?.$case) {
      case 'ping':
        if (this.welcomed) {
          this.learnMembers(m.ping.memberAddresses);
          this.owner.pinged(m.ping.heartbeatSeq);
        }
        return;
      case 'welcome':
        return this.onWelcome(stream, m.welcome);
      case 'assignment':
        return this.assigned.onAssignment(m.assignment);
      case 'assignments':
        for (const a of m.assignments.assignments) this.assigned.onAssignment(a);
        return;
      case 'cancel':
        return this.runs.cancel(m.cancel);
      case 'leaseLost':
        return this.runs.leaseLost(m.leaseLost);
      case 'redirect': {
        const to = m.redirect.leaderAddress;
        this.logger.info({ from: stream.address, to }, 'redirected to leader');
        // Follow at once only the first hop after a welcome: followers with stale views could
        // otherwise bounce the worker between them at full speed during an election.
        const first = this.redirectsSinceWelcome === 0;
        this.redirectsSinceWelcome += 1;
        this.clusterAnswered = true;
        // A node that just went silent on us is not followed while others may know better (a
        // follower's view can lag the election); the rotation tries them first.
        const follow = to !== '' && to !== stream.address && !this.isSuspect(to);
        return this.moveTo(follow ? to : undefined, first && follow);
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
    if (this.runs.acknowledged(ack)) this.owner.settled(ack);
  }
}
