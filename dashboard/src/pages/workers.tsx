// Workers and task types: the streams connected to the leader (task types, credits, held runs,
// last heard), the limits per task type, and task types with waiting runs but no worker.
import { call } from '../api.js';
import { relative } from '../format.js';
import { CLUSTER, TASK_TYPES, type TaskTypeConfig, type Workers as WorkersList } from '../types.js';
import { ErrorLine, Section, useLoad } from '../ui.js';

export function Workers() {
  const workers = useLoad(() => call<WorkersList>(`${CLUSTER}/ListWorkers`), [], 2000);
  const types = useLoad(() => call<{ configs: Array<TaskTypeConfig & { ratePerSecond: number; burst: number }> }>(`${TASK_TYPES}/ListTaskTypes`), [], 10_000);
  const w = workers.data;
  const served = new Map<string, number>();
  for (const x of w?.workers ?? []) for (const t of x.taskTypes) served.set(t, (served.get(t) ?? 0) + 1);
  return (
    <div class="page">
      <h1>Workers and task types</h1>
      <ErrorLine error={workers.error ?? types.error} />
      <Section title={`Connected workers${w ? ` (${w.workers.length}, on leader ${w.leaderId})` : ''}`}>
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th>worker</th>
                <th>task types</th>
                <th>credits</th>
                <th>held runs</th>
                <th>last heard</th>
                <th>connected</th>
                <th>state</th>
              </tr>
            </thead>
            <tbody>
              {w?.workers.map((x) => (
                <tr key={x.workerId}>
                  <td>{x.workerId}</td>
                  <td>{x.taskTypes.join(', ')}</td>
                  <td>{x.credits}</td>
                  <td>{x.heldRuns}</td>
                  <td>{relative(x.lastHeardUnixMs)}</td>
                  <td>{relative(x.connectedUnixMs)}</td>
                  <td>
                    <span class={`badge ${x.silent ? 'bad' : x.draining ? 'warn' : 'ok'}`}>{x.silent ? 'silent' : x.draining ? 'draining' : 'serving'}</span>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {w && w.workers.length === 0 && <p class="muted">No worker is connected.</p>}
      </Section>
      <div class="grid2">
        <Section title="Task types">
          <table>
            <thead>
              <tr>
                <th>task type</th>
                <th>workers</th>
                <th>max running</th>
                <th>start rate</th>
              </tr>
            </thead>
            <tbody>
              {[...new Set([...served.keys(), ...(types.data?.configs.map((c) => c.taskType) ?? [])])].sort().map((t) => {
                const c = types.data?.configs.find((x) => x.taskType === t);
                return (
                  <tr key={t}>
                    <td>{t}</td>
                    <td>{served.get(t) ?? 0}</td>
                    <td>{c && c.maxRunning > 0 ? c.maxRunning : 'no limit'}</td>
                    <td>{c && c.ratePerSecond > 0 ? `${c.ratePerSecond}/s, burst ${c.burst}` : 'no limit'}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </Section>
        <Section title="Waiting without a worker">
          {w && w.unservedTaskTypes.length === 0 && <p class="muted">None.</p>}
          <ul>
            {w?.unservedTaskTypes.map((u) => (
              <li key={u.taskType}>
                <strong>{u.taskType}</strong>: {u.waitingRuns} runs waiting
              </li>
            ))}
          </ul>
        </Section>
      </div>
    </div>
  );
}
