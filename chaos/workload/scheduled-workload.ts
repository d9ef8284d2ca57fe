// Creates the planned scheduled jobs and carries out their pause/resume/delete actions at their
// times, recording each call (call/return wall time, outcome) into the job's timeline for the
// slots checker. A call whose outcome is unknown is retried by nobody: the checker treats its
// effect as uncertain from the call on.
import type { HeraldClient } from '../../src/client/herald-client.js';
import { HeraldClientError } from '../../src/client/errors.js';
import type { JobTimeline, JobEventType } from './job-timeline.js';
import type { PlannedJob } from './job-mix.js';

const DEFINITE = new Set([3, 5, 6, 9]); // INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, FAILED_PRECONDITION

export class ScheduledWorkload {
  readonly timelines: JobTimeline[] = [];
  private timers: NodeJS.Timeout[] = [];
  private inFlight = new Set<Promise<void>>();

  constructor(
    private readonly client: HeraldClient,
    private readonly jobs: readonly PlannedJob[],
  ) {}

  /** Creates every job (retrying until created: the workload cannot start without them). */
  async createAll(deadlineMs = 60_000): Promise<void> {
    const items = this.jobs.map((j) => ({ spec: j.spec, id: j.jobId, idempotencyKey: `create-${j.jobId}` }));
    const end = Date.now() + deadlineMs;
    for (const [i, item] of items.entries()) {
      for (;;) {
        try {
          const { job } = await this.client.createJob(item.spec, { id: item.id, idempotencyKey: item.idempotencyKey, deadlineMs: 10_000 });
          const plan = this.jobs[i]!;
          this.timelines.push({ jobId: plan.jobId, kind: plan.kind, spec: job.spec ?? plan.spec, createdUnixMs: job.createdUnixMs, failAttempts: plan.failAttempts, events: [] });
          break;
        } catch (e) {
          if (Date.now() > end || (e instanceof HeraldClientError && e.grpcCode === 3)) throw e;
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    }
  }

  /** Schedules every action relative to `startMs` (wall clock). */
  startActions(startMs: number): void {
    for (const j of this.jobs) {
      const tl = this.timelines.find((t) => t.jobId === j.jobId)!;
      for (const a of j.actions) {
        const t = setTimeout(() => {
          const p = this.act(tl, a.type).finally(() => this.inFlight.delete(p));
          this.inFlight.add(p);
        }, Math.max(0, startMs + a.atMs - Date.now()));
        this.timers.push(t);
      }
    }
  }

  /** Cancels actions not yet due; waits for the ones in flight. */
  async stop(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers = [];
    await Promise.all([...this.inFlight]);
  }

  /** The final state of a paused job must be active for the settle phase; resumes any left paused. */
  async act(tl: JobTimeline, type: JobEventType): Promise<void> {
    const callMs = Date.now();
    try {
      if (type === 'pause') await this.client.pauseJob(tl.jobId, 'chaos', { deadlineMs: 4_000 });
      else if (type === 'resume') await this.client.resumeJob(tl.jobId, { deadlineMs: 4_000 });
      else await this.client.deleteJob(tl.jobId, { deadlineMs: 4_000 });
      tl.events.push({ type, callMs, returnMs: Date.now(), ok: true });
    } catch (e) {
      const definite = e instanceof HeraldClientError && DEFINITE.has(e.grpcCode);
      tl.events.push({ type, callMs, returnMs: definite ? Date.now() : Infinity, ok: false });
    }
  }
}
