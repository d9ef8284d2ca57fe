// The API's messages as proto3 JSON (docs/http-api.md): 64-bit integers are strings, enums names.
export type Int64 = string;

export interface CronSchedule {
  expression: string;
  timeZone: string;
}
export interface Schedule {
  cron?: CronSchedule;
  every?: { intervalMs: Int64; anchorUnixMs: Int64 };
  at?: { atUnixMs: Int64 };
}
export interface JobSpec {
  taskType: string;
  payload: string;
  schedule?: Schedule;
  startUnixMs: Int64;
  endUnixMs: Int64;
  retry?: { maxAttempts: number; initialBackoffMs: Int64; maxBackoffMs: Int64; backoffMultiplier: number; nonRetryableErrorTypes: string[] };
  executionTimeoutMs: Int64;
  leaseDurationMs: Int64;
  misfirePolicy: string;
  startingDeadlineMs: Int64;
  overlapPolicy: string;
  jitterMs: Int64;
  dst?: { gap: string; fold: string; foldAuto: boolean };
  retention?: { maxRuns: number; maxAgeMs: Int64 };
  labels: Record<string, string>;
  priority: number;
  maxPendingRuns: number;
  pauseAfterDead: number;
  maxConcurrent: number;
}
export interface Job {
  id: string;
  spec?: JobSpec;
  state: string;
  version: Int64;
  createdUnixMs: Int64;
  updatedUnixMs: Int64;
  nextFireUnixMs: Int64;
  lastSlotUnixMs: Int64;
  pauseNote: string;
  activeRuns: number;
  consecutiveDeadRuns: number;
}
export interface Attempt {
  number: number;
  workerId: string;
  fencingToken: Int64;
  startedUnixMs: Int64;
  endedUnixMs: Int64;
  outcome: string;
  error?: { type: string; message: string; retryable: boolean };
}
export interface Run {
  id: string;
  jobId: string;
  taskType: string;
  slotUnixMs: Int64;
  scheduledUnixMs: Int64;
  state: string;
  attempt: number;
  attempts: Attempt[];
  manual: boolean;
  backfilled: boolean;
  createdUnixMs: Int64;
  finishedUnixMs: Int64;
  workerId: string;
  fencingToken: Int64;
  reason: string;
  output: string;
  latenessMs: Int64;
  redriveCount: number;
  waitingFor: string;
}
export interface Member {
  id: string;
  peerAddress: string;
  clientAddress: string;
  matchIndex: Int64;
  lastContactMs: Int64;
  healthy: boolean;
  replicationState: string;
}
export interface Status {
  nodeId: string;
  clusterId: string;
  role: string;
  term: Int64;
  leaderId: string;
  leaderAddress: string;
  commitIndex: Int64;
  appliedIndex: Int64;
  members: Member[];
  clusterTimeUnixMs: Int64;
  snapshotIndex: Int64;
}
export interface ConnectedWorker {
  workerId: string;
  taskTypes: string[];
  credits: number;
  heldRuns: number;
  connectedUnixMs: Int64;
  lastHeardUnixMs: Int64;
  silent: boolean;
  draining: boolean;
}
export interface Workers {
  workers: ConnectedWorker[];
  leaderId: string;
  unservedTaskTypes: Array<{ taskType: string; waitingRuns: number }>;
  stalledSlots: Array<{ jobId: string; slotUnixMs: Int64 }>;
}
/** JobService.CountRuns: stored runs per state that reached it since from_unix_ms. */
export interface RunCounts {
  fromUnixMs: Int64;
  succeeded: Int64;
  failed: Int64;
  dead: Int64;
  cancelled: Int64;
  skipped: Int64;
  missed: Int64;
}
export interface TaskTypeConfig {
  taskType: string;
  maxRunning: number;
  [k: string]: unknown;
}
export interface RunEvent {
  index: Int64;
  run: Run;
}
export const JOB = 'herald.v1.JobService';
export const CLUSTER = 'herald.v1.ClusterService';
export const WATCH = 'herald.v1.WatchService';
export const TASK_TYPES = 'herald.v1.TaskTypeService';
