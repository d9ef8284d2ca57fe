// Runs: a live feed (WatchRuns over server-sent events) with state filters, and the dead-letter
// view (DEAD runs, a page at a time) with retry of one run, of the selected ones, or of all of a
// job's / task type's (RetryRuns, in bounded server-side batches).
import { useEffect, useState } from 'preact/hooks';
import { call, stream } from '../api.js';
import { relative, runState, utc } from '../format.js';
import { may } from '../permissions.js';
import { href, type Route } from '../router.js';
import { JOB, WATCH, type Run, type RunEvent } from '../types.js';
import { Badge, ConfirmDialog, ErrorLine, Section, useLoad, type PendingConfirm } from '../ui.js';

const STATES = ['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'DEAD', 'CANCELLED', 'SKIPPED', 'MISSED'];
const LIVE_ROWS = 200;

function Live() {
  const [states, setStates] = useState<string[]>([]);
  const [rows, setRows] = useState<Array<{ index: string; run: Run }>>([]);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [connected, setConnected] = useState(false);
  useEffect(() => {
    const ctl = new AbortController();
    setRows([]);
    setError(undefined);
    let fromIndex = '0';
    const open = (): void => {
      stream<{ events: RunEvent[]; progressIndex: string }>(
        `${WATCH}/WatchRuns`,
        { states: states.map((s) => `RUN_STATE_${s}`), fromIndex },
        (m) => {
          setConnected(true);
          if (m.progressIndex !== '0') fromIndex = m.progressIndex;
          if (m.events.length === 0) return;
          setRows((old) => {
            const next = [...m.events.slice().reverse().map((e) => ({ index: e.index, run: e.run })), ...old];
            return next.slice(0, LIVE_ROWS);
          });
        },
        ctl.signal,
      ).then(
        // The node ended the stream (shutting down): resume where it left off.
        () => !ctl.signal.aborted && setTimeout(open, 1000),
        (e: Error) => {
          if (ctl.signal.aborted) return;
          setConnected(false);
          setError(e);
          fromIndex = '0';
          setTimeout(open, 2000);
        },
      );
    };
    open();
    return () => ctl.abort();
  }, [states.join(',')]);
  const toggle = (s: string) => setStates((old) => (old.includes(s) ? old.filter((x) => x !== s) : [...old, s]));
  return (
    <Section title="Live" actions={<span class={`badge ${connected ? 'ok' : 'bad'}`}>{connected ? 'watching' : 'connecting'}</span>}>
      <fieldset class="chips">
        <legend>States (none checked: all)</legend>
        {STATES.map((s) => (
          <label key={s}>
            <input type="checkbox" checked={states.includes(s)} onChange={() => toggle(s)} /> {s.toLowerCase()}
          </label>
        ))}
      </fieldset>
      <ErrorLine error={error} />
      <div class="table-wrap">
        <table class="runs live" aria-live="polite">
          <thead>
            <tr>
              <th>index</th>
              <th>run</th>
              <th>state</th>
              <th>attempt</th>
              <th>worker</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={`${r.index}-${r.run.id}-${r.run.state}`} data-run={r.run.id} data-state={r.run.state}>
                <td>{r.index}</td>
                <td>
                  <a href={href(['jobs', r.run.jobId])}>{r.run.id}</a>
                </td>
                <td>
                  <Badge kind="run" value={runState(r.run.state)} />
                </td>
                <td>{r.run.attempt}</td>
                <td>{r.run.workerId}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {rows.length === 0 && <p class="muted">Waiting for run changes…</p>}
    </Section>
  );
}

function DeadLetters({ route }: { route: Route }) {
  const token = route.query.get('page') ?? '';
  const jobFilter = route.query.get('job') ?? '';
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [pending, setPending] = useState<PendingConfirm | undefined>(undefined);
  const [done, setDone] = useState('');
  const dead = useLoad(() => call<{ runs: Run[]; nextPageToken: string }>(`${JOB}/ListRuns`, { state: 'RUN_STATE_DEAD', jobId: jobFilter, pageSize: 50, pageToken: token }), [token, jobFilter], 3000);
  const canRetry = may(`${JOB}/RetryRun`);
  const canBulk = may(`${JOB}/RetryRuns`);
  const retryOne = (r: Run): PendingConfirm => ({
    title: `Retry ${r.id}?`,
    body: 'The run becomes pending again with a fresh retry budget and a higher fencing token; its history is kept.',
    action: 'Retry',
    run: async () => {
      await call(`${JOB}/RetryRun`, { runId: r.id });
      setDone(`re-driven ${r.id}`);
    },
  });
  const retrySelected = (): PendingConfirm => ({
    title: `Retry ${selected.size} selected runs?`,
    body: 'Each becomes pending again with a fresh retry budget.',
    action: `Retry ${selected.size}`,
    run: async () => {
      for (const id of selected) await call(`${JOB}/RetryRun`, { runId: id });
      setDone(`re-driven ${selected.size} runs`);
      setSelected(new Set());
    },
  });
  const retryAll = (): PendingConfirm => ({
    title: jobFilter ? `Retry every dead run of ${jobFilter}?` : 'Retry every dead run?',
    body: 'RetryRuns re-drives them on the server, at most 500 per call, until none is left.',
    action: 'Retry all',
    danger: true,
    run: async () => {
      let pageToken = '';
      let total = 0;
      do {
        const r = await call<{ runIds: string[]; nextPageToken: string; more: boolean }>(`${JOB}/RetryRuns`, { jobId: jobFilter, state: 'RUN_STATE_DEAD', maxRuns: 500, pageToken });
        total += r.runIds.length;
        pageToken = r.more ? r.nextPageToken : '';
      } while (pageToken);
      setDone(`re-driven ${total} runs`);
    },
  });
  const toggle = (id: string) =>
    setSelected((old) => {
      const next = new Set(old);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });
  return (
    <Section
      title="Dead letters"
      actions={
        <span class="actions">
          {canRetry && (
            <button type="button" disabled={selected.size === 0} onClick={() => setPending(retrySelected())}>
              Retry selected ({selected.size})
            </button>
          )}
          {canBulk && (
            <button type="button" class="danger" onClick={() => setPending(retryAll())}>
              Retry all{jobFilter ? ` of ${jobFilter}` : ''}
            </button>
          )}
        </span>
      }
    >
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          const f = new FormData(e.currentTarget as HTMLFormElement);
          location.hash = href(['runs', 'dead'], { job: String(f.get('job') ?? '').trim() });
        }}
      >
        <label>
          Job id <input name="job" value={jobFilter} />
        </label>
        <button type="submit">Filter</button>
      </form>
      {done && (
        <p class="notice" role="status">
          {done}
        </p>
      )}
      <ErrorLine error={dead.error} />
      <div class="table-wrap">
        <table class="runs dead">
          <thead>
            <tr>
              <th>
                <span class="sr-only">select</span>
              </th>
              <th>run</th>
              <th>finished</th>
              <th>last error</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {dead.data?.runs.map((r) => {
              const last = r.attempts[r.attempts.length - 1];
              return (
                <tr key={r.id} data-run={r.id}>
                  <td>
                    <input type="checkbox" aria-label={`select ${r.id}`} checked={selected.has(r.id)} onChange={() => toggle(r.id)} />
                  </td>
                  <td>
                    <a href={href(['jobs', r.jobId])}>{r.id}</a>
                  </td>
                  <td title={utc(r.finishedUnixMs)}>{relative(r.finishedUnixMs)}</td>
                  <td>{last?.error ? `${last.error.type}: ${last.error.message}` : r.reason}</td>
                  <td>
                    {canRetry && (
                      <button type="button" class="small" onClick={() => setPending(retryOne(r))}>
                        Retry
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {dead.data && dead.data.runs.length === 0 && <p class="muted">No dead runs.</p>}
      <nav class="pager" aria-label="pages">
        {token && <a href={href(['runs', 'dead'], { job: jobFilter })}>← First page</a>}
        {dead.data?.nextPageToken && <a href={href(['runs', 'dead'], { job: jobFilter, page: dead.data.nextPageToken })}>Next →</a>}
      </nav>
      <ConfirmDialog
        pending={pending}
        onDone={(r) => {
          setPending(undefined);
          if (r.ok) dead.reload();
        }}
      />
    </Section>
  );
}

export function Runs({ route }: { route: Route }) {
  const tab = route.path[1] === 'dead' ? 'dead' : 'live';
  return (
    <div class="page">
      <h1>Runs</h1>
      <nav class="tabs" aria-label="run views">
        <a href={href(['runs'])} aria-current={tab === 'live' ? 'page' : undefined}>
          Live
        </a>
        <a href={href(['runs', 'dead'])} aria-current={tab === 'dead' ? 'page' : undefined}>
          Dead letters
        </a>
      </nav>
      {tab === 'live' ? <Live /> : <DeadLetters route={route} />}
    </div>
  );
}
