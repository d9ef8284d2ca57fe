// Worker results into the log: results arriving within a couple of milliseconds share one
// finishRuns command. Each result is answered with a ResultAck once its item is decided; a stale
// one (the FSM's fencing check) with accepted=false and a LeaseLost, so the worker stops.
// A result delivered twice (re-sent after a reconnect, its first ack lost) is recognised from the
// run's recorded attempt and acknowledged as accepted: delivery is at least once, effect once.
import type { ResultAck, RunResult } from '../../gen/herald/v1/worker_service.js';
import { AttemptOutcome } from '../../gen/herald/v1/run.js';
import { finishFailure, finishSuccess, type FinishItem, type RunItemResult } from '../../fsm/index.js';
import type { Dispatcher } from './dispatch/dispatcher.js';
import type { LeaderReads, LeaderTerm } from './leader-term.js';
import type { LeaseTable } from './leases/lease-table.js';
import type { WorkerSession } from './worker-session.js';
import { cancelTimer, timersOf, type LeaderTimers, type TimerHandle } from './leader-timers.js';

const MAX_BATCH = 5_000;
const MAX_TRIES = 3;
const MAX_MESSAGE_CHARS = 4096;

interface Pending {
  session: WorkerSession;
  result: RunResult;
  tries: number;
}

/** Answers of one finishRuns, per worker: written together once every item is decided. */
type Answers = Map<WorkerSession, { acks: ResultAck[]; lost: ResultAck[] }>;

/**
 * Whether an attempt that already ended the way `item` would end it: the same result delivered
 * again. An attempt the leader ended (TIMED_OUT past its execution timeout) does not match a
 * worker's success or ordinary failure reported afterwards: that one is stale.
 */
function recordedAs(outcome: AttemptOutcome, item: FinishItem): boolean {
  if (item.succeeded) return outcome === AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED;
  return outcome === (item.timedOut ? AttemptOutcome.ATTEMPT_OUTCOME_TIMED_OUT : AttemptOutcome.ATTEMPT_OUTCOME_FAILED);
}

export function finishItemOf(r: RunResult): FinishItem {
  const o = r.outcome;
  if (o?.$case === 'success') return finishSuccess(r.runId, r.fencingToken, o.success.output);
  const f = o?.$case === 'failure' ? o.failure : { retryable: true, errorType: 'NoOutcome', message: 'the worker reported no outcome' };
  return finishFailure(r.runId, r.fencingToken, {
    type: f.errorType.slice(0, 256),
    message: f.message.slice(0, MAX_MESSAGE_CHARS),
    retryable: f.retryable,
    timedOut: f.errorType === 'ExecutionTimeout',
  });
}

/** What the result batcher uses of its term and of the other components. */
export interface ResultBatcherDeps extends Pick<LeaderTerm, 'config' | 'log' | 'now' | 'active' | 'propose'> {
  readonly timers?: LeaderTimers;
  readonly reads: Pick<LeaderReads, 'getRun' | 'unsafe'>;
  readonly leases: LeaseTable;
  /** Finished runs freed worker slots: a dispatch round soon. */
  readonly dispatcher: Pick<Dispatcher, 'wake'>;
}

export class ResultBatcher {
  private pending: Pending[] = [];
  private timer: TimerHandle | undefined;
  private stopped = false;
  private readonly timers: LeaderTimers;
  /** One finishRuns in flight at a time: results arriving meanwhile form the next (larger) batch. */
  private flushing = false;
  constructor(private readonly ctx: ResultBatcherDeps) {
    this.timers = timersOf(ctx);
  }

  add(session: WorkerSession, result: RunResult): void {
    if (this.stopped) return;
    const lease = this.ctx.leases.get(result.runId);
    // The accept-stale-tokens negative control lets such a report through to the FSM.
    if (lease && lease.workerId !== session.workerId && !this.ctx.reads.unsafe.acceptStaleTokens) {
      // Tokens are guessable Raft indexes; only the holder may report.
      const answers: Answers = new Map();
      this.ack(answers, session, result, false, `run is held by worker ${lease.workerId}, not ${session.workerId}`, true);
      this.send(answers);
      return;
    }
    // The handler is done: the run stops counting against the dispatch limits now, not once its
    // result commits (a limited task type would otherwise wait a commit round per run). Its
    // lease stays until the result commits.
    if (lease && lease.fencingToken === result.fencingToken) this.ctx.leases.running.remove(result.runId);
    this.pending.push({ session, result, tries: 0 });
    if (this.pending.length >= MAX_BATCH && !this.flushing) void this.flush();
    else this.timer ??= this.timers.after(this.ctx.config.resultBatchMs, () => void this.flush());
  }

  stop(): void {
    this.stopped = true;
    cancelTimer(this.timers, this.timer);
    this.pending = [];
  }

  private async flush(): Promise<void> {
    cancelTimer(this.timers, this.timer);
    this.timer = undefined;
    if (this.flushing) return; // the running flush picks these up when it is done
    const ctx = this.ctx;
    const batch = this.pending.splice(0, MAX_BATCH);
    if (batch.length === 0 || this.stopped || !ctx.active()) return;
    const now = ctx.now();
    if (now === undefined) {
      this.requeue(batch);
      return;
    }
    this.flushing = true;
    try {
      const res = await ctx.propose({ type: 'finishRuns', nowMs: now, items: batch.map((b) => finishItemOf(b.result)) }, 'runItems', 10_000);
      if (!ctx.active()) return;
      const answers: Answers = new Map();
      // Only a stale-token answer reads the store; the rest settle without a promise each.
      const reads: Promise<void>[] = [];
      for (let i = 0; i < res.items.length; i++) {
        const read = this.settle(answers, batch[i]!, res.items[i]!);
        if (read) reads.push(read);
      }
      if (reads.length > 0) await Promise.all(reads);
      this.send(answers);
      ctx.dispatcher.wake();
    } catch (e) {
      if (!ctx.active() || this.stopped) return; // the worker re-sends to the next leader
      ctx.log.warn({ err: e, results: batch.length }, 'finishRuns failed; retrying');
      this.requeue(batch.filter((b) => ++b.tries < MAX_TRIES));
    } finally {
      this.flushing = false;
      if (this.pending.length > 0 && !this.stopped) void this.flush();
    }
  }

  private requeue(batch: Pending[]): void {
    this.pending.unshift(...batch);
    this.timer ??= this.timers.after(20, () => void this.flush());
  }

  /** Answers one item; a promise only when the answer needs a read first (a stale token). */
  private settle(answers: Answers, p: Pending, r: RunItemResult): Promise<void> | undefined {
    const { session, result } = p;
    const ctx = this.ctx;
    if (!r.error) {
      this.releaseIfOurs(result);
      this.ack(answers, session, result, true, '', false);
      return;
    }
    if (r.error.code === 'STALE_FENCING_TOKEN') {
      const message = r.error.message;
      // The same result delivered twice: the run's attempt with this token already ended the
      // way a result ends it. Acknowledge, so the worker stops re-sending.
      return ctx.reads.getRun(result.runId).then((run) => {
        const attempt = run?.attempts.find((a) => a.fencingToken === result.fencingToken);
        this.releaseIfOurs(result);
        if (attempt && recordedAs(attempt.outcome, finishItemOf(result))) this.ack(answers, session, result, true, '', false);
        else this.ack(answers, session, result, false, message, true);
      });
    }
    this.ack(answers, session, result, false, r.error.message, false);
    return undefined;
  }

  /** The result's lease goes, unless a newer claim of the run holds it by now. */
  private releaseIfOurs(result: RunResult): void {
    if (this.ctx.leases.get(result.runId)?.fencingToken === result.fencingToken) this.ctx.leases.release(result.runId);
  }

  private ack(answers: Answers, session: WorkerSession, result: RunResult, accepted: boolean, reason: string, leaseLost: boolean): void {
    let a = answers.get(session);
    if (!a) answers.set(session, (a = { acks: [], lost: [] }));
    const ack = { runId: result.runId, fencingToken: result.fencingToken, accepted, reason };
    a.acks.push(ack);
    if (leaseLost) a.lost.push(ack);
  }

  /** One ack message per worker (batched for workers that take batches), then any lease-lost notices. */
  private send(answers: Answers): void {
    for (const [session, a] of answers) {
      session.sendAcks(a.acks);
      for (const l of a.lost) {
        session.send({ message: { $case: 'leaseLost', leaseLost: { runId: l.runId, fencingToken: l.fencingToken, reason: l.reason || 'lease lost' } } });
      }
    }
  }
}
