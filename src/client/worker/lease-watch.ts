// Keeps the worker's leases, and gives them up when they cannot have been kept.
//
// - A held run keeps its lease: every held run is listed in periodic heartbeats, including runs
//   whose result awaits its ack (and, kept by the connection, in the hello of every new stream).
// - A run is not executed on a lease the worker cannot have kept: with no contact to the cluster
//   for two lease durations (one lease, plus the grace a new leader gives after a failover), the
//   lease is presumed lost and the run is aborted as 'lease-lost'. Finished runs awaiting an ack
//   keep their result for the next stream; the server decides whether it still counts.
import { performance } from 'node:perf_hooks';
import type { ConnectRequest, HeldRun as HeldRunRef, RunAssignment } from '../../gen/herald/v1/worker_service.js';
import type { ClientLogger } from '../logger.js';
import type { HeldRuns } from './held-runs.js';
import type { WorkerStream } from './worker-stream.js';

/** The lease duration the server applies when a job does not set one (JobSpec.lease_duration_ms). */
export const DEFAULT_LEASE_MS = 30_000;

export class LeaseWatch {
  /** The welcomed stream heartbeats go to; undefined while there is none. */
  private stream: WorkerStream | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private watchdogTimer: NodeJS.Timeout | undefined;

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
  streamWelcomed(stream: WorkerStream, heartbeatIntervalMs: number): void {
    this.stream = stream;
    if (heartbeatIntervalMs > 0) this.heartbeatIntervalMs = heartbeatIntervalMs;
    this.stopWatchdog();
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
    this.heartbeatTimer = setInterval(() => this.sendHeartbeat(this.runs.refs()), this.heartbeatIntervalMs);
  }

  private stopHeartbeats(): void {
    this.stream = undefined;
    clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = undefined;
  }

  private sendHeartbeat(runs: HeldRunRef[]): void {
    if (!this.stream) return;
    const msg: ConnectRequest = { message: { $case: 'heartbeat', heartbeat: { runs } } };
    // A heartbeat written to an open, welcomed stream renews the lease (the transport fails the
    // stream, and so the connection's onClose, if it cannot be delivered).
    if (this.stream.send(msg)) this.runs.touchAll();
  }

  /** ctx.heartbeat(): only while the run is still held under that assignment (claim). */
  heartbeatRun(a: RunAssignment): void {
    if (this.runs.get(a.runId)?.assignment === a) this.sendHeartbeat([{ runId: a.runId, fencingToken: a.fencingToken }]);
  }

  // ---- lease watchdog (while disconnected) ------------------------------------------------

  private startWatchdog(): void {
    if (this.watchdogTimer || this.runs.size === 0) return;
    this.watchdogTimer = setInterval(() => this.checkLeases(), Math.max(10, Math.min(this.heartbeatIntervalMs, 1_000)));
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
      if (silent > 2 * lease) {
        this.logger.warn({ runId: h.assignment.runId, silentMs: Math.round(silent), leaseMs: lease }, 'no contact with the cluster: lease presumed lost');
        this.runs.end(h, 'lease-lost', `no contact with the cluster for ${Math.round(silent)}ms (lease ${lease}ms): lease presumed lost`);
      }
    }
    if (this.runs.unfinished() === 0) this.stopWatchdog();
  }
}
