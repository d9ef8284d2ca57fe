// What the workload did to one scheduled job, as the checkers need it: the spec in force, the
// server's creation time, and every pause/resume/delete with its call and return times
// (return = Infinity when the outcome is unknown). Times are the orchestrator's wall clock;
// createdUnixMs is the cluster time the server recorded.
import type { JobSpec } from '../../src/gen/herald/v1/job.js';

export type JobEventType = 'pause' | 'resume' | 'delete';

export interface JobEvent {
  type: JobEventType;
  callMs: number;
  /** Infinity when the call's outcome is unknown (it may or may not have taken effect). */
  returnMs: number;
  /** False when the call failed for sure (it did not take effect). */
  ok: boolean;
}

export interface JobTimeline {
  jobId: string;
  /** The workload kind (for reports): 'every', 'cron-seconds', 'one-off', 'forbid', 'jitter', 'flaky', ... */
  kind: string;
  spec: JobSpec;
  createdUnixMs: number;
  /** The handler fails attempts 1..failAttempts (retryable), then succeeds. */
  failAttempts: number;
  events: JobEvent[];
}
