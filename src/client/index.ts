// The public surface of the Herald SDK and Worker library.
//
//   import { HeraldClient, cron, jobSpec, Worker, NonRetryableError } from 'herald/client';
//
//   const client = new HeraldClient({ endpoints: ['10.0.0.1:7070', '10.0.0.2:7070'] });
//   await client.createJob(jobSpec({ taskType: 'report', schedule: cron('0 2 * * *', { tz: 'Europe/Berlin' }) }));
//
//   const worker = new Worker({ endpoints, concurrency: 4, handlers: { report: async (ctx) => { ... } } });
//   await worker.run(); // SIGTERM drains, a second signal forces
export { HeraldClient } from './herald-client.js';
export type {
  CallOptions,
  CreateJobOptions,
  CreateJobsItem,
  CreateJobsItemResult,
  HeraldClientOptions,
  JobStateName,
  ListJobsFilter,
  ListRunsFilter,
  Page,
  ReadOptions,
  RunStateName,
  SpecInput,
} from './herald-client.js';
export { at, checkTimeZone, cron, encodePayload, every, jobSpec } from './job-spec-builders.js';
export type { CronOptions, DstFold, DstGap, Instant, JobSpecInput, Misfire, Overlap, PayloadInput, RetryInput, ScheduleDef } from './job-spec-builders.js';
export { formatDuration, parseDuration, type Duration } from './duration.js';
export {
  AlreadyExistsError,
  CancelledError,
  DeadlineExceededError,
  FailedPreconditionError,
  HeraldClientError,
  InternalError,
  InvalidArgumentError,
  InvalidSpecError,
  NotFoundError,
  ResourceExhaustedError,
  UnavailableError,
  type GrpcCodeName,
} from './errors.js';
export { DEFAULT_RETRY, type RetryOptions } from './retry-policy.js';
export { Worker, type RunSettlement, type WorkerEvents, type WorkerOptions, type WorkerState } from './worker/worker.js';
export { HandlerError, NonRetryableError, RunAbortedError, type AbortCause, type HandlerErrorOptions } from './worker/handler-errors.js';
export type { Handler, HandlerOutput, RunContext, RunInfo } from './worker/run-context.js';
export type { JobChange, WatchItem, WatchJobsFilter, WatchOptions, WatchRunsFilter } from './watch-stream.js';
export { silentLogger, type ClientLogger } from './logger.js';
export type { ClientTls } from './tls-options.js';
export { Role, type TokenInfo } from '../gen/herald/v1/auth_service.js';
