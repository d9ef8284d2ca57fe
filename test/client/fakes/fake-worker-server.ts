// A scripted WorkerService for Worker tests: a real gRPC server that records every message a
// worker sends and lets the test send assignments, cancels, lease-lost notices, redirects and
// acks, or drop the stream. It can also dispatch a queue of runs against the worker's credits,
// the way the leader's dispatcher will, and tracks the credit arithmetic to check the worker.
import { status, type ServerDuplexStream } from '@grpc/grpc-js';
import {
  WorkerServiceService,
  type ConnectRequest,
  type ConnectResponse,
  type HeldRun,
  type RunAssignment,
  type RunResult,
  type WorkerHello,
} from '../../../src/gen/herald/v1/worker_service.js';
import { startTestServer, waitFor, type TestServer } from './grpc-test-server.js';

export interface FakeWorkerServerOptions {
  nodeId?: string;
  /** Sent in welcome; 0 leaves the worker's own setting. */
  heartbeatIntervalMs?: number;
  /** WorkerWelcome.silence_timeout_ms (0, the default: a server that sends no pings). */
  silenceTimeoutMs?: number;
  /** Answer every hello with a Redirect to this address (a follower), then end the stream. */
  redirectTo?: () => string;
  /** Adopted/rejected split of re-attached runs; default adopts all. */
  reattach?: (held: HeldRun[]) => { adopted: HeldRun[]; rejected: HeldRun[] };
  /** Ack every result at once (accepted); default true. */
  autoAck?: boolean;
  /** Reuse a port (to come back "after a restart" at the same address). */
  port?: number;
  /** WorkerWelcome.member_addresses (default none). */
  memberAddresses?: () => string[];
  /** Say in welcome that WorkerBatch messages are accepted (as the real server does); default true. */
  batches?: boolean;
}

export class FakeWorkerConn {
  hello: WorkerHello | undefined;
  /** Every message, with a WorkerBatch recorded as the results and credits it carries. */
  readonly received: ConnectRequest[] = [];
  /** WorkerBatch messages received, as sent. */
  readonly batches: ConnectRequest[] = [];
  /** Credits granted (hello capacity + credits) minus assignments sent. */
  outstanding = 0;
  /** Runs assigned on this stream and not yet finished from the server's view. */
  readonly active = new Set<string>();
  /** The largest outstanding + active seen: what the worker committed to at once. */
  peakCommitment = 0;
  drained = false;
  ended = false;

  constructor(
    readonly index: number,
    private readonly call: ServerDuplexStream<ConnectRequest, ConnectResponse>,
    private readonly server: FakeWorkerServer,
  ) {}

  send(msg: ConnectResponse['message']): void {
    if (!this.ended) this.call.write({ message: msg });
  }

  /** Sends an assignment (regardless of credits; the caller decides). */
  assign(partial: Partial<RunAssignment> & { runId: string }): RunAssignment {
    const a = this.server.assignment(partial);
    this.outstanding -= 1;
    this.active.add(a.runId);
    this.note();
    this.send({ $case: 'assignment', assignment: a });
    return a;
  }

  /** Sends several assignments in one RunAssignments message. */
  assignMany(partials: Array<Partial<RunAssignment> & { runId: string }>): RunAssignment[] {
    const list = partials.map((p) => this.server.assignment(p));
    for (const a of list) {
      this.outstanding -= 1;
      this.active.add(a.runId);
    }
    this.note();
    this.send({ $case: 'assignments', assignments: { assignments: list } });
    return list;
  }

  /** Acknowledges several results in one ResultAcks message. */
  ackMany(results: RunResult[]): void {
    this.send({ $case: 'resultAcks', resultAcks: { acks: results.map((r) => ({ runId: r.runId, fencingToken: r.fencingToken, accepted: true, reason: '' })) } });
  }

  cancel(runId: string, fencingToken: number, reason = 'cancelled by test'): void {
    this.active.delete(runId);
    this.send({ $case: 'cancel', cancel: { runId, fencingToken, reason } });
  }

  leaseLost(runId: string, fencingToken: number, reason = 'expired'): void {
    this.active.delete(runId);
    this.send({ $case: 'leaseLost', leaseLost: { runId, fencingToken, reason } });
  }

  redirect(leaderAddress: string, leaderId = 'leader'): void {
    this.send({ $case: 'redirect', redirect: { leaderId, leaderAddress } });
    this.end();
  }

  ack(result: RunResult, accepted = true, reason = ''): void {
    this.send({ $case: 'resultAck', resultAck: { runId: result.runId, fencingToken: result.fencingToken, accepted, reason } });
  }

  /** Ends the stream cleanly (OK status). */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.call.end();
  }

  /** Fails the stream (UNAVAILABLE), as a dying node would. */
  drop(): void {
    if (this.ended) return;
    this.ended = true;
    this.call.emit('error', { code: status.UNAVAILABLE, details: 'stream dropped by test' });
  }

  heartbeats(): HeldRun[][] {
    return this.received.flatMap((m) => (m.message?.$case === 'heartbeat' ? [m.message.heartbeat.runs] : []));
  }

  note(): void {
    this.peakCommitment = Math.max(this.peakCommitment, this.outstanding + this.active.size);
  }
}

export class FakeWorkerServer {
  readonly conns: FakeWorkerConn[] = [];
  readonly results: RunResult[] = [];
  /** Runs waiting for credits (dispatched in order by dispatch()). */
  readonly pending: Array<Partial<RunAssignment> & { runId: string }> = [];
  private nextToken = 100;
  server!: TestServer;

  constructor(readonly options: FakeWorkerServerOptions = {}) {}

  static async start(options: FakeWorkerServerOptions = {}): Promise<FakeWorkerServer> {
    const fake = new FakeWorkerServer(options);
    fake.server = await startTestServer([[WorkerServiceService, { connect: (call: ServerDuplexStream<ConnectRequest, ConnectResponse>) => fake.onConnect(call) }]], options.port);
    return fake;
  }

  get address(): string {
    return this.server.address;
  }

  /** The latest stream. */
  get conn(): FakeWorkerConn {
    const c = this.conns[this.conns.length - 1];
    if (!c) throw new Error('no worker stream yet');
    return c;
  }

  async waitForConn(count: number, timeoutMs = 5_000): Promise<FakeWorkerConn> {
    await waitFor(() => this.conns.length >= count && this.conns[count - 1]!.hello !== undefined, `worker stream #${count}`, timeoutMs);
    return this.conns[count - 1]!;
  }

  async waitForResults(count: number, timeoutMs = 5_000): Promise<RunResult[]> {
    await waitFor(() => this.results.length >= count, `${count} results (have ${this.results.length})`, timeoutMs);
    return this.results;
  }

  /** Builds an assignment with sensible defaults and a fresh, growing fencing token. */
  assignment(partial: Partial<RunAssignment> & { runId: string }): RunAssignment {
    return {
      jobId: 'job-1',
      taskType: 'work',
      slotUnixMs: 1_700_000_000_000,
      scheduledUnixMs: 1_700_000_000_500,
      attempt: 1,
      fencingToken: this.nextToken++,
      leaseDeadlineUnixMs: Date.now() + 30_000,
      leaseDurationMs: 30_000,
      payload: Buffer.alloc(0),
      executionTimeoutMs: 0,
      manual: false,
      backfilled: false,
      startDelayMs: 0,
      ...partial,
    };
  }

  /** Queues runs and assigns them to the current stream as far as its credits allow. */
  enqueue(...runs: Array<Partial<RunAssignment> & { runId: string }>): void {
    this.pending.push(...runs);
    this.dispatch();
  }

  dispatch(): void {
    const c = this.conns[this.conns.length - 1];
    if (!c || c.ended || c.drained || !c.hello) return;
    while (c.outstanding > 0 && this.pending.length > 0) c.assign(this.pending.shift()!);
  }

  async stop(): Promise<void> {
    for (const c of this.conns) c.ended = true;
    await this.server.stop();
  }

  private onConnect(call: ServerDuplexStream<ConnectRequest, ConnectResponse>): void {
    const conn = new FakeWorkerConn(this.conns.length, call, this);
    this.conns.push(conn);
    call.on('data', (req: ConnectRequest) => this.onRequest(conn, req));
    call.on('error', () => {
      conn.ended = true;
    });
    call.on('end', () => {
      if (!conn.ended) {
        conn.ended = true;
        call.end();
      }
    });
  }

  private onRequest(conn: FakeWorkerConn, req: ConnectRequest): void {
    if (req.message?.$case === 'batch') {
      conn.batches.push(req);
      const { results, credits } = req.message.batch;
      for (const result of results) this.onRequest(conn, { message: { $case: 'result', result } });
      if (credits > 0) this.onRequest(conn, { message: { $case: 'credits', credits: { credits } } });
      return;
    }
    conn.received.push(req);
    const m = req.message;
    switch (m?.$case) {
      case 'hello': {
        conn.hello = m.hello;
        if (this.options.redirectTo) {
          conn.redirect(this.options.redirectTo());
          return;
        }
        conn.outstanding = m.hello.capacity;
        for (const r of m.hello.heldRuns) conn.active.add(r.runId);
        conn.note();
        const split = this.options.reattach?.(m.hello.heldRuns) ?? { adopted: m.hello.heldRuns, rejected: [] };
        for (const r of split.rejected) conn.active.delete(r.runId);
        conn.send({
          $case: 'welcome',
          welcome: {
            nodeId: this.options.nodeId ?? 'fake-leader',
            heartbeatIntervalMs: this.options.heartbeatIntervalMs ?? 0,
            adopted: split.adopted,
            rejected: split.rejected,
            batches: this.options.batches ?? true,
            memberAddresses: this.options.memberAddresses?.() ?? [],
            silenceTimeoutMs: this.options.silenceTimeoutMs ?? 0,
          },
        });
        this.dispatch();
        return;
      }
      case 'credits':
        conn.outstanding += m.credits.credits;
        conn.note();
        this.dispatch();
        return;
      case 'result':
        this.results.push(m.result);
        conn.active.delete(m.result.runId);
        if (this.options.autoAck ?? true) conn.ack(m.result);
        return;
      case 'drain':
        conn.drained = true;
        conn.outstanding = 0;
        return;
      default:
        return;
    }
  }
}
