// Overview: the cluster (members, leader), workers, throughput, failures, what the watchdog flagged.
import { useEffect, useState } from 'preact/hooks';
import { call, stream } from '../api.js';
import { enumName, num, relative, utc } from '../format.js';
import { href } from '../router.js';
import { CLUSTER, JOB, WATCH, type RunCounts, type RunEvent, type Status, type Workers } from '../types.js';
import { ErrorLine, Section, Stat, useLoad } from '../ui.js';

const HOUR_MS = 3_600_000;

/** Runs reaching a terminal state per second, over the last 10 s of the live watch. */
function useRunsPerSecond(): { rate: number | undefined; error: Error | undefined } {
  const [rate, setRate] = useState<number | undefined>(undefined);
  const [error, setError] = useState<Error | undefined>(undefined);
  useEffect(() => {
    const ctl = new AbortController();
    const ends: number[] = [];
    const started = Date.now();
    const terminal = ['RUN_STATE_SUCCEEDED', 'RUN_STATE_DEAD', 'RUN_STATE_FAILED', 'RUN_STATE_CANCELLED', 'RUN_STATE_SKIPPED', 'RUN_STATE_MISSED'];
    stream<{ events: RunEvent[] }>(
      `${WATCH}/WatchRuns`,
      { states: terminal },
      (m) => {
        const now = Date.now();
        for (let i = 0; i < m.events.length; i++) ends.push(now);
      },
      ctl.signal,
    ).catch((e: Error) => {
      if (!ctl.signal.aborted) setError(e);
    });
    const t = setInterval(() => {
      const now = Date.now();
      while (ends.length && ends[0]! < now - 10_000) ends.shift();
      setRate(ends.length / Math.min(10, Math.max(1, (now - started) / 1000)));
    }, 1000);
    return () => {
      clearInterval(t);
      ctl.abort();
    };
  }, []);
  return { rate, error };
}

export function Overview() {
  const status = useLoad(() => call<Status>(`${CLUSTER}/GetStatus`), [], 2000);
  const workers = useLoad(() => call<Workers>(`${CLUSTER}/ListWorkers`), [], 3000);
  // Counted by the node (CountRuns): a few hundred bytes, whatever the number of runs.
  const failures = useLoad(() => call<RunCounts>(`${JOB}/CountRuns`, { sinceUnixMs: String(Date.now() - HOUR_MS), consistency: 'READ_CONSISTENCY_STALE' }), [], 15_000);
  const rps = useRunsPerSecond();
  const s = status.data;
  const w = workers.data;
  const leaderIndex = s ? Math.max(...s.members.map((m) => num(m.matchIndex)), num(s.commitIndex)) : 0;
  // A follower hears only from the leader: what it knows of the other followers says nothing.
  const seen = (id: string) => !!s && (s.role === 'NODE_ROLE_LEADER' || id === s.nodeId || id === s.leaderId);
  const f = failures.data;
  return (
    <div class="page">
      <h1>Overview</h1>
      <div class="stats">
        <Stat label="leader" value={s ? s.leaderId || 'none' : '…'} warn={!!s && !s.leaderId} />
        <Stat label="workers connected" value={w ? w.workers.length : '…'} warn={!!w && w.workers.length === 0} />
        <Stat label="runs finished / s (live)" value={rps.rate === undefined ? '…' : rps.rate.toFixed(1)} />
        <Stat label="failed runs, last hour" value={f ? num(f.failed) : '…'} warn={!!f && num(f.failed) > 0} />
        <Stat label="dead runs, last hour" value={<a href={href(['runs', 'dead'])}>{f ? num(f.dead) : '…'}</a>} warn={!!f && num(f.dead) > 0} />
      </div>
      <ErrorLine error={status.error ?? workers.error ?? failures.error ?? rps.error} />
      <Section title="Members">
        {s && (
          <>
            <p class="muted">
              Seen from node <strong>{s.nodeId}</strong> ({enumName(s.role, 'NODE_ROLE_')}), term {s.term}, commit {s.commitIndex}, applied {s.appliedIndex}
              {num(s.clusterTimeUnixMs) > 0 && `, cluster time ${utc(s.clusterTimeUnixMs)}`}
              {s.role !== 'NODE_ROLE_LEADER' && ' — match index, lag and the health of other followers are the leader’s to know'}
            </p>
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th>member</th>
                    <th>role</th>
                    <th>client address</th>
                    <th>match index</th>
                    <th>lag</th>
                    <th>last contact</th>
                    <th>health</th>
                  </tr>
                </thead>
                <tbody>
                  {s.members.map((m) => (
                    <tr key={m.id}>
                      <td>{m.id}</td>
                      <td>{m.id === s.leaderId ? 'leader' : 'follower'}</td>
                      <td>{m.clientAddress}</td>
                      <td>{s.role === 'NODE_ROLE_LEADER' ? m.matchIndex : '—'}</td>
                      <td>{s.role === 'NODE_ROLE_LEADER' ? Math.max(0, leaderIndex - num(m.matchIndex)) : '—'}</td>
                      <td>{m.id === s.nodeId ? 'self' : !seen(m.id) ? '—' : num(m.lastContactMs) < 0 ? 'never' : `${m.lastContactMs} ms ago`}</td>
                      <td>
                        {seen(m.id) ? (
                          <span class={`badge ${m.healthy ? 'ok' : 'bad'}`}>{m.healthy ? 'healthy' : 'unreachable'}</span>
                        ) : (
                          <span class="muted">—</span>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </>
        )}
      </Section>
      <div class="grid2">
        <Section title="Flagged by the watchdog">
          {w && w.stalledSlots.length === 0 && <p class="muted">No stalled slots.</p>}
          <ul>
            {w?.stalledSlots.map((x) => (
              <li key={`${x.jobId}@${x.slotUnixMs}`}>
                <a href={href(['jobs', x.jobId])}>{x.jobId}</a>: slot {utc(x.slotUnixMs)} ({relative(x.slotUnixMs)}) has no run
              </li>
            ))}
          </ul>
        </Section>
        <Section title="Task types without workers">
          {w && w.unservedTaskTypes.length === 0 && <p class="muted">Every task type with waiting runs has a worker.</p>}
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
