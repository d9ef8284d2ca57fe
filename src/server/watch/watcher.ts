// One watch stream: a cursor into the node's change log, the stream's filter, and the flow
// control between them. Whole batches go out together, many per message, as the events' shared
// bytes concatenated; a write the stream refuses (HTTP/2 flow control) stops the cursor until the
// stream drains. A watcher whose backlog passes its bound, or whose next batch the ring dropped,
// is cut with a status saying from which index to resume.
import { HeraldError } from '../../herald-error.js';
import type { ChangeLog } from './change-log.js';
import { progressField, type ChangeBatch } from './change-batch.js';
import type { CutReason, WatcherStats } from './watch-metrics.js';

/** The byte stream the watcher writes (a gRPC server stream with a pass-through serializer). */
export interface WatchSink {
  write(message: Buffer): boolean;
  once(event: 'drain', fn: () => void): unknown;
  fail(err: HeraldError): void;
}

export interface WatcherLimits {
  /** Changes the watcher may trail the log by before it is cut. */
  maxBacklog: number;
  /** A message closes once it holds this many bytes of events (whole batches only). */
  messageBytes: number;
}

/** Picks a batch's event frames for one watcher. */
export type FrameSelector = (batch: ChangeBatch, out: Uint8Array[]) => number;

export class Watcher {
  private next: number;
  /** Cumulative change count through the last batch sent (or skipped). */
  private seqDone: number;
  /** Every matching change at or below this has been sent. */
  private progress: number;
  private waitingDrain = false;
  private closed = false;
  lastSendMs = 0;

  constructor(
    private readonly log: ChangeLog,
    private readonly sink: WatchSink,
    private readonly select: FrameSelector,
    private readonly limits: WatcherLimits,
    fromIndex: number,
    private readonly nowMs: () => number,
    private readonly stats?: WatcherStats,
  ) {
    this.next = log.batchAfter(fromIndex);
    const first = log.batch(this.next);
    this.seqDone = first ? first.endSeq - first.size : log.totalSeq;
    this.progress = fromIndex;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  get progressIndex(): number {
    return this.progress;
  }

  /** Sends what is pending, as far as the stream takes it. */
  pump(): void {
    if (this.closed) return;
    if (this.next < this.log.startBatchNo) {
      return this.cut('dropped', `the change log dropped changes this watcher had not been sent yet; resume from index ${this.progress}`);
    }
    if (this.waitingDrain) {
      const behind = this.log.totalSeq - this.seqDone;
      if (behind > this.limits.maxBacklog) {
        this.cut('too_slow', `watcher fell behind by ${behind} events; resume from index ${this.progress}`);
      }
      return;
    }
    const end = this.log.endBatchNo;
    let frames: Uint8Array[] = [];
    let bytes = 0;
    while (this.next < end) {
      const b = this.log.batch(this.next)!;
      bytes += this.select(b, frames);
      this.next++;
      this.seqDone = b.endSeq;
      this.progress = b.index;
      if (bytes >= this.limits.messageBytes) {
        if (!this.send(frames, this.progress)) return;
        frames = [];
        bytes = 0;
      }
    }
    // Caught up: changes up to the log's end (no-op applies included) are covered.
    if (this.log.lastIndex > this.progress) this.progress = this.log.lastIndex;
    if (frames.length > 0) this.send(frames, this.progress);
  }

  /** A progress-only message when nothing went out for `idleMs` (idle watchers learn how far they are). */
  tick(idleMs: number): void {
    if (this.closed || this.waitingDrain || this.nowMs() - this.lastSendMs < idleMs) return;
    this.pump();
    if (this.closed || this.waitingDrain || this.nowMs() - this.lastSendMs < idleMs) return;
    this.send([], this.progress);
  }

  /** The first message: where the stream starts. */
  start(): void {
    this.send([], this.progress);
    this.pump();
  }

  /** Ends the watcher; with `err` the stream fails with it (`reason` says why, for the metrics). */
  close(err?: HeraldError, reason?: CutReason): void {
    if (this.closed) return;
    this.closed = true;
    if (reason) this.stats?.cut(reason);
    if (err) this.sink.fail(err);
  }

  private cut(reason: CutReason, message: string): void {
    this.close(new HeraldError('WATCHER_TOO_SLOW', message, { resumeIndex: this.progress }), reason);
  }

  /** false when the stream asked to wait (the watcher resumes on drain). */
  private send(frames: Uint8Array[], progress: number): boolean {
    if (frames.length > 0) this.stats?.sent(frames.length);
    frames.push(progressField(progress));
    const ok = this.sink.write(Buffer.concat(frames));
    this.lastSendMs = this.nowMs();
    if (ok) return true;
    this.waitingDrain = true;
    this.sink.once('drain', () => {
      this.waitingDrain = false;
      this.pump();
    });
    return false;
  }
}
