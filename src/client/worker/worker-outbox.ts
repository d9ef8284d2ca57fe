// What the worker sends about its runs on the welcomed stream: results and credits. A message per
// result and per credit cost the worker and the leader more than the results themselves, so with a
// server that takes WorkerBatch messages (said so in its welcome) one turn of the event loop's
// results and credits go out together.
//
// Keeps the promise that never more runs execute than `concurrency`: credits are granted only for
// free slots not yet granted (hello capacity + credits ≤ free slots), and in a batch the results go
// before the credits that the slots they freed allow, so the server's own count never exceeds
// concurrency either.
import type { RunResult } from '../../gen/herald/v1/worker_service.js';
import type { WorkerStream } from './worker-stream.js';

/** A WorkerBatch is cut at about this many bytes of outputs and messages. */
export const MAX_BATCH_BYTES = 1 << 20;

/** What the outbox needs to know of the worker: credits are granted only while it is 'running'. */
export interface OutboxOwner {
  readonly state: string;
}

export class WorkerOutbox {
  /** The welcomed stream results and credits go to; undefined while there is none. */
  private stream: WorkerStream | undefined;
  /** Credits granted on the current stream and not yet used by an assignment. */
  private outstanding = 0;
  /** The server of the current stream takes WorkerBatch messages (said so in its welcome). */
  private serverBatches = false;
  /** Results and credits of the current turn of the event loop, sent as one WorkerBatch. */
  private pending: { stream: WorkerStream; results: RunResult[]; credits: number } | undefined;

  constructor(
    private readonly owner: OutboxOwner,
    /** Slots neither running, queued nor waiting (HeldRuns). */
    private readonly runs: { freeSlots(): number },
  ) {}

  /** A new stream opens: returns the capacity its hello offers (the free slots, while running). */
  streamOpened(): number {
    this.serverBatches = false;
    this.pending = undefined;
    const free = this.owner.state === 'running' ? this.runs.freeSlots() : 0;
    this.outstanding = free;
    return free;
  }

  /** The stream was welcomed: results and credits go to it from now on. */
  streamWelcomed(stream: WorkerStream, batches: boolean): void {
    this.stream = stream;
    this.serverBatches = batches;
  }

  /** The stream is gone: its credits with it; results wait for the next welcome. */
  streamLeft(): void {
    this.stream = undefined;
    this.outstanding = 0;
  }

  /** Draining: the server stops assigning, so the credits granted are void. */
  revokeCredits(): void {
    this.outstanding = 0;
  }

  /** An assignment used one credit. */
  creditUsed(): void {
    this.outstanding = Math.max(0, this.outstanding - 1);
  }

  /** Grants credits for free slots not yet granted (never beyond concurrency). */
  topUp(): void {
    if (this.owner.state !== 'running' || !this.stream) return;
    const want = this.runs.freeSlots() - this.outstanding;
    if (want <= 0) return;
    if (this.serverBatches) {
      this.outboxOf(this.stream).credits += want;
      this.outstanding += want;
    } else if (this.stream.send({ message: { $case: 'credits', credits: { credits: want } } })) {
      this.outstanding += want;
    }
  }

  /** Sends a run's result now, or (without a welcomed stream) leaves it to the next welcome. */
  sendResult(result: RunResult): void {
    if (!this.stream) return; // sent after the next welcome
    if (this.serverBatches) this.outboxOf(this.stream).results.push(result);
    else this.stream.send({ message: { $case: 'result', result } });
  }

  /** The outbox of `stream`, flushed at the end of this turn of the event loop. */
  private outboxOf(stream: WorkerStream): { results: RunResult[]; credits: number } {
    if (this.pending?.stream !== stream) {
      this.pending = { stream, results: [], credits: 0 };
      setImmediate(this.flush);
    }
    return this.pending;
  }

  readonly flush = (): void => {
    const o = this.pending;
    this.pending = undefined;
    // A stream replaced meanwhile got its own hello (capacity) and re-sends held results itself.
    if (!o || o.stream !== this.stream) return;
    // Results first (the credits are the slots they freed); big outputs split the batch.
    let from = 0;
    let bytes = 0;
    for (let i = 0; i < o.results.length; i++) {
      const r = o.results[i]!.outcome;
      bytes += 64 + (r?.$case === 'success' ? r.success.output.length : (r?.failure.message.length ?? 0));
      if (bytes < MAX_BATCH_BYTES) continue;
      o.stream.send({ message: { $case: 'batch', batch: { results: o.results.slice(from, i + 1), credits: 0 } } });
      from = i + 1;
      bytes = 0;
    }
    const rest = o.results.slice(from);
    if (rest.length > 0 || o.credits > 0) o.stream.send({ message: { $case: 'batch', batch: { results: rest, credits: o.credits } } });
  };
}
