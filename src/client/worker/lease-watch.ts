// Keeps the worker's leases, and gives them up when they cannot have been kept.
//
// - A held run keeps its lease: every held run is listed in periodic heartbeats, including runs
//   whose result awaits its ack (and, kept by the connection, in the hello of every new stream).
// - A run is not executed on a lease the worker cannot have kept. Against a server that
//   acknowledges heartbeats (StreamPing.heartbeat_seq; its welcome sets silence_timeout_ms), the
//   last contact is when the last acknowledged heartbeat was sent: the server's lease lasts at
//   least a lease duration from then (a new leader grants one from its takeover, later still), so
//   the run is aborted as 'lease-lost' a margin before that — before the run can be offered to
//   another worker. Against an older server (no acknowledgements) the last contact is any message
//   or heartbeat written, and the bound is two lease durations (one lease, plus a new leader's
//   grace). Finished runs awaiting an ack keep their result for the next stream; the server
//   decides whether it still counts.
import { performance } from 'node:perf_hooks';
import type { ConnectRequest, HeldRun as HeldRunRef, RunAssignment } from '../../gen/herald/v1/worker_service.js';
import type { ClientLogger } from '../logger.js';
import type { HeldRuns } from './held-runs.js';
import type { WorkerStream } from './worker-stream.js';

/** The lease duration the server applies when a job does not set one (JobSpec.lease_duration_ms). */
export const DEFAULT_LEASE_MS = 30_000;

/** Heartbeats sent but not yet acknowledged, at most (a server that stops acking frees them). */
const MAX_UNACKED = 64;

/**
 * How long after the last contact a lease is presumed lost. With acknowledged heartbeats: the
 * lease less a margin for what the worker cannot see (the claim-to-assignment latency of a new
 * run, the watchdog's tick). Without: two leases.
 */
export function presumedLostAfterMs(leaseMs: number, acked: boolean): number {
  return acked ? leaseMs - Math.min(leaseMs / 4, 1_000) : 2 * leaseMs;
}

export class LeaseWatch {
  /** The welcomed stream heartbeats go to; undefined while there is none. */
  private stream: WorkerStream | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private watchdogTimer: NodeJS.Timeout | undefined;
  /** The server of the last welcome acknowledges heartbeats (it sends StreamPings). */
  private acked = false;
  private seq = 0;
  /** Periodic heartbeats not yet acknowledged: [seq, monotonic send time], oldest first. */
  private unacked: Array<[number, number]> = [];

  constructor(
    /** Until a server's welcome says otherwise. */
    private heartbeatIntervalMs: number,
    private readonly runs: HeldRuns,
    private readonly logger: ClientLogger,
  ) {}

  /** Connected to the cluster: a welcomed stream that is still open. */
  private get connected(): boolean {
    return this.stream !== undefined && !this.stream.closed;
  }

  /** A stream was welcomed: heartbeats go to it, at the period the server asks (if it does). */
  streamWelcomed(stream: WorkerStream, heartbeatIntervalMs: number, silenceTimeoutMs = 0): void {
    this.stream = stream;
    if (heartbeatIntervalMs > 0) this.heartbeatIntervalMs = heartbeatIntervalMs;
    this.acked = silenceTimeoutMs > 0;
    this.seq = 0;
    this.unacked.length = 0;
    this.stopWatchdog();
  }

  /** The server applied the renewals of periodic heartbeats up to `seq`. */
  pinged(seq: number): void {
    let at = -1;
    let n = 0;
    while (n < this.unacked.length && this.unacked[n]![0] <= seq) at = this.unacked[n++]![1];
    if (n === 0) return;
    this.unacked.splice(0, n);
    this.runs.touchAll(at);
  }

  /** The stream is gone: no heartbeats until the next welcome; the watchdog watches meanwhile. */
  streamLeft(): void {
    this.stopHeartbeats();
    this.startWatchdog();
  }

  /** The worker stops: heartbeats and watchdog both. */
  stop(): void {
    this.stopHeartbeats();
    this.stopWatchdog();
  }

  // ---- heartbeats ------------------------------------------------------------------------

  startHeartbeats(): void {
    clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = setInterval(() => this.sendHeartbeat(this.runs.refs(), true), this.heartbeatIntervalMs);
  }

  private stopHeartbeats(): void {
    this.stream = undefined;
    clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = undefined;
  }

  private sendHeartbeat(runs: HeldRunRef[], periodic: boolean): void {
    if (!this.stream) return;
    // Only periodic heartbeats list every held run, so only they are numbered for acknowledgement.
    const seq = periodic && this.acked ? ++this.seq : 0;
    const msg: ConnectRequest = { message: { $case: 'heartbeat', heartbeat: { runs, seq } } };
    if (!this.stream.send(msg)) return;
    if (seq > 0) {
      if (this.unacked.length >= MAX_UNACKED) this.unacked.shift();
      this.unacked.push([seq, performance.now()]);
    } else if (!this.acked) {
      // An older server: a heartbeat written to an open, welcomed stream is taken to renew the
      // lease (the transport fails the stream if it cannot be delivered, eventually).
      this.runs.touchAll();
    }
  }

  /** ctx.heartbeat(): only while the run is still held under that assignment (claim). */
  heartbeatRun(a: RunAssignment): void {
    if (this.runs.get(a.runId)?.assignment === a) this.sendHeartbeat([{ runId: a.runId, fencingToken: a.fencingToken }], false);
  }

  // ---- lease watchdog (while disconnected) ------------------------------------------------

  private startWatchdog(): void {
    if (this.watchdogTimer || this.runs.size === 0) return;
    // Often enough that an abort lands within the margin presumedLostAfterMs leaves.
    this.watchdogTimer = setInterval(() => this.checkLeases(), Math.max(10, Math.min(this.heartbeatIntervalMs, this.acked ? 100 : 1_000)));
  }

  private stopWatchdog(): void {
    clearInterval(this.watchdogTimer);
    this.watchdogTimer = undefined;
  }

  private checkLeases(): void {
    if (this.connected) return this.stopWatchdog();
    const now = performance.now();
    for (const h of this.runs.values()) {
      if (h.phase === 'reporting') continue;
      const lease = h.assignment.leaseDurationMs > 0 ? h.assignment.leaseDurationMs : DEFAULT_LEASE_MS;
      const silent = now - h.lastContact;
      if (silent > presumedLostAfterMs(lease, this.acked)) {
        this.logger.warn({ runId: h.assignment.runId, silentMs: Math.round(silent), leaseMs: lease }, 'no contact with the cluster: lease presumed lost');
        this.runs.end(h, 'lease-lost', `no contact with the cluster for ${Math.round(silent)}ms (lease ${lease}ms): lease presumed lost`);
      }
    }
    if (this.runs.unfinished() === 0) this.stopWatchdog();
  }
}
