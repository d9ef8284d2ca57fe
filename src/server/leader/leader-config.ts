// Settings of the leader's scheduler, dispatcher and worker streams. Defaults suit production;
// tests shorten the time constants through the same options (and `herald server` flags).
import { MAX_CLAIM_AHEAD_MS } from '../../fsm/index.js';

export interface SchedulerConfig {
  /** How far ahead the timing wheel holds fire times (ms). */
  horizonMs: number;
  /** The wheel's bucket width (ms); fire times are checked at this resolution. */
  wheelResolutionMs: number;
  /** How often the scheduler looks at the wheel (ms). */
  tickMs: number;
  /** A slot older than now − this when fired is handed to the job's misfire policy (downtime). */
  misfireThresholdMs: number;
  /**
   * Most fire items in one fireRuns command. Apply is serial on every node: a large fire holds
   * claims and finishes back for its whole apply, small ones cost more per item; 1,000 drained a
   * herd fastest (bench/README.md).
   */
  fireBatchSize: number;
  /** fireRuns commands in flight at once. */
  maxFiresInFlight: number;
  /**
   * Fire pacing (fire-scheduler.ts pacedToTake): while workers are connected, due slots are fired no
   * faster than the workers have room for, each run claimed in the entry behind its fire, for at
   * most this long past the slot (and at most half the misfire threshold and half the watchdog
   * grace); 0 fires every slot as it comes due.
   */
  maxFireHoldMs: number;
  /** Lease duration for jobs that do not set one (ms). */
  defaultLeaseMs: number;
  /** Heartbeat period told to workers in their welcome (ms). */
  heartbeatIntervalMs: number;
  /**
   * WorkerWelcome.silence_timeout_ms (ms): a worker that hears nothing from its node for this
   * long dials another. Undefined: two election timeouts of the node.
   */
  workerSilenceTimeoutMs?: number;
  /** Most claims in one claimRuns command (the admission limit per dispatch round). */
  claimBatchSize: number;
  /** Claim commands in flight at once. */
  maxClaimsInFlight: number;
  /** Dispatch rounds also run this often without a wake-up (not-before times, retries). */
  dispatchPollMs: number;
  /** Results gathered for up to this long into one finishRuns command (ms). */
  resultBatchMs: number;
  /** How often expired leases are looked for (ms). */
  leaseSweepMs: number;
  /** A due slot with no run record after this long is flagged by the watchdog (ms). */
  watchdogGraceMs: number;
  /** How often the watchdog and the starting-deadline sweep run (ms). */
  watchdogIntervalMs: number;
  /** How often run history is trimmed to each job's retention (ms). */
  trimIntervalMs: number;
  /**
   * Runs are fired and claimed up to this long before their scheduled instant, and the worker
   * holds each until then (RunAssignment.start_delay_ms): a fire and its claim cost a replicated,
   * fsynced commit round plus a tick, so without a lead every run starts that much late. 0 turns
   * it off. Only jobs that allow overlap and have no jitter are fired early (their fire decides
   * nothing that depends on the moment: FORBID, BUFFER_ONE and REPLACE look at the runs still
   * active, so they fire at the slot); the claim of any run due within the lead may go early.
   * At most MAX_CLAIM_AHEAD_MS.
   */
  dispatchLeadMs: number;
}

/** Bounds of the settings that are not simply positive: may be 0 (off), or have a maximum. */
const BOUNDS: Partial<Record<keyof SchedulerConfig, { min: 0 | 1; max?: number }>> = {
  dispatchLeadMs: { min: 0, max: MAX_CLAIM_AHEAD_MS },
  maxFireHoldMs: { min: 0 },
};

/** The lowest value `key` takes (0 or 1) and its highest, if any. */
export function schedulerBounds(key: keyof SchedulerConfig): { min: 0 | 1; max?: number } {
  return BOUNDS[key] ?? { min: 1 };
}

export const DEFAULT_SCHEDULER_CONFIG: SchedulerConfig = {
  horizonMs: 60_000,
  wheelResolutionMs: 10,
  tickMs: 10,
  misfireThresholdMs: 5_000,
  fireBatchSize: 1_000,
  maxFiresInFlight: 1,
  maxFireHoldMs: 60_000,
  defaultLeaseMs: 30_000,
  heartbeatIntervalMs: 5_000,
  claimBatchSize: 2_000,
  maxClaimsInFlight: 1,
  dispatchPollMs: 100,
  resultBatchMs: 2,
  leaseSweepMs: 100,
  watchdogGraceMs: 10_000,
  watchdogIntervalMs: 1_000,
  trimIntervalMs: 100,
  dispatchLeadMs: 100,
};

export function schedulerConfig(partial: Partial<SchedulerConfig> = {}): SchedulerConfig {
  const c = { ...DEFAULT_SCHEDULER_CONFIG, ...partial };
  for (const [k, v] of Object.entries(c)) {
    if (v === undefined) continue; // an optional setting left to its derived default
    const { min, max } = schedulerBounds(k as keyof SchedulerConfig);
    if (!Number.isFinite(v) || (min === 0 ? v < 0 : v <= 0)) {
      throw new RangeError(`scheduler config ${k} must be a ${min === 0 ? 'non-negative' : 'positive'} number (got ${v})`);
    }
    if (max !== undefined && v > max) throw new RangeError(`scheduler config ${k} must be at most ${max} (got ${v})`);
  }
  return c;
}
