// Watch filters: validated once per stream, then applied per batch to the shared event bytes.
import { HeraldError } from '../../herald-error.js';
import { isValidId } from '../../fsm/index.js';
import { RunState } from '../../gen/herald/v1/run.js';
import type { WatchJobsRequest, WatchRunsRequest } from '../../gen/herald/v1/watch_service.js';
import type { FrameSelector } from './watcher.js';

const MAX_TASK_TYPE = 128;
const MAX_LABELS = 32;

function checkCommon(jobId: string, taskType: string, fromIndex: number): void {
  if (jobId !== '' && !isValidId(jobId)) throw new HeraldError('INVALID_ID', `job_id: ${JSON.stringify(jobId.slice(0, 80))} is not a valid job id`, { field: 'job_id' });
  if (taskType.length > MAX_TASK_TYPE) throw new HeraldError('INVALID_ARGUMENT', `task_type: at most ${MAX_TASK_TYPE} characters`, { field: 'task_type' });
  if (!Number.isSafeInteger(fromIndex) || fromIndex < 0) throw new HeraldError('INVALID_ARGUMENT', 'from_index: must be an index this cluster applied (0 starts now)', { field: 'from_index' });
}

/** Throws what is wrong with a WatchRuns filter (before the stream waits for anything). */
export function checkRunFilter(req: WatchRunsRequest): void {
  checkCommon(req.jobId, req.taskType, req.fromIndex);
  for (const s of req.states) {
    if (s === RunState.RUN_STATE_UNSPECIFIED || RunState[s] === undefined || s === RunState.UNRECOGNIZED) {
      throw new HeraldError('INVALID_ARGUMENT', `states: ${s} is not a run state (PENDING=1 … MISSED=8)`, { field: 'states' });
    }
  }
  checkLabels(req.labels);
}

/**
 * The WatchRuns filter. With labels, `jobsWithLabels` are the jobs carrying them when the stream
 * starts; the job changes the stream passes then add and remove jobs (a run's job changes before
 * or in the batch of the run's first change, so a new job is known in time).
 */
export function runSelector(req: WatchRunsRequest, jobsWithLabels?: Iterable<string>): FrameSelector {
  checkRunFilter(req);
  const states = req.states.length > 0 ? new Set(req.states) : undefined;
  const labels = Object.entries(req.labels);
  let members: Set<string> | undefined;
  if (labels.length > 0) {
    if (jobsWithLabels === undefined) throw new Error('runSelector: a labels filter needs the jobs carrying them');
    members = new Set(jobsWithLabels);
  }
  const { jobId, taskType } = req;
  return (batch, out) => {
    if (members) {
      for (const j of batch.jobs()) {
        if (!j.deleted && labels.every(([k, v]) => j.labels?.[k] === v)) members.add(j.jobId);
        else members.delete(j.jobId);
      }
    }
    let bytes = 0;
    for (const c of batch.runs()) {
      if (jobId !== '' && c.jobId !== jobId) continue;
      if (taskType !== '' && c.taskType !== taskType) continue;
      if (states && !states.has(c.state)) continue;
      if (members && !members.has(c.jobId)) continue;
      out.push(c.frame);
      bytes += c.frame.length;
    }
    return bytes;
  };
}

function checkLabels(labels: Readonly<Record<string, string>>): void {
  if (Object.keys(labels).length > MAX_LABELS) throw new HeraldError('INVALID_ARGUMENT', `labels: at most ${MAX_LABELS}`, { field: 'labels' });
}

export function jobSelector(req: WatchJobsRequest): FrameSelector {
  checkCommon(req.jobId, req.taskType, req.fromIndex);
  checkLabels(req.labels);
  const labels = Object.entries(req.labels);
  const { jobId, taskType } = req;
  return (batch, out) => {
    let bytes = 0;
    for (const c of batch.jobs()) {
      if (jobId !== '' && c.jobId !== jobId) continue;
      // A deleted job's spec is gone: its delete reaches every watcher its id filter admits.
      if (!c.deleted) {
        if (taskType !== '' && c.taskType !== taskType) continue;
        if (labels.some(([k, v]) => c.labels?.[k] !== v)) continue;
      }
      out.push(c.frame);
      bytes += c.frame.length;
    }
    return bytes;
  };
}
