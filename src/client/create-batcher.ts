// Concurrent createJob calls of one client share CreateJobs calls. A unary call costs each side
// far more CPU than the job it carries (gRPC framing, HTTP/2 streams, one log entry and apply per
// call), so many callers creating at once are served as one batch: one RPC, one putJobs entry per
// chunk on the leader. Nothing waits for company: the calls made within one turn of the event loop
// go out together at the end of it, and a call alone in its turn goes out as a plain CreateJob.
// Where the client has a create stream open to the leader (create-stream.ts), every batch — one
// item or many — goes over it instead of a call of its own.
//
// Each item keeps the semantics of its own createJob: it carries its own idempotency key (only
// keyed calls are batched, so a repeat can never create twice), and any item that does not come
// back created or found — a per-item error, or the whole batch failing — is sent again on its own
// with the same key while its deadline has room. So errors are exactly the plain call's (the same
// typed error, Herald code and details), and the batch only ever saves work.
import { status } from '@grpc/grpc-js';
import type { Job } from '../gen/herald/v1/job.js';
import type { CreateJobRequest, CreateJobsResult } from '../gen/herald/v1/job_service.js';
import { clientError } from './errors.js';

/** What one createJob answers. */
export interface CreateAnswer {
  job: Job;
  created: boolean;
}

export interface CreateBatcherDeps {
  /** Sends one CreateJobs call (with the client's retries) that must finish by `deadline` (epoch ms). */
  many(items: CreateJobRequest[], deadline: number): Promise<CreateJobsResult[]>;
  /**
   * Sends a batch (of one or more) over the client's create stream, to finish by `deadline`
   * (undefined when it has none to use). Absent: batches go as CreateJobs calls.
   */
  stream?: { send(items: CreateJobRequest[], deadline: number): Promise<CreateJobsResult[]> | undefined } | undefined;
  /** Sends one plain CreateJob call that must finish by `deadline` (epoch ms). */
  one(item: CreateJobRequest, deadline: number): Promise<CreateAnswer>;
  /** Defers `fn` to the end of this turn of the event loop (setImmediate; injectable for tests). */
  defer?: (fn: () => void) => void;
}

interface Waiting {
  item: CreateJobRequest;
  deadline: number;
  resolve(answer: CreateAnswer): void;
  reject(err: unknown): void;
}

/** Items per CreateJobs: far below the server's 10,000, large enough to amortise a call. */
export const BATCH_MAX_ITEMS = 256;
/** Spec bytes per CreateJobs (estimated from the payload; the server takes up to 64 MiB). */
export const BATCH_MAX_BYTES = 4 << 20;
// What a spec costs beyond its payload, as an upper-end estimate (schedule, labels, names).
const ITEM_OVERHEAD_BYTES = 1024;

export class CreateBatcher {
  private waiting: Waiting[] = [];
  private readonly defer: (fn: () => void) => void;

  constructor(private readonly deps: CreateBatcherDeps) {
    this.defer = deps.defer ?? ((fn) => void setImmediate(fn));
  }

  /** Creates `item` (which carries an idempotency key), in a batch with its neighbours in time. */
  create(item: CreateJobRequest, deadline: number): Promise<CreateAnswer> {
    return new Promise<CreateAnswer>((resolve, reject) => {
      if (this.waiting.length === 0) this.defer(() => this.flush());
      this.waiting.push({ item, deadline, resolve, reject });
    });
  }

  private flush(): void {
    const all = this.waiting;
    this.waiting = [];
    let batch: Waiting[] = [];
    let bytes = 0;
    for (const w of all) {
      const b = (w.item.spec?.payload.length ?? 0) + ITEM_OVERHEAD_BYTES;
      if (batch.length > 0 && (batch.length >= BATCH_MAX_ITEMS || bytes + b > BATCH_MAX_BYTES)) {
        void this.send(batch);
        batch = [];
        bytes = 0;
      }
      batch.push(w);
      bytes += b;
    }
    void this.send(batch);
  }

  private async send(batch: Waiting[]): Promise<void> {
    // The batch may not outlive its most hurried item; the others get their own time back below.
    const deadline = Math.min(...batch.map((w) => w.deadline));
    const items = batch.map((w) => w.item);
    let results: CreateJobsResult[] | undefined;
    let batchError: unknown;
    let sent = false;
    const streamed = this.deps.stream?.send(items, deadline);
    if (streamed !== undefined) {
      try {
        results = await streamed;
        sent = true;
      } catch (e) {
        // A node without the stream (an older build) did nothing: the batch goes as a call instead.
        if ((e as { grpcCode?: unknown }).grpcCode !== status.UNIMPLEMENTED) {
          batchError = e;
          sent = true;
        }
      }
    }
    if (!sent) {
      // Alone (in its turn, or split off by size): a plain CreateJob.
      if (batch.length === 1) {
        const w = batch[0]!;
        this.deps.one(w.item, w.deadline).then(w.resolve, w.reject);
        return;
      }
      try {
        results = await this.deps.many(items, deadline);
      } catch (e) {
        batchError = e;
      }
    }
    // A malformed answer is treated like a failed call: every item goes again on its own.
    if (results !== undefined && results.length !== batch.length) results = undefined;
    batch.forEach((w, i) => {
      const r = results?.[i];
      if (r !== undefined && r.code === status.OK && r.job !== undefined) {
        w.resolve({ job: r.job, created: r.created });
        return;
      }
      // Not known to be done: on its own, same key, for the exact answer of a plain call — while
      // its deadline has room; past it, the answer the batch got is all there is.
      if (w.deadline > Date.now()) this.deps.one(w.item, w.deadline).then(w.resolve, w.reject);
      else w.reject(batchError ?? clientError({ grpcCode: r?.code ?? status.UNKNOWN, message: r?.message || 'the batch answered nothing for this item' }));
    });
  }
}
