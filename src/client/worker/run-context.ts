// What a handler sees: the run, its attempt and fencing token, an AbortSignal, a logger, and a
// way to heartbeat early. Handlers make side effects idempotent by run id or fencing token
// (DESIGN §3 step 4), so both are first-class here rather than buried in the assignment.
import type { RunAssignment } from '../../gen/herald/v1/worker_service.js';
import type { ClientLogger } from '../logger.js';

export interface RunInfo {
  id: string;
  jobId: string;
  taskType: string;
  /** The slot this run is for (epoch ms, before jitter). */
  slotMs: number;
  /** The slot plus the job's jitter (epoch ms). */
  scheduledMs: number;
  /** The job's payload bytes. */
  payload: Buffer;
  /** Created by TriggerJob. */
  manual: boolean;
  /** Created by BackfillJob. */
  backfilled: boolean;
  /** The lease duration; heartbeats (sent automatically) renew it. */
  leaseDurationMs: number;
  /** The attempt is aborted after this long; 0 means no limit. */
  executionTimeoutMs: number;
}

export interface RunContext {
  run: RunInfo;
  /** 1 for the first attempt. */
  attempt: number;
  /** Only grows across attempts; pass it to systems that reject stale writers. */
  fencingToken: number;
  /**
   * Fires when the run must stop: lease lost, cancelled, execution timeout, or forced shutdown.
   * `signal.reason` is a RunAbortedError saying which. After lease loss or cancel the outcome
   * is not reported, so stop promptly and do not commit side effects.
   */
  signal: AbortSignal;
  logger: ClientLogger;
  /** Sends a heartbeat for this run now (heartbeats are also sent periodically). */
  heartbeat(): void;
  /** The payload parsed as JSON (throws if it is not JSON). */
  json<T = unknown>(): T;
}

/** What a handler may return: nothing, bytes, a string (UTF-8) or a JSON-serialisable value. */
export type HandlerOutput = void | undefined | null | Uint8Array | string | number | boolean | object;

export type Handler = (ctx: RunContext) => HandlerOutput | Promise<HandlerOutput>;

export function runInfo(a: RunAssignment): RunInfo {
  return {
    id: a.runId,
    jobId: a.jobId,
    taskType: a.taskType,
    slotMs: a.slotUnixMs,
    scheduledMs: a.scheduledUnixMs,
    payload: a.payload,
    manual: a.manual,
    backfilled: a.backfilled,
    leaseDurationMs: a.leaseDurationMs,
    executionTimeoutMs: a.executionTimeoutMs,
  };
}

/** What a run's context asks of its worker, only when the handler uses it. */
export interface RunContextOwner {
  /** A logger bound to the run (ctx.logger, made on first use). */
  runLogger(a: RunAssignment): ClientLogger;
  /** Sends a heartbeat for the run now (ctx.heartbeat()). */
  heartbeat(a: RunAssignment): void;
}

/**
 * The context a handler gets. A class, not an object literal: a literal with getters and methods
 * made an accessor pair and a closure each per run, which cost more than running a no-op handler.
 * Its signal and logger are made on first use (`signal` from the run's RunAbort, `logger` by the
 * owner): most handlers touch neither. `heartbeat` and `json` are getters handing out functions
 * bound to the run (made on first use), so they still work destructured from the context.
 */
export class HandlerContext implements RunContext {
  readonly run: RunInfo;
  readonly attempt: number;
  readonly fencingToken: number;
  private loggerValue: ClientLogger | undefined;
  private heartbeatFn: (() => void) | undefined;
  private jsonFn: (<T = unknown>() => T) | undefined;

  constructor(
    private readonly assignment: RunAssignment,
    private readonly abort: { readonly signal: AbortSignal },
    private readonly owner: RunContextOwner,
  ) {
    this.run = runInfo(assignment);
    this.attempt = assignment.attempt;
    this.fencingToken = assignment.fencingToken;
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  get logger(): ClientLogger {
    return (this.loggerValue ??= this.owner.runLogger(this.assignment));
  }

  get heartbeat(): () => void {
    return (this.heartbeatFn ??= () => this.owner.heartbeat(this.assignment));
  }

  get json(): <T = unknown>() => T {
    return (this.jsonFn ??= <T>(): T => JSON.parse(this.run.payload.toString('utf8')) as T);
  }
}

/** The output of a handler that returned nothing (shared: outputs are only read). */
const NO_OUTPUT = Buffer.alloc(0);

/** Encodes a handler's return value as the run's output bytes. */
export function encodeOutput(value: HandlerOutput): Buffer {
  if (value === undefined || value === null) return NO_OUTPUT;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  return Buffer.from(JSON.stringify(value) ?? '', 'utf8');
}
