// From an assignment to the outcome the worker reports: a run is held, waits for its instant or a
// free slot, runs its handler, and its outcome goes to the outbox. Each step moves the run's own
// HeldRun (held-runs.ts) to its next phase.
//
// Keeps these of the worker's promises:
// - Never more runs executing than `concurrency`: a run beyond the free slots is queued (the
//   server may assign more than the credits when a stream is replaced) and started when one frees.
// - A run whose lease is gone (lease_lost, rejected in welcome, cancelled, newer claim) is aborted
//   through its AbortSignal and its outcome is never reported.
import type { RunAssignment, RunFailure, RunResult } from '../../gen/herald/v1/worker_service.js';
import { childLogger, type ClientLogger } from '../logger.js';
import { HandlerError, type AbortCause } from './handler-errors.js';
import type { HeldRun, HeldRuns } from './held-runs.js';
import { HandlerContext, encodeOutput, type Handler, type HandlerOutput, type RunContextOwner } from './run-context.js';

const MAX_MESSAGE_CHARS = 4_096;
/** A start delay is at most this (the server's lead is ≤ 1 s; a bogus one must not park a run for long). */
const MAX_START_DELAY_MS = 60_000;
const MAX_OUTPUT_BYTES = 64 * 1024;
/** The outcome of a handler that returned nothing: shared, as outcomes are only read (encoded). */
const EMPTY_SUCCESS: RunResult['outcome'] = { $case: 'success', success: { output: encodeOutput(undefined) } };

function isPromiseLike(v: HandlerOutput | Promise<HandlerOutput>): v is PromiseLike<HandlerOutput> {
  return typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';
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

/** Where outcomes and credits go (the WorkerOutbox). */
export interface RunOutbox {
  creditUsed(): void;
  topUp(): void;
  sendResult(result: RunResult): void;
}

export class RunExecutor {
  /** Runs whose handler starts in the next microtask (execute). */
  private starting: HeldRun[] = [];
  /** What handler contexts call back into; one for all runs, so a run costs no closures. */
  private readonly contextOwner: RunContextOwner;

  constructor(
    private readonly workerId: string,
    private readonly handlers: Record<string, Handler>,
    private readonly runs: HeldRuns,
    private readonly outbox: RunOutbox,
    private readonly logger: ClientLogger,
    leases: { heartbeatRun(a: RunAssignment): void },
  ) {
    this.contextOwner = {
      runLogger: (a) => this.runLogger(a),
      heartbeat: (a) => leases.heartbeatRun(a),
    };
  }

  onAssignment(a: RunAssignment): void {
    this.outbox.creditUsed();
    const existing = this.runs.get(a.runId);
    if (existing) {
      if (existing.assignment.fencingToken === a.fencingToken) return; // a duplicate delivery
      // A newer claim of a run we still hold: our lease is gone by definition.
      this.runs.end(existing, 'lease-lost', 'run claimed again with a newer fencing token');
    }
    const h = this.runs.add(a);
    if (!this.handlers[a.taskType]) {
      this.outbox.sendResult(
        h.report({
          $case: 'failure',
          failure: { retryable: true, errorType: 'NoHandler', message: `no handler for task type "${a.taskType}" on worker ${this.workerId}` },
        }),
      );
      this.outbox.topUp();
      return;
    }
    if (a.startDelayMs > 0) {
      // Handed out ahead of its instant: held (and heartbeated) until then, on the monotonic clock.
      h.wait(Math.min(a.startDelayMs, MAX_START_DELAY_MS), this.admit);
      return;
    }
    this.admit(h);
  }

  /** Starts the run, or queues it when every slot is busy. */
  private readonly admit = (h: HeldRun): void => {
    if (this.runs.slotsTaken()) {
      // More assignments than credits: keep the lease (heartbeats) and run it when a slot frees.
      this.logger.warn({ runId: h.assignment.runId }, 'assignment beyond capacity; queued');
      h.enqueue();
      return;
    }
    this.execute(h);
  };

  private execute(h: HeldRun): void {
    const a = h.assignment;
    h.start();
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
  private runHandler(h: HeldRun): void {
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

  private handlerReturned(h: HeldRun, value: HandlerOutput): void {
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

  private handlerFailed(h: HeldRun, err: unknown): void {
    const outcome: RunResult['outcome'] = { $case: 'failure', failure: failureOf(err, h.abort.cause) };
    this.runLogger(h.assignment).debug({ err: String(err) }, 'handler failed');
    this.handlerSettled(h, outcome);
  }

  private handlerSettled(h: HeldRun, outcome: RunResult['outcome']): void {
    try {
      // Only a run still held reports: after lease loss or cancel the outcome is not ours.
      const result = h.handlerSettled(outcome);
      if (result) this.outbox.sendResult(result);
      this.startQueued();
      this.outbox.topUp();
      this.runs.checkIdle();
    } catch (err) {
      this.logger.error({ err: String(err) }, 'worker bookkeeping failed');
    }
  }

  private startQueued(): void {
    for (let h = this.runs.nextQueued(); h; h = this.runs.nextQueued()) this.execute(h);
  }
}
