// The dev cluster's view of runs, from WatchService (client.watchRuns): while the demo worker
// prints what it executes, this prints what the worker cannot see — runs that failed, went dead,
// were missed, skipped or cancelled — and, with no demo worker, every fire and outcome. The watch
// starts at the present (runs already there when dev started are history, not news) and resumes
// across the dev cluster's leader changes by itself.
import type { HeraldClient } from '../../client/herald-client.js';
import { RunState, type Run } from '../../gen/herald/v1/run.js';
import { formatInstant } from '../output/format.js';
import { runState } from '../output/run-view.js';

/** Runs whose last state the feed remembers (a repeat of it is not news). */
const REMEMBERED_RUNS = 10_000;

export interface RunFeedOptions {
  client: HeraldClient;
  write: (line: string) => void;
  /** Also report new runs and successes (when no demo worker prints them). */
  everything: boolean;
  /** Wait before watching again after the stream failed for good (a bad endpoint list, say). */
  retryMs?: number;
}

export class RunFeed {
  private readonly seen = new Map<string, RunState>();
  private readonly abort = new AbortController();

  constructor(private readonly o: RunFeedOptions) {}

  start(): void {
    const loop = async (): Promise<void> => {
      while (!this.abort.signal.aborted) {
        try {
          for await (const item of this.o.client.watchRuns({}, { signal: this.abort.signal })) {
            if (item.type === 'change') this.observe(item.value);
          }
        } catch {
          // the SDK resumes across elections and restarts itself; this is for what it gives up on
        }
        if (!this.abort.signal.aborted) await new Promise((r) => setTimeout(r, this.o.retryMs ?? 1_000));
      }
    };
    void loop();
  }

  stop(): void {
    this.abort.abort();
  }

  private observe(run: Run): void {
    const before = this.seen.get(run.id);
    if (before === run.state) return;
    this.seen.delete(run.id);
    this.seen.set(run.id, run.state);
    if (this.seen.size > REMEMBERED_RUNS) this.seen.delete(this.seen.keys().next().value!);
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
