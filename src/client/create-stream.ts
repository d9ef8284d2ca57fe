// createJob's batches over one JobService.CreateJobsStream to the leader instead of a unary
// CreateJob(s) call each: a batch then costs two messages on a stream that is already open, not
// a call's setup, headers and trailers each way (most of a lone write's time on the wire).
//
// Nothing here decides an answer the plain calls would not give: every item carries an
// idempotency key, and whatever does not come back created or found — a per-item error, a batch
// refused as a whole, a stream that broke, went silent or was outlived by the batch's deadline —
// is handed back to the batcher, which sends each such item again on its own as a plain call with
// its key (create-batcher.ts). The stream only ever saves work.
//
// One stream at a time, to the leader as the router knows it; when the leader moves (an answer
// names another one, or the router learned it elsewhere) new batches open a stream there, and
// the old one is half-closed once it has answered what it holds. A stream with nothing in the
// works for IDLE_CLOSE_MS is closed, so an idle client holds no call open. A server without the
// method (UNIMPLEMENTED, an older node) turns streaming off for this client.
import { status, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import type { CreateJobRequest, CreateJobsResult, CreateJobsStreamRequest, CreateJobsStreamResponse } from '../gen/herald/v1/job_service.js';
import { clientError, fromServiceError, isServiceError, type HeraldClientError } from './errors.js';
import type { LeaderRouter } from './leader-router.js';
import type { ClientLogger } from './logger.js';

/** A stream with nothing in the works is closed after this long. */
export const IDLE_CLOSE_MS = 5_000;
/** The longest a Node timer waits (longer ones fire at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface CreateStreamDeps {
  /** Opens a CreateJobsStream to `address`. */
  open(address: string): ClientDuplexStream<CreateJobsStreamRequest, CreateJobsStreamResponse>;
  /**
   * Where streams go (the leader as it knows it; none known: no stream, plain calls discover it),
   * and what it learns from them: a leader an answer named, a node whose stream broke, a node
   * that took batches and said nothing for `silenceMs`.
   */
  router: Pick<LeaderRouter, 'leaderAddress' | 'noteLeader' | 'noteFailure' | 'noteSilent'>;
  /** How long a stream with batches in the works may stay quiet before it is given up. */
  silenceMs: number;
  logger: ClientLogger;
}

interface Pending {
  resolve(results: CreateJobsResult[]): void;
  reject(err: HeraldClientError): void;
  timer: NodeJS.Timeout | undefined;
  size: number;
}

/** One open CreateJobsStream. */
class OpenStream {
  readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private quietSince = 0;
  private silenceTimer: NodeJS.Timeout | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private retired = false;
  private over = false;

  constructor(
    readonly address: string,
    private readonly call: ClientDuplexStream<CreateJobsStreamRequest, CreateJobsStreamResponse>,
    private readonly deps: CreateStreamDeps,
    private readonly onOver: (s: OpenStream, err: ServiceError | undefined) => void,
  ) {
    call.on('data', (res: CreateJobsStreamResponse) => this.answered(res));
    call.on('error', (err: ServiceError) => this.end(err));
    // The server ends its side only after answering everything it read (or with an error).
    call.on('status', (s: { code: status }) => {
      if (s.code === status.OK) this.end(undefined);
    });
  }

  get isOver(): boolean {
    return this.over || this.retired;
  }

  send(items: CreateJobRequest[], deadline: number): Promise<CreateJobsResult[]> {
    const batchId = this.nextId++;
    // A deadline beyond what a timer holds (or none) leaves the bound to the server.
    const left = deadline - Date.now();
    const timeoutMs = Number.isFinite(left) && left < MAX_TIMER_MS ? Math.max(1, Math.floor(left)) : 0;
    return new Promise<CreateJobsResult[]>((resolve, reject) => {
      // The batch's own deadline: past it, its items fail with what a plain call would (a late
      // answer is ignored; its keys make any later attempt find the jobs).
      const timer =
        timeoutMs > 0
          ? setTimeout(() => {
              if (!this.pending.delete(batchId)) return;
              reject(clientError({ grpcCode: status.DEADLINE_EXCEEDED, message: `no answer from ${this.address} within the call's deadline (${timeoutMs} ms)`, address: this.address }));
              this.maybeIdle();
            }, timeoutMs).unref()
          : undefined;
      if (this.pending.size === 0) this.quietSince = Date.now();
      this.pending.set(batchId, { resolve, reject, timer, size: items.length });
      clearTimeout(this.idleTimer);
      this.armSilence();
      this.call.write({ batchId, items, timeoutMs });
    });
  }

  /** No new batches: the stream half-closes once its batches are answered. */
  retire(): void {
    if (this.retired) return;
    this.retired = true;
    clearTimeout(this.idleTimer);
    this.call.end();
  }

  /** Ends the stream now; its batches fail with `err`. */
  cancel(err: HeraldClientError): void {
    if (this.over) return;
    this.over = true;
    this.failAll(err);
    this.call.cancel();
  }

  private answered(res: CreateJobsStreamResponse): void {
    this.quietSince = Date.now();
    if (res.leaderAddress !== '' && res.leaderAddress !== this.address) this.deps.router.noteLeader(res.leaderAddress);
    const p = this.pending.get(res.batchId);
    if (!p) return; // its deadline passed
    this.pending.delete(res.batchId);
    clearTimeout(p.timer);
    if (res.code === status.OK && res.results.length === p.size) p.resolve(res.results);
    else {
      p.reject(
        clientError({
          grpcCode: res.code === status.OK ? status.INTERNAL : res.code,
          message: res.code === status.OK ? `the stream answered ${res.results.length} results for ${p.size} items` : res.message,
          heraldCode: res.errorCode || undefined,
          leaderAddress: res.leaderAddress || undefined,
          address: this.address,
        }),
      );
    }
    this.maybeIdle();
  }

  private maybeIdle(): void {
    if (this.pending.size > 0 || this.isOver) return;
    clearTimeout(this.silenceTimer);
    this.silenceTimer = undefined;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.retire(), IDLE_CLOSE_MS);
    this.idleTimer.unref();
  }

  private armSilence(): void {
    if (this.silenceTimer !== undefined) return;
    const wait = Math.max(1, this.quietSince + this.deps.silenceMs - Date.now());
    this.silenceTimer = setTimeout(() => {
      this.silenceTimer = undefined;
      if (this.pending.size === 0 || this.over) return;
      if (Date.now() - this.quietSince < this.deps.silenceMs) return this.armSilence();
      this.deps.router.noteSilent(this.address);
      this.deps.logger.debug({ address: this.address, silenceMs: this.deps.silenceMs }, 'create stream silent; its batches go as plain calls');
      this.cancel(clientError({ grpcCode: status.DEADLINE_EXCEEDED, message: `${this.address} sent no answer within ${this.deps.silenceMs} ms (connection up, node silent)`, address: this.address }));
    }, wait);
    this.silenceTimer.unref();
  }

  private end(err: ServiceError | undefined): void {
    clearTimeout(this.silenceTimer);
    clearTimeout(this.idleTimer);
    if (!this.over) {
      this.over = true;
      const e = err !== undefined && isServiceError(err)
        ? fromServiceError(err, this.address)
        : clientError({ grpcCode: status.UNAVAILABLE, message: `the create stream to ${this.address} ended with batches unanswered`, address: this.address });
      this.failAll(e);
    }
    this.onOver(this, err);
  }

  private failAll(err: HeraldClientError): void {
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(err);
    }
  }
}

export class CreateStream {
  private current: OpenStream | undefined;
  private readonly retiring = new Set<OpenStream>();
  private disabled = false;

  constructor(private readonly deps: CreateStreamDeps) {}

  /**
   * Sends `items` as one batch over the leader's stream; undefined when there is no stream to use
   * (no leader known yet, or the cluster does not serve the method): send a plain call instead.
   */
  send(items: CreateJobRequest[], deadline: number): Promise<CreateJobsResult[]> | undefined {
    if (this.disabled) return undefined;
    const leader = this.deps.router.leaderAddress;
    if (leader === undefined) return undefined;
    let s = this.current;
    if (s !== undefined && (s.address !== leader || s.isOver)) {
      this.current = undefined;
      if (!s.isOver || s.pending.size > 0) this.retiring.add(s);
      s.retire();
      s = undefined;
    }
    if (s === undefined) {
      let call: ClientDuplexStream<CreateJobsStreamRequest, CreateJobsStreamResponse>;
      try {
        call = this.deps.open(leader);
      } catch {
        return undefined; // the pool is closed: the plain call reports it
      }
      s = this.current = new OpenStream(leader, call, this.deps, (over, err) => this.over(over, err));
    }
    return s.send(items, deadline);
  }

  /** Ends every stream; their batches fail (UNAVAILABLE) and are not sent again. */
  close(): void {
    const err = clientError({ grpcCode: status.CANCELLED, message: 'HeraldClient is closed' });
    for (const s of [...this.retiring, ...(this.current ? [this.current] : [])]) s.cancel(err);
    this.retiring.clear();
    this.current = undefined;
  }

  private over(s: OpenStream, err: ServiceError | undefined): void {
    this.retiring.delete(s);
    if (this.current === s) this.current = undefined;
    if (err === undefined) return;
    if (err.code === status.UNIMPLEMENTED) {
      this.disabled = true;
      this.deps.logger.debug({ address: s.address }, 'the cluster does not serve CreateJobsStream; creating with plain calls');
    } else if (err.code === status.UNAVAILABLE) this.deps.router.noteFailure(s.address);
  }
}

