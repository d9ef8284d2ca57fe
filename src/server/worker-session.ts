// One worker's stream on the leader: who it is, which task types it runs, how many more runs it
// may be given (credits), and a safe way to write to it. Sessions live only while this node
// leads; the registry finds a worker's current session for assignments, cancels and lease loss.
import type { ServerDuplexStream } from '@grpc/grpc-js';
import type { ConnectRequest, ConnectResponse } from '../gen/herald/v1/worker_service.js';

/** Most credits a session may accumulate (a bound on a buggy or hostile worker). */
export const MAX_SESSION_CREDITS = 100_000;

let nextSessionId = 1;

export class WorkerSession {
  readonly sessionId = nextSessionId++;
  /** Spare capacity: runs this worker may still be assigned. */
  credits: number;
  draining = false;
  private closedFlag = false;

  constructor(
    readonly workerId: string,
    readonly taskTypes: ReadonlySet<string>,
    capacity: number,
    private readonly call: ServerDuplexStream<ConnectRequest, ConnectResponse>,
  ) {
    this.credits = Math.min(capacity, MAX_SESSION_CREDITS);
  }

  get closed(): boolean {
    return this.closedFlag || this.call.destroyed || this.call.writableEnded;
  }

  addCredits(n: number): void {
    if (this.draining) return;
    this.credits = Math.min(MAX_SESSION_CREDITS, this.credits + n);
  }

  /** Writes a message; false when the stream is gone (the worker will reconnect and re-attach). */
  send(msg: ConnectResponse): boolean {
    if (this.closed) return false;
    try {
      this.call.write(msg);
      return true;
    } catch {
      return false;
    }
  }

  /** Tells the worker where the leader is and ends the stream. */
  redirect(leaderId: string, leaderAddress: string): void {
    this.send({ message: { $case: 'redirect', redirect: { leaderId, leaderAddress } } });
    this.end();
  }

  end(): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    try {
      if (!this.call.writableEnded) this.call.end();
    } catch {
      // already torn down by the peer
    }
  }

  markClosed(): void {
    this.closedFlag = true;
  }
}

export class SessionRegistry {
  private readonly sessions = new Map<number, WorkerSession>();
  private readonly byWorker = new Map<string, WorkerSession>();

  add(s: WorkerSession): void {
    this.sessions.set(s.sessionId, s);
    // A reconnect replaces the worker's older stream (which may linger until TCP notices).
    const old = this.byWorker.get(s.workerId);
    this.byWorker.set(s.workerId, s);
    if (old && old !== s) {
      old.end();
      this.sessions.delete(old.sessionId);
    }
  }

  remove(s: WorkerSession): void {
    this.sessions.delete(s.sessionId);
    if (this.byWorker.get(s.workerId) === s) this.byWorker.delete(s.workerId);
  }

  /** The worker's current open session. */
  ofWorker(workerId: string): WorkerSession | undefined {
    const s = this.byWorker.get(workerId);
    return s && !s.closed ? s : undefined;
  }

  all(): WorkerSession[] {
    return [...this.sessions.values()].filter((s) => !s.closed);
  }

  get size(): number {
    return this.sessions.size;
  }
}
