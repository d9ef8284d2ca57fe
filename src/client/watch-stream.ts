// client.watchRuns / watchJobs: a WatchService stream as an async iterator that outlives any one
// node. It remembers the last progress index the server confirmed and, when a stream breaks (a
// node stopped, a leader change, a network cut, a watcher cut for being slow), opens the next one
// on the same or another endpoint from that index. When the index is gone from the node's change
// log (OUT_OF_RANGE) it yields a 'reset' event — the caller lists the current state again — and
// watches on from the node's present.
//
// A node's change log shows a run's state as each of its applied batches left it, and nodes group
// entries differently: after a resume on another node the first batch can repeat a change already
// seen. The iterator drops those (and writes that left the state as it was, lease renewals say)
// by remembering each run's last state and attempt, for the most recent `dedupeRuns` runs.
import { status, type ClientReadableStream } from '@grpc/grpc-js';
import type { Job } from '../gen/herald/v1/job.js';
import type { Run, RunState } from '../gen/herald/v1/run.js';
import type { JobEvent, RunEvent, WatchJobsResponse, WatchRunsResponse } from '../gen/herald/v1/watch_service.js';
import type { ConnectionPool } from './connection-pool.js';
import { fromServiceError, HeraldClientError, isServiceError } from './errors.js';
import type { ClientLogger } from './logger.js';
import { sleep } from './retry-policy.js';

export interface WatchOptions {
  /** Resume after this applied index (a progress index from an earlier watch); default: from now. */
  fromIndex?: number;
  /** Also yield { type: 'progress' } items (idle streams send one about every second). */
  progress?: boolean;
  /** Ends the iteration. */
  signal?: AbortSignal;
  /** Runs whose last state the iterator remembers to drop repeats; default 100 000. */
  dedupeRuns?: number;
}

export interface WatchRunsFilter {
  jobId?: string;
  taskType?: string;
  states?: RunState[];
  /** Only runs of jobs carrying all of these labels (watch_service.proto: as the stream passes the jobs' changes). */
  labels?: Record<string, string>;
}

export interface WatchJobsFilter {
  jobId?: string;
  taskType?: string;
  labels?: Record<string, string>;
}

export type WatchItem<T> =
  /** A change applied at `index`. */
  | { type: 'change'; index: number; value: T }
  /** Every change at or below `index` has been yielded. */
  | { type: 'progress'; index: number }
  /**
   * The watch could not resume from `fromIndex` (the node's change log no longer reaches back
   * that far): changes may have been missed. List the current state again; the watch goes on
   * from the node's present.
   */
  | { type: 'reset'; fromIndex: number; reason: string };

export type JobChange = { jobId: string; job: Job | undefined; deleted: boolean };

interface Source<Res, Ev> {
  open(address: string, fromIndex: number): ClientReadableStream<Res>;
  events(res: Res): Ev[];
  progress(res: Res): number;
  item(ev: Ev): { index: number; key: string; sig: string; value: unknown };
}

export interface WatchDeps {
  pool: ConnectionPool;
  endpoints: readonly string[];
  logger: ClientLogger;
  isClosed(): boolean;
}

const MAX_BACKOFF_MS = 2_000;

export function watchRuns(deps: WatchDeps, filter: WatchRunsFilter, opts: WatchOptions): AsyncGenerator<WatchItem<Run>> {
  const source: Source<WatchRunsResponse, RunEvent> = {
    open: (address, fromIndex) =>
      deps.pool.watch(address).watchRuns({ jobId: filter.jobId ?? '', taskType: filter.taskType ?? '', states: filter.states ?? [], labels: filter.labels ?? {}, fromIndex }),
    events: (res) => res.events,
    progress: (res) => res.progressIndex,
    item: (ev) => ({ index: ev.index, key: ev.run!.id, sig: `${ev.run!.state}/${ev.run!.attempt}/${ev.run!.fencingToken}`, value: ev.run! }),
  };
  return watch(deps, source, opts) as AsyncGenerator<WatchItem<Run>>;
}

export function watchJobs(deps: WatchDeps, filter: WatchJobsFilter, opts: WatchOptions): AsyncGenerator<WatchItem<JobChange>> {
  const source: Source<WatchJobsResponse, JobEvent> = {
    open: (address, fromIndex) => deps.pool.watch(address).watchJobs({ jobId: filter.jobId ?? '', taskType: filter.taskType ?? '', labels: filter.labels ?? {}, fromIndex }),
    events: (res) => res.events,
    progress: (res) => res.progressIndex,
    item: (ev) => ({
      index: ev.index,
      key: ev.jobId,
      sig: ev.deleted ? 'deleted' : `${ev.job?.version ?? 0}/${ev.job?.state ?? 0}`,
      value: { jobId: ev.jobId, job: ev.job, deleted: ev.deleted } satisfies JobChange,
    }),
  };
  return watch(deps, source, opts) as AsyncGenerator<WatchItem<JobChange>>;
}

async function* watch<Res, Ev>(deps: WatchDeps, source: Source<Res, Ev>, opts: WatchOptions): AsyncGenerator<WatchItem<unknown>> {
  let cursor = opts.fromIndex ?? 0;
  let endpoint = 0;
  let failures = 0;
  const seen = new Map<string, string>();
  const maxSeen = opts.dedupeRuns ?? 100_000;
  while (!opts.signal?.aborted && !deps.isClosed()) {
    const address = deps.endpoints[endpoint % deps.endpoints.length]!;
    const stream = source.open(address, cursor);
    const abort = (): void => stream.cancel();
    opts.signal?.addEventListener('abort', abort, { once: true });
    let failure: HeraldClientError | undefined;
    try {
      for await (const res of stream as AsyncIterable<Res>) {
        failures = 0;
        const out: WatchItem<unknown>[] = [];
        for (const ev of source.events(res)) {
          const it = source.item(ev);
          if (seen.get(it.key) === it.sig) continue;
          seen.delete(it.key); // re-inserted last: the map's order is recency
          seen.set(it.key, it.sig);
          if (seen.size > maxSeen) seen.delete(seen.keys().next().value!);
          out.push({ type: 'change', index: it.index, value: it.value });
        }
        cursor = Math.max(cursor, source.progress(res));
        for (const item of out) yield item;
        if (opts.progress) yield { type: 'progress', index: cursor };
      }
    } catch (e) {
      if (!isServiceError(e)) throw e;
      failure = fromServiceError(e, address);
    } finally {
      opts.signal?.removeEventListener('abort', abort);
      stream.cancel();
    }
    if (opts.signal?.aborted || deps.isClosed()) return;
    if (failure?.grpcCode === status.OUT_OF_RANGE) {
      yield { type: 'reset', fromIndex: cursor, reason: failure.message };
      cursor = 0;
      continue;
    }
    if (failure && (failure.grpcCode === status.INVALID_ARGUMENT || failure.grpcCode === status.UNIMPLEMENTED)) throw failure;
    // A slow watcher is cut: resume on the same node at once. Anything else: the next node.
    if (failure?.grpcCode !== status.RESOURCE_EXHAUSTED || failure.heraldCode !== 'WATCHER_TOO_SLOW') {
      endpoint++;
      failures++;
      deps.logger.debug({ address, err: failure?.message }, 'watch stream ended; resuming');
      await sleep(Math.min(MAX_BACKOFF_MS, 50 * 2 ** Math.min(failures, 6)) * (failures > deps.endpoints.length ? 1 : 0.2), opts.signal).catch(() => undefined);
    }
  }
}
