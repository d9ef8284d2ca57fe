// One job: its spec in words (schedule, zone and DST policy), upcoming fires, and its run history
// with each run's attempts on a timeline.
import { useState } from 'preact/hooks';
import { call } from '../api.js';
import { base64Text, duration, enumName, inZone, jobState, num, relative, runState, scheduleInWords, utc, zoneOf } from '../format.js';
import { jobActions } from '../job-actions.js';
import { go, href } from '../router.js';
import { JOB, type Job, type Run } from '../types.js';
import { Badge, ConfirmDialog, ErrorLine, Section, useLoad, type PendingConfirm } from '../ui.js';

function Attempts({ run }: { run: Run }) {
  if (run.attempts.length === 0) return <span class="muted">no attempt yet{run.waitingFor ? ` (waiting for ${run.waitingFor})` : ''}</span>;
  const start = Math.min(...run.attempts.map((a) => num(a.startedUnixMs)));
  const end = Math.max(...run.attempts.map((a) => num(a.endedUnixMs) || Date.now()), start + 1);
  return (
    <div class="attempts">
      <div class="attempt-bars" aria-hidden="true">
        {run.attempts.map((a) => {
          const s = num(a.startedUnixMs);
          const e = num(a.endedUnixMs) || Date.now();
          return (
            <span
              key={a.number}
              class={`bar outcome-${enumName(a.outcome, 'ATTEMPT_OUTCOME_') || 'running'}`}
              style={`left:${(((s - start) / (end - start)) * 100).toFixed(1)}%;width:${Math.max(2, ((e - s) / (end - start)) * 100).toFixed(1)}%`}
            />
          );
        })}
      </div>
      <ol class="attempt-list">
        {run.attempts.map((a) => (
          <li key={a.number}>
            #{a.number} on <strong>{a.workerId}</strong> (token {a.fencingToken}) {utc(a.startedUnixMs)}
            {num(a.endedUnixMs) > 0 ? `, ${duration(num(a.endedUnixMs) - num(a.startedUnixMs))}` : ', running'}: {enumName(a.outcome, 'ATTEMPT_OUTCOME_') || 'in progress'}
            {a.error && (
              <span class="err-text">
                {' '}
                — {a.error.type}: {a.error.message}
              </span>
            )}
          </li>
        ))}
      </ol>
      {run.output && <pre class="output">{base64Text(run.output)}</pre>}
    </div>
  );
}

export function JobPage({ id }: { id: string }) {
  const [pending, setPending] = useState<PendingConfirm | undefined>(undefined);
  const job = useLoad(() => call<{ job: Job; upcomingFires: Array<{ slotUnixMs: string; scheduledUnixMs: string }> }>(`${JOB}/GetJob`, { jobId: id, upcomingFires: 10 }), [id], 3000);
  const runs = useLoad(() => call<{ runs: Run[] }>(`${JOB}/ListRuns`, { jobId: id, pageSize: 25 }), [id], 2000);
  const j = job.data?.job;
  const spec = j?.spec;
  const zone = zoneOf(spec);
  return (
    <div class="page">
      <p>
        <a href={href(['jobs'])}>← Jobs</a>
      </p>
      <h1>
        {id} {j && <Badge kind="job" value={jobState(j.state)} />}
      </h1>
      <ErrorLine error={job.error ?? runs.error} />
      {j && (
        <div class="actions">
          {jobActions(j).map((a) => (
            <button key={a.label} type="button" class={a.confirm.danger ? 'danger' : ''} onClick={() => setPending(a.confirm)}>
              {a.label}
            </button>
          ))}
        </div>
      )}
      {j && spec && (
        <div class="grid2">
          <Section title="Spec">
            <dl class="spec">
              <dt>schedule</dt>
              <dd>{scheduleInWords(spec.schedule)}</dd>
              {spec.schedule?.cron && (
                <>
                  <dt>expression</dt>
                  <dd>
                    <code>{spec.schedule.cron.expression}</code>
                  </dd>
                </>
              )}
              <dt>time zone</dt>
              <dd>{zone}</dd>
              <dt>DST</dt>
              <dd>
                gap: {enumName(spec.dst?.gap, 'DST_GAP_POLICY_') || 'default (shift forward)'}, fold: {enumName(spec.dst?.fold, 'DST_FOLD_POLICY_') || 'default (first)'}
              </dd>
              <dt>task type</dt>
              <dd>{spec.taskType}</dd>
              <dt>retry</dt>
              <dd>
                {spec.retry ? `${spec.retry.maxAttempts} attempts, backoff ${duration(spec.retry.initialBackoffMs)}–${duration(spec.retry.maxBackoffMs)}` : 'default'}
              </dd>
              <dt>overlap / misfire</dt>
              <dd>
                {enumName(spec.overlapPolicy, 'OVERLAP_POLICY_') || 'default'} / {enumName(spec.misfirePolicy, 'MISFIRE_POLICY_') || 'default'}
              </dd>
              <dt>labels</dt>
              <dd>{Object.entries(spec.labels).map(([k, v]) => `${k}=${v}`).join(', ') || '—'}</dd>
              <dt>payload</dt>
              <dd>
                <code>{base64Text(spec.payload).slice(0, 200) || '—'}</code>
              </dd>
              {j.pauseNote && (
                <>
                  <dt>pause note</dt>
                  <dd>{j.pauseNote}</dd>
                </>
              )}
              <dt>version</dt>
              <dd>{j.version}</dd>
            </dl>
          </Section>
          <Section title="Upcoming fires">
            <table>
              <thead>
                <tr>
                  <th>UTC</th>
                  {zone !== 'UTC' && <th>{zone}</th>}
                  <th />
                </tr>
              </thead>
              <tbody>
                {job.data!.upcomingFires.map((f) => (
                  <tr key={f.slotUnixMs}>
                    <td>{utc(f.scheduledUnixMs || f.slotUnixMs)}</td>
                    {zone !== 'UTC' && <td>{inZone(f.scheduledUnixMs || f.slotUnixMs, zone)}</td>}
                    <td class="muted">{relative(f.scheduledUnixMs || f.slotUnixMs)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {job.data!.upcomingFires.length === 0 && <p class="muted">None{j.state === 'JOB_STATE_PAUSED' ? ' while paused' : ''}.</p>}
          </Section>
        </div>
      )}
      <Section title="Run history">
        <div class="table-wrap">
          <table class="runs">
            <thead>
              <tr>
                <th>run</th>
                <th>state</th>
                <th>slot</th>
                <th>attempts</th>
              </tr>
            </thead>
            <tbody>
              {runs.data?.runs.map((r) => (
                <tr key={r.id} data-run={r.id}>
                  <td>
                    {r.id}
                    {r.manual ? ' (manual)' : ''}
                    {r.redriveCount > 0 ? ` (re-driven ×${r.redriveCount})` : ''}
                  </td>
                  <td>
                    <Badge kind="run" value={runState(r.state)} />
                    {r.reason && <div class="muted small">{r.reason}</div>}
                  </td>
                  <td>{utc(r.slotUnixMs)}</td>
                  <td>
                    <Attempts run={r} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {runs.data && runs.data.runs.length === 0 && <p class="muted">No runs yet.</p>}
      </Section>
      <ConfirmDialog
        pending={pending}
        onDone={(r) => {
          setPending(undefined);
          if (!r.ok) return;
          if (pending?.action === 'Delete') go(['jobs']);
          else {
            job.reload();
            runs.reload();
          }
        }}
      />
    </div>
  );
}
