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

export function runSelector(req: WatchRunsRequest): FrameSelector {
  checkCommon(req.jobId, req.taskType, req.fromIndex);
  let states: Set<RunState> | undefined;
  if (req.states.length > 0) {
    for (const s of req.states) {
      if (s === RunState.RUN_STATE_UNSPECIFIED || RunState[s] === undefined || s === RunState.UNRECOGNIZED) {
        throw new HeraldError('INVALID_ARGUMENT', `states: ${s} is not a run state (PENDING=1 … MISSED=8)`, { field: 'states' });
      }
    }
    states = new Set(req.states);
  }
  const { jobId, taskType } = req;
  return (batch, out) => {
    let bytes = 0;
    for (const c of batch.runs()) {
      if (jobId !== '' && c.jobId !== jobId) continue;
      if (taskType !== '' && c.taskType !== taskType) continue;
      if (states && !states.has(c.state)) continue;
      out.push(c.frame);
      bytes += c.frame.length;
    }
    return bytes;
  };
}

export function jobSelector(req: WatchJobsRequest): FrameSelector {
  checkCommon(req.jobId, req.taskType, req.fromIndex);
  const labels = Object.entries(req.labels);
  if (labels.length > MAX_LABELS) throw new HeraldError('INVALID_ARGUMENT', `labels: at most ${MAX_LABELS}`, { field: 'labels' });
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
