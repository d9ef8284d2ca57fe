// The dispatcher's limits: per task type max_running and a start rate (token bucket), per job
// max_concurrent (JobSpec). Runs are counted from the moment their claim is planned until their
// lease goes (leases/running-counts.ts), so no limit is exceeded while claims are in flight, and a
// new leader counts every RUNNING run it adopts at takeover before it dispatches anything.
//
// With no limit configured the gate is inactive and the dispatcher skips it entirely.
import type { TaskTypeConfig } from '../../../gen/herald/v1/task_type_service.js';
import { burstOf } from '../../../fsm/index.js';
import type { Clock } from '../../node/cluster-clock.js';
import type { RunningCounts } from '../leases/running-counts.js';
import { TokenBucket } from './token-bucket.js';

export type LimitKind = 'max_running' | 'rate' | 'max_concurrent';

/** Every limit in force: what the state machine's limits() read returned. */
export interface Limits {
  readonly taskTypes: readonly TaskTypeConfig[];
  /** max_concurrent by job id (only jobs that set one). */
  readonly jobs: ReadonlyMap<string, number>;
}

function rateText(rate: number): string {
  return `${Number(rate.toFixed(3))}/s`;
}

export class DispatchGate {
  private taskTypes = new Map<string, TaskTypeConfig>();
  private jobs: ReadonlyMap<string, number> = new Map();
  private readonly buckets = new Map<string, TokenBucket>();
  /** Runs the last admit held back, by task type and limit (metrics). */
  readonly held = new Map<string, Map<LimitKind, number>>();

  constructor(
    private readonly counts: RunningCounts,
    private readonly clock: Clock,
  ) {}

  /** Some limit is configured: the dispatcher consults the gate. */
  get active(): boolean {
    return this.taskTypes.size > 0 || this.jobs.size > 0;
  }

  /** Limits read afresh: buckets of unchanged rates keep their tokens. */
  setLimits(limits: Limits): void {
    const now = this.clock.nowMs();
    this.taskTypes = new Map(limits.taskTypes.map((c) => [c.taskType, c]));
    this.jobs = limits.jobs;
    for (const [t, b] of this.buckets) {
      const c = this.taskTypes.get(t);
      if (!c || c.ratePerSecond <= 0) this.buckets.delete(t);
      else if (!b.same(c.ratePerSecond, burstOf(c))) b.reconfigure(c.ratePerSecond, burstOf(c), now);
    }
    for (const c of this.taskTypes.values()) {
      if (c.ratePerSecond > 0 && !this.buckets.has(c.taskType)) this.buckets.set(c.taskType, new TokenBucket(c.ratePerSecond, burstOf(c), now));
    }
    if (!this.active) this.held.clear();
  }

  config(taskType: string): TaskTypeConfig | undefined {
    return this.taskTypes.get(taskType);
  }

  /** How many more runs of the task type may start now, and which limit binds (Infinity: none). */
  roomOf(taskType: string): { room: number; kind: LimitKind | undefined } {
    const c = this.taskTypes.get(taskType);
    if (!c) return { room: Infinity, kind: undefined };
    let room = Infinity;
    let kind: LimitKind | undefined;
    if (c.maxRunning > 0) {
      room = Math.max(0, c.maxRunning - this.counts.ofTaskType(taskType));
      kind = 'max_running';
    }
    const b = this.buckets.get(taskType);
    if (b) {
      const tokens = b.available(this.clock.nowMs());
      if (tokens < room) {
        room = tokens;
        kind = 'rate';
      }
    }
    return { room, kind };
  }

  /**
   * How many ready entries a round of `limit` runs over `types` should read: no more than the
   * types' room; with job limits, four times the round (held jobs' runs may fill a read).
   */
  readLimit(types: Iterable<string>, limit: number): number {
    if (this.jobs.size > 0) return limit * 4;
    let room = 0;
    for (const t of types) {
      room += this.roomOf(t).room;
      if (room >= limit) return limit;
    }
    return room;
  }

  /** A dispatch round starts: `held` is recorded afresh. */
  beginRound(): void {
    this.held.clear();
  }

  /** The task type may start a run now; when not, it is recorded as held by the limit that binds. */
  hasRoom(taskType: string): boolean {
    const r = this.roomOf(taskType);
    if (r.room > 0) return true;
    this.hold(taskType, r.kind ?? 'max_running');
    return false;
  }

  /**
   * The candidates (in dispatch order) that may start now: each task type within its room, each
   * job within its max_concurrent. What is held back is recorded in `held`.
   */
  admit<T extends { taskType: string; jobId?: string }>(candidates: readonly T[]): T[] {
    const typeRoom = new Map<string, { room: number; kind: LimitKind | undefined }>();
    const jobRoom = new Map<string, number>();
    const out: T[] = [];
    for (const c of candidates) {
      let tr = typeRoom.get(c.taskType);
      if (!tr) typeRoom.set(c.taskType, (tr = this.roomOf(c.taskType)));
      if (tr.room <= 0) {
        this.hold(c.taskType, tr.kind ?? 'max_running');
        continue;
      }
      const jobId = c.jobId ?? '';
      const max = this.jobs.get(jobId);
      if (max !== undefined) {
        let jr = jobRoom.get(jobId);
        if (jr === undefined) jr = Math.max(0, max - this.counts.ofJob(jobId));
        if (jr <= 0) {
          jobRoom.set(jobId, 0);
          this.hold(c.taskType, 'max_concurrent');
          continue;
        }
        jobRoom.set(jobId, jr - 1);
      }
      tr.room--;
      out.push(c);
    }
    return out;
  }

  /** Runs planned for a claim started: their task types' buckets pay for them. */
  started(plan: readonly { taskType: string }[]): void {
    if (this.buckets.size === 0) return;
    const now = this.clock.nowMs();
    for (const a of plan) this.buckets.get(a.taskType)?.take(1, now);
  }

  /** When a task type held back by its rate gets its next start (ms from now; undefined: none held so). */
  msUntilRateRoom(): number | undefined {
    let min: number | undefined;
    const now = this.clock.nowMs();
    for (const [t, kinds] of this.held) {
      if (!kinds.has('rate')) continue;
      const ms = this.buckets.get(t)?.msUntilNext(now);
      if (ms !== undefined && (min === undefined || ms < min)) min = ms;
    }
    return min;
  }

  /** Why a due PENDING run of this task type and job waits now ('' when no limit holds it). */
  waitingFor(taskType: string, jobId: string): string {
    const c = this.taskTypes.get(taskType);
    if (c) {
      if (c.maxRunning > 0 && this.counts.ofTaskType(taskType) >= c.maxRunning) return `task type ${taskType} at max_running ${c.maxRunning}`;
      const b = this.buckets.get(taskType);
      if (b && b.available(this.clock.nowMs()) < 1) return `task type ${taskType} at rate ${rateText(c.ratePerSecond)}`;
    }
    const max = this.jobs.get(jobId);
    if (max !== undefined && this.counts.ofJob(jobId) >= max) return `job ${jobId} at max_concurrent ${max}`;
    return '';
  }

  private hold(taskType: string, kind: LimitKind): void {
    let m = this.held.get(taskType);
    if (!m) this.held.set(taskType, (m = new Map()));
    m.set(kind, (m.get(kind) ?? 0) + 1);
  }
}
