// Jobs: filters and paging done by the server (ListJobs pages of 50, a filtered page filled from
// the server's bounded scans: never the whole list in the browser), the next fires of the page on
// a one-hour timeline, and the job actions.
import { useState } from 'preact/hooks';
import { call } from '../api.js';
import { jobState, num, relative, scheduleInWords } from '../format.js';
import { fillPage } from '../fill-page.js';
import { jobActions } from '../job-actions.js';
import { go, href, type Route } from '../router.js';
import { JOB, type Job } from '../types.js';
import { Badge, ConfirmDialog, ErrorLine, Section, useLoad, type PendingConfirm } from '../ui.js';

const PAGE_SIZE = 50;
const HOUR_MS = 3_600_000;

function labelSelector(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text.split(',')) {
    const [k, ...v] = part.split('=');
    if (k?.trim()) out[k.trim()] = v.join('=').trim();
  }
  return out;
}

export function Jobs({ route }: { route: Route }) {
  const q = route.query;
  const state = q.get('state') ?? '';
  const taskType = q.get('taskType') ?? '';
  const label = q.get('label') ?? '';
  const prefix = q.get('prefix') ?? '';
  const token = q.get('page') ?? '';
  const prev = q.get('prev') ?? '';
  const [pending, setPending] = useState<PendingConfirm | undefined>(undefined);
  const [find, setFind] = useState('');
  const [findError, setFindError] = useState<Error | undefined>(undefined);
  // A filter by state, task type or label is a bounded scan on the server: fillPage goes on
  // until the page is full (fill-page.ts). Such a page is refreshed less often, as each refresh
  // may scan up to FILL_BOUNDS.maxCalls × 10,000 jobs again.
  const scanned = !!(state || taskType || label);
  const jobs = useLoad(
    () =>
      fillPage(
        (pageSize, pageToken) =>
          call<{ jobs: Job[]; nextPageToken: string }>(`${JOB}/ListJobs`, { pageSize, pageToken, state: state || undefined, taskType, labelSelector: labelSelector(label), idPrefix: prefix }),
        PAGE_SIZE,
        token,
      ),
    [state, taskType, label, prefix, token],
    scanned ? 30_000 : 5000,
  );
  const now = Date.now();
  const filters = { state, taskType, label, prefix };

  const onFind = async (e: Event) => {
    e.preventDefault();
    const id = find.trim();
    if (!id) return;
    try {
      await call(`${JOB}/GetJob`, { jobId: id });
      go(['jobs', id]);
    } catch (err) {
      // Not an id: list the jobs whose id starts with it (a range read on the server).
      if ((err as { code?: string }).code === 'NOT_FOUND') go(['jobs'], { ...filters, prefix: id });
      else setFindError(err as Error);
    }
  };
  const onFilter = (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget as HTMLFormElement);
    go(['jobs'], { state: String(f.get('state') ?? ''), taskType: String(f.get('taskType') ?? '').trim(), label: String(f.get('label') ?? '').trim(), prefix: String(f.get('prefix') ?? '').trim() });
  };

  return (
    <div class="page">
      <h1>Jobs</h1>
      <div class="toolbar">
        <form class="inline" onSubmit={onFind} role="search">
          <label>
            Job id <input name="id" value={find} onInput={(e) => setFind((e.target as HTMLInputElement).value)} placeholder="id or its start" />
          </label>
          <button type="submit">Open</button>
        </form>
        <form class="inline" onSubmit={onFilter} aria-label="filter jobs">
          <label>
            State{' '}
            <select name="state" value={state}>
              <option value="">any</option>
              <option value="JOB_STATE_ACTIVE">active</option>
              <option value="JOB_STATE_PAUSED">paused</option>
              <option value="JOB_STATE_COMPLETED">completed</option>
            </select>
          </label>
          <label>
            Task type <input name="taskType" value={taskType} size={12} />
          </label>
          <label>
            Labels <input name="label" value={label} placeholder="team=ops,env=prod" size={16} />
          </label>
          <label>
            Id starts with <input name="prefix" value={prefix} size={12} />
          </label>
          <button type="submit">Filter</button>
        </form>
      </div>
      <ErrorLine error={findError ?? jobs.error} />
      <Section title="Next fires in the coming hour">
        <div class="timeline" role="img" aria-label="next fires of the jobs on this page within the coming hour">
          {jobs.data?.jobs
            .filter((j) => num(j.nextFireUnixMs) > 0 && num(j.nextFireUnixMs) - now < HOUR_MS)
            .map((j) => (
              <a
                key={j.id}
                class="tick"
                href={href(['jobs', j.id])}
                style={`left:${Math.max(0, Math.min(100, ((num(j.nextFireUnixMs) - now) / HOUR_MS) * 100)).toFixed(2)}%`}
                title={`${j.id} ${relative(j.nextFireUnixMs, now)}`}
              />
            ))}
          <span class="axis-start">now</span>
          <span class="axis-mid">+30 min</span>
          <span class="axis-end">+60 min</span>
        </div>
      </Section>
      <div class="table-wrap">
        <table class="jobs">
          <thead>
            <tr>
              <th>job</th>
              <th>state</th>
              <th>task type</th>
              <th>schedule</th>
              <th>next fire</th>
              <th>actions</th>
            </tr>
          </thead>
          <tbody>
            {jobs.data?.jobs.map((j) => (
              <tr key={j.id} data-job={j.id}>
                <td>
                  <a href={href(['jobs', j.id])}>{j.id}</a>
                </td>
                <td>
                  <Badge kind="job" value={jobState(j.state)} />
                </td>
                <td>{j.spec?.taskType}</td>
                <td>{scheduleInWords(j.spec?.schedule)}</td>
                <td>{relative(j.nextFireUnixMs, now)}</td>
                <td>
                  <div class="row-actions">
                    {jobActions(j).map((a) => (
                      <button key={a.label} type="button" class={a.confirm.danger ? 'danger small' : 'small'} aria-label={`${a.label} ${j.id}`} onClick={() => setPending(a.confirm)}>
                        {a.label}
                      </button>
                    ))}
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {jobs.data && jobs.data.jobs.length === 0 && (
        <p class="muted">{jobs.data.nextPageToken ? 'No match in the part of the job list searched so far (the search stops after a while): Next → searches on.' : 'No jobs match.'}</p>
      )}
      <nav class="pager" aria-label="pages">
        {token && (
          <a href={href(['jobs'], { ...filters, page: prev.split('|').filter(Boolean).slice(-1)[0], prev: prev.split('|').filter(Boolean).slice(0, -1).join('|') })}>← Previous</a>
        )}
        {jobs.data?.nextPageToken && <a href={href(['jobs'], { ...filters, page: jobs.data.nextPageToken, prev: [...prev.split('|').filter(Boolean), token || ''].join('|') })}>Next →</a>}
      </nav>
      <ConfirmDialog
        pending={pending}
        onDone={(r) => {
          setPending(undefined);
          if (r.ok) jobs.reload();
        }}
      />
    </div>
  );
}
