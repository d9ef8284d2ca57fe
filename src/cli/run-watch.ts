// `herald run watch`: run state changes as they are applied, one line each (or one JSON object per
// line with --json), from WatchService through the SDK's resuming iterator. Runs until Ctrl-C.
import type { HeraldClient, RunStateName } from '../client/herald-client.js';
import type { Run } from '../gen/herald/v1/run.js';
import { print, printJson } from './output/print.js';
import { runJson, runState } from './output/run-view.js';
import { UsageError } from './usage-error.js';
import { parseLabels } from './job-spec-flags.js';

export const RUN_STATE_NAMES: RunStateName[] = ['pending', 'running', 'succeeded', 'failed', 'dead', 'cancelled', 'skipped', 'missed'];

export interface RunWatchFlags {
  job?: string;
  taskType?: string;
  state?: string;
  fromIndex?: string;
  label?: string[];
}

/** The comma-separated --state list, checked. */
export function parseStates(value: string | undefined): RunStateName[] {
  if (value === undefined) return [];
  const states = value.split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '');
  for (const s of states) {
    if (!RUN_STATE_NAMES.includes(s as RunStateName)) throw new UsageError(`--state: unknown state "${s}" (use a comma-separated list of: ${RUN_STATE_NAMES.join(', ')})`);
  }
  return states as RunStateName[];
}

export function parseFromIndex(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,15}$/.test(value)) throw new UsageError(`--from-index: expected an applied index (a non-negative integer), got "${value}"`);
  return Number(value);
}

/** A change as one line: time, state, run, job, and what a person wants to know about it. */
export function watchLine(index: number, run: Run): string {
  const last = run.attempts[run.attempts.length - 1];
  const detail = run.reason ? ` (${run.reason})` : last?.error?.message ? `: ${last.error.message}` : '';
  return `${new Date().toISOString().slice(11, 23)}  #${index}  ${runState(run).padEnd(9)}  run ${run.id}  job ${run.jobId}  attempt ${run.attempt}${detail}`;
}

export async function watchRunsToStdout(client: HeraldClient, o: RunWatchFlags, json: boolean, signal: AbortSignal): Promise<void> {
  const states = parseStates(o.state);
  const fromIndex = parseFromIndex(o.fromIndex);
  const filter = {
    ...(o.job ? { jobId: o.job } : {}),
    ...(o.taskType ? { taskType: o.taskType } : {}),
    ...(o.label && o.label.length > 0 ? { labels: parseLabels(o.label) } : {}),
    states,
  };
  for await (const item of client.watchRuns(filter, { signal, ...(fromIndex !== undefined ? { fromIndex } : {}) })) {
    if (item.type === 'change') {
      if (json) printJson({ index: item.index, run: runJson(item.value) });
      else print(watchLine(item.index, item.value) + '\n');
    } else if (item.type === 'reset') {
      process.stderr.write(`watch: resumed from the present; changes after index ${item.fromIndex} may have been missed (${item.reason})\n`);
    }
  }
}
