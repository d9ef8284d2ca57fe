// One worker's stream on the leader: who it is, which task types it runs, how many more runs it
// may be given (credits), and a safe way to write to it. Sessions live only while this node
// leads; the registry (one per term) opens them, numbering them itself, and finds a worker's
// current session for assignments, cancels and lease loss.
import type { ServerDuplexStream } from '@grpc/grpc-js';
import type { ConnectRequest, ConnectResponse, ResultAck, RunAssignment, WorkerHello } from '../../gen/herald/v1/worker_service.js';
import { HeraldError } from '../../herald-error.js';

/** Most credits a session may accumulate (a bound on a buggy or hostile worker). */
export const MAX_SESSION_CREDITS = 100_000;
/** A batched message is cut at about this many bytes of payload. */
export const MAX_BATCH_MESSAGE_BYTES = 1 << 20;

/** Refuses a malformed hello (ids, task types, capacity, held runs) before a session is opened. */
export function validateHello(hello: WorkerHello): void {
  if (!/^[A-Za-z0-9._:-]{1,128}$/.test(hello.workerId)) {
    throw new HeraldError('INVALID_ID', `hello.worker_id "${hello.workerId.slice(0, 200)}" must be 1–128 characters of [A-Za-z0-9._:-]`, { field: 'worker_id' });
  }
  if (hello.taskTypes.length === 0 || hello.taskTypes.length > 256) {
    throw new HeraldError('INVALID_ARGUMENT', 'hello.task_types must list 1–256 task types', { field: 'task_types' });
  }
  for (const t of hello.taskTypes) {
    if (!/^[A-Za-z0-9._:-]{1,128}$/.test(t)) throw new HeraldError('INVALID_ARGUMENT', `hello.task_types: bad task type "${t.slice(0, 200)}"`, { field: 'task_types' });
  }
  if (!Number.isInteger(hello.capacity) || hello.capacity < 0 || hello.capacity > 100_000) {
    throw new HeraldError('INVALID_ARGUMENT', `hello.capacity must be 0–100000 (got ${hello.capacity})`, { field: 'capacity' });
  }
  if (hello.heldRuns.length > 100_000) throw new HeraldError('INVALID_ARGUMENT', 'hello.held_runs lists too many runs', { field: 'held_runs' });
}

export class WorkerSession {
  /** Spare capacity: runs this worker may still be assigned. */
  credits: number;
  draining = false;
  private closedFlag = false;
  /** When the stream was opened, and when the worker last spoke (wall clock: shown to operators only). */
  readonly connectedUnixMs = Date.now();
  lastHeardUnixMs = Date.now();

  constructor(
    /** Unique within its registry (SessionRegistry.open). */
    readonly sessionId: number,
    readonly workerId: string,
    readonly taskTypes: ReadonlySet<string>,
    capacity: number,
    private readonly call: ServerDuplexStream<ConnectRequest, ConnectResponse>,
    /** The worker takes batched assignments and acks (WorkerHello.batches). */
    readonly batches = false,
  ) {
    this.credits = Math.min(capacity, MAX_SESSION_CREDITS);
  }

  get closed(): boolean {
    return this.closedFlag || this.call.destroyed || this.call.writableEnded;
  }

  /**
   * The worker went silent (no heartbeat for several periods; the network may be swallowing what
   * we send): its credits are set aside so no assignment vanishes there. Anything it sends
   * again gives them back (resume()).
   */
  park(): void {
    if (this.parked !== undefined) return;
    this.parked = this.credits;
    this.credits = 0;
  }

  resume(): void {
    if (this.parked === undefined) return;
    if (!this.draining) this.credits = Math.min(MAX_SESSION_CREDITS, this.credits + this.parked);
    this.parked = undefined;
  }

  /** Credits set aside while the worker is silent. */
  private parked: number | undefined;

  get isParked(): boolean {
    return this.parked !== undefined;
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

  /**
   * Writes assignments: one message for a worker that takes batches (a message per run costs
   * both sides far more than the run's bytes), else one each. Returns how many were written
   * (the rest were not: the stream is gone).
   */
  sendAssignments(assignments: RunAssignment[]): number {
    if (!this.batches) {
      let sent = 0;
      for (const assignment of assignments) {
        if (!this.send({ message: { $case: 'assignment', assignment } })) break;
        sent++;
      }
      return sent;
    }
    // Large payloads: several messages of about MAX_BATCH_MESSAGE_BYTES rather than one huge one.
    let from = 0;
    let bytes = 0;
    for (let i = 0; i < assignments.length; i++) {
      bytes += assignments[i]!.payload.length + 128;
      if (bytes < MAX_BATCH_MESSAGE_BYTES && i < assignments.length - 1) continue;
      const part = assignments.slice(from, i + 1);
      const ok =
        part.length === 1
          ? this.send({ message: { $case: 'assignment', assignment: part[0]! } })
          : this.send({ message: { $case: 'assignments', assignments: { assignments: part } } });
      if (!ok) return from;
      from = i + 1;
      bytes = 0;
    }
    return from;
  }

  /** Writes result acks, batched like assignments. */
  sendAcks(acks: ResultAck[]): void {
    if (this.batches && acks.length > 1) this.send({ message: { $case: 'resultAcks', resultAcks: { acks } } });
    else for (const resultAck of acks) this.send({ message: { $case: 'resultAck', resultAck } });
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
  private nextSessionId = 1;

  /** A new session for a worker's stream, numbered here; it joins the registry with add(). */
  open(workerId: string, taskTypes: ReadonlySet<string>, capacity: number, call: ServerDuplexStream<ConnectRequest, ConnectResponse>, batches = false): WorkerSession {
    return new WorkerSession(this.nextSessionId++, workerId, taskTypes, capacity, call, batches);
  }

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
