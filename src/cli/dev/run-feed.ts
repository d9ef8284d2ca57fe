// The dev cluster's view of runs, from ListRuns: while the demo worker prints what it executes,
// this prints what the worker cannot see — runs that failed, went dead, were missed, skipped or
// cancelled — and, with no demo worker, every fire and outcome. Polling is fine at dev scale
// (a handful of jobs); a production tool would want a watch API.
import type { HeraldClient } from '../../client/herald-client.js';
import { RunState, type Run } from '../../gen/herald/v1/run.js';
import { formatInstant } from '../output/format.js';
import { runState } from '../output/run-view.js';

const MAX_JOBS = 100;
const RUNS_PER_JOB = 20;

export interface RunFeedOptions {
  client: HeraldClient;
  write: (line: string) => void;
  /** Also report new runs and successes (when no demo worker prints them). */
  everything: boolean;
  intervalMs?: number;
}

export class RunFeed {
  private readonly seen = new Map<string, RunState>();
  private timer: NodeJS.Timeout | undefined;
  private primed = false;
  private stopped = false;

  constructor(private readonly o: RunFeedOptions) {}

  start(): void {
    const loop = async () => {
      if (this.stopped) return;
      try {
        await this.poll();
      } catch {
        // elections, restarts: the next poll catches up
      }
      if (!this.stopped) this.timer = setTimeout(() => void loop(), this.o.intervalMs ?? 1_000);
    };
    void loop();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private async poll(): Promise<void> {
    const jobs = await this.o.client.listJobs({ pageSize: MAX_JOBS }, { deadlineMs: 3_000, consistency: 'stale' });
    for (const job of jobs.items) {
      const page = await this.o.client.listRuns({ jobId: job.id, pageSize: RUNS_PER_JOB }, { deadlineMs: 3_000, consistency: 'stale' });
      for (const run of [...page.items].reverse()) this.observe(run);
    }
    // Runs already there when dev started are history, not news.
    this.primed = true;
  }

  private observe(run: Run): void {
    const before = this.seen.get(run.id);
    if (before === run.state) return;
    this.seen.set(run.id, run.state);
    if (!this.primed) return;
    const interesting =
      this.o.everything ||
      ![RunState.RUN_STATE_PENDING, RunState.RUN_STATE_RUNNING, RunState.RUN_STATE_SUCCEEDED].includes(run.state);
    if (!interesting) return;
    const last = run.attempts[run.attempts.length - 1];
    const detail =
      run.state === RunState.RUN_STATE_FAILED
        ? ` attempt ${run.attempt}: ${last?.error?.message ?? 'failed'}; retry not before ${formatInstant(run.notBeforeUnixMs)}`
        : run.state === RunState.RUN_STATE_DEAD
          ? ` after ${run.attempt} attempt(s): ${last?.error?.message ?? run.reason}`
          : run.reason
            ? ` (${run.reason})`
            : '';
    this.o.write(`${new Date().toISOString().slice(11, 23)}  ${runState(run).padEnd(9)}  run ${run.id}  job ${run.jobId}${detail}`);
  }
}
