// WatchService on every node: streams of run and job changes out of the node's change log
// (change-log.ts). A stream starts after a read barrier, so even a follower starts from at least
// what the cluster had committed when the call arrived; then each apply's batch goes out to every
// watcher in one flush (one setImmediate per burst of applies, not one per apply per watcher).
import type { ServerWritableStream, UntypedServiceImplementation } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { HeraldError, isHeraldError } from '../../herald-error.js';
import { WatchServiceService, type WatchJobsRequest, type WatchRunsRequest } from '../../gen/herald/v1/watch_service.js';
import { toServiceError } from '../grpc/service-error.js';
import type { NodeMetrics } from '../node/metrics.js';
import type { ChangeLog } from './change-log.js';
import { Watcher, type FrameSelector, type WatcherLimits } from './watcher.js';
import { createWatchMetrics, type WatchKind } from './watch-metrics.js';
import { checkRunFilter, jobSelector, runSelector } from './watch-filters.js';

export interface WatchServiceOptions {
  log: ChangeLog;
  /** The node's read barrier (a linearizable read's index wait). */
  readIndex(opts: { timeoutMs: number }): Promise<number>;
  /** The ids of the jobs carrying all of `labels` (WatchRuns' labels filter), read from the node's store. */
  jobsWithLabels(labels: Readonly<Record<string, string>>): Promise<string[]>;
  logger: Logger;
  metrics?: NodeMetrics;
  limits?: Partial<WatcherLimits>;
  /** An idle watcher gets a progress message this often. */
  progressIntervalMs?: number;
  /** Streams at once on this node. */
  maxWatchers?: number;
  nowMs?: () => number;
}

export interface WatchServiceHandle {
  /** The service definition (pass-through response serializers: messages are pre-encoded bytes). */
  definition: typeof WatchServiceService;
  implementation: UntypedServiceImplementation;
  /** Watchers attached right now. */
  readonly watchers: number;
  close(): void;
}

const DEFAULT_LIMITS: WatcherLimits = { maxBacklog: 20_000, messageBytes: 256 * 1024 };
const BARRIER_TIMEOUT_MS = 5_000;

export function createWatchService(o: WatchServiceOptions): WatchServiceHandle {
  const limits: WatcherLimits = { ...DEFAULT_LIMITS, ...o.limits };
  const nowMs = o.nowMs ?? (() => performance.now());
  const progressMs = o.progressIntervalMs ?? 1_000;
  const maxWatchers = o.maxWatchers ?? 1_000;
  const watchers = new Map<Watcher, WatchKind>();
  let closed = false;
  const watchMetrics = o.metrics && createWatchMetrics(o.metrics.registry, o.log, () => watchers.values());

  let flushQueued = false;
  const flush = (): void => {
    flushQueued = false;
    for (const w of watchers.keys()) w.pump();
  };
  const offChange = o.log.onChange(() => {
    if (flushQueued || watchers.size === 0) return;
    flushQueued = true;
    setImmediate(flush);
  });
  const ticker = setInterval(() => {
    for (const w of watchers.keys()) w.tick(progressMs);
  }, Math.max(50, Math.floor(progressMs / 2)));
  ticker.unref();

  /** `check` throws for a bad filter (before the barrier); `select` builds the filter after it. */
  function serve(method: string, kind: WatchKind, call: ServerWritableStream<unknown, Buffer>, check: () => void, select: () => FrameSelector | Promise<FrameSelector>, fromIndex: number): void {
    let watcher: Watcher | undefined;
    const fail = (err: unknown): void => {
      const se = toServiceError(err);
      o.metrics?.grpcRequests.inc({ method, code: String(se.code) });
      if (!isHeraldError(err)) o.logger.error({ err, method }, 'watch failed unexpectedly');
      try {
        call.emit('error', se);
      } catch {
        call.destroy();
      }
    };
    const detach = (): void => {
      if (!watcher) return;
      watchers.delete(watcher);
      watcher.close();
    };
    call.on('cancelled', detach);
    call.on('close', detach);
    call.on('error', detach);
    (async () => {
      if (closed) throw new HeraldError('SHUTTING_DOWN', 'this node is shutting down; watch another node');
      if (watchers.size >= maxWatchers) throw new HeraldError('LIMIT_EXCEEDED', `this node serves at most ${maxWatchers} watch streams; watch another node`);
      check();
      await o.readIndex({ timeoutMs: BARRIER_TIMEOUT_MS });
      if (call.cancelled || closed) return;
      const log = o.log;
      const from = fromIndex === 0 ? log.lastIndex : fromIndex;
      const checkFrom = (): void => {
        if (from < log.floor) {
          throw new HeraldError(
            'WATCH_INDEX_UNAVAILABLE',
            `from_index ${from} is older than this node's change log (it holds changes after index ${log.floor}); list the current state, then watch from index 0`,
            { field: 'from_index', floor: log.floor },
          );
        }
        if (from > log.lastIndex) {
          throw new HeraldError('WATCH_INDEX_UNAVAILABLE', `from_index ${from} is ahead of this node's applied index ${log.lastIndex} (another cluster's index?); list the current state, then watch from index 0`, {
            field: 'from_index',
          });
        }
      };
      // Checked before the filter reads the store (a labels filter's jobs are then read at or
      // after \`from\`, and the stream replays every job change after it), and again after (the
      // ring may have dropped \`from\` meanwhile).
      checkFrom();
      const selector = await select();
      if (call.cancelled || closed) return;
      checkFrom();
      const w = new Watcher(
        log,
        {
          write: (m) => call.write(m),
          once: (event, fn) => call.once(event, fn),
          fail: (err) => {
            watchers.delete(w);
            fail(err);
          },
        },
        selector,
        limits,
        from,
        nowMs,
        watchMetrics?.watcher(kind),
      );
      watcher = w;
      watchers.set(w, kind);
      w.start();
    })().catch(fail);
  }

  const implementation: UntypedServiceImplementation = {
    watchRuns: (call: ServerWritableStream<WatchRunsRequest, Buffer>) =>
      serve(
        'WatchRuns',
        'runs',
        call as ServerWritableStream<unknown, Buffer>,
        () => checkRunFilter(call.request),
        async () => runSelector(call.request, Object.keys(call.request.labels).length > 0 ? await o.jobsWithLabels(call.request.labels) : undefined),
        call.request.fromIndex,
      ),
    watchJobs: (call: ServerWritableStream<WatchJobsRequest, Buffer>) =>
      serve(
        'WatchJobs',
        'jobs',
        call as ServerWritableStream<unknown, Buffer>,
        () => void jobSelector(call.request),
        () => jobSelector(call.request),
        call.request.fromIndex,
      ),
  };

  // The responses are written as bytes already encoded (shared event frames + progress field).
  const passThrough = (b: unknown): Buffer => b as Buffer;
  const definition = {
    watchRuns: { ...WatchServiceService.watchRuns, responseSerialize: passThrough },
    watchJobs: { ...WatchServiceService.watchJobs, responseSerialize: passThrough },
  } as unknown as typeof WatchServiceService;

  return {
    definition,
    implementation,
    get watchers() {
      return watchers.size;
    },
    close() {
      if (closed) return;
      closed = true;
      offChange();
      clearInterval(ticker);
      for (const w of [...watchers.keys()]) {
        const resume = w.progressIndex;
        w.close(new HeraldError('SHUTTING_DOWN', `this node is shutting down; resume from index ${resume} on another node`, { resumeIndex: resume }), 'shutting_down');
      }
      watchers.clear();
    },
  };
}
