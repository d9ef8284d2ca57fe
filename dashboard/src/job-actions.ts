// Pause / resume / trigger / delete of one job, as confirmations the pages open.
import { call } from './api.js';
import { may } from './permissions.js';
import { JOB, type Job } from './types.js';
import type { PendingConfirm } from './ui.js';

export interface JobAction {
  label: string;
  method: string;
  confirm: PendingConfirm;
}

export function jobActions(job: Job): JobAction[] {
  const id = job.id;
  const all: JobAction[] = [];
  if (job.state === 'JOB_STATE_ACTIVE') {
    all.push({
      label: 'Pause',
      method: `${JOB}/PauseJob`,
      confirm: { title: `Pause ${id}?`, body: 'No new runs fire while it is paused; runs already started go on.', action: 'Pause', run: () => call(`${JOB}/PauseJob`, { jobId: id, note: 'paused from the dashboard' }) },
    });
  }
  if (job.state === 'JOB_STATE_PAUSED') {
    all.push({
      label: 'Resume',
      method: `${JOB}/ResumeJob`,
      confirm: { title: `Resume ${id}?`, body: 'It fires again from its next slot (missed slots follow its misfire policy).', action: 'Resume', run: () => call(`${JOB}/ResumeJob`, { jobId: id }) },
    });
  }
  all.push({
    label: 'Trigger',
    method: `${JOB}/TriggerJob`,
    confirm: { title: `Trigger ${id} now?`, body: 'Starts one run now, outside its schedule.', action: 'Trigger', run: () => call(`${JOB}/TriggerJob`, { jobId: id }) },
  });
  all.push({
    label: 'Delete',
    method: `${JOB}/DeleteJob`,
    confirm: { title: `Delete ${id}?`, body: 'The job and its pending runs are removed; this cannot be undone.', action: 'Delete', danger: true, run: () => call(`${JOB}/DeleteJob`, { jobId: id }) },
  });
  return all.filter((a) => may(a.method));
}
