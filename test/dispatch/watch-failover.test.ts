// Issue 31 acceptance: a watcher sees every state change of 1,000 runs exactly once and in order
// across a kill -9 of the leader it was attached to, resuming by index on another node. Real
// server and worker processes.
//
// "Every change" is what the nodes' change logs record: each run's state as each applied batch of
// the serving node left it (a batch that claimed and finished a run shows it finished). So the
// test asserts: every run is seen to reach the terminal state the store holds, exactly once; no
// (run, state, attempt) is seen twice; per run the states only move forward; indexes never go back.
import { afterAll, describe, expect, it } from 'vitest';
import { HeraldClient } from '../../src/client/herald-client.js';
import type { WatchItem } from '../../src/client/watch-stream.js';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { RunState, type Run } from '../../src/gen/herald/v1/run.js';
import { sleep, waitFor } from '../raft-runtime/helpers/cluster.js';
import { allRuns, createJobsReliably, SchedulerCluster } from './helpers/process-cluster.js';

const RUNS = 1000;
const TERMINAL = new Set([RunState.RUN_STATE_SUCCEEDED, RunState.RUN_STATE_FAILED, RunState.RUN_STATE_DEAD, RunState.RUN_STATE_CANCELLED, RunState.RUN_STATE_SKIPPED, RunState.RUN_STATE_MISSED]);
/** The order states are passed through within one attempt. */
const RANK: Partial<Record<RunState, number>> = { [RunState.RUN_STATE_PENDING]: 0, [RunState.RUN_STATE_RUNNING]: 1 };
const rank = (s: RunState): number => RANK[s] ?? 2;

describe('watch across a leader kill (processes)', () => {
  let c: SchedulerCluster | undefined;
  let watcher: HeraldClient | undefined;
  afterAll(async () => {
    watcher?.close();
    await c?.cleanup();
  });

  it('sees every run reach its end exactly once and in order, resuming by index on another node', { timeout: 60_000 }, async () => {
    c = await SchedulerCluster.start({ leaseMs: 3000, heartbeatMs: 300 });
    const workers = [c.startWorker('wa', { capacity: 100, sleepMs: 50, quiet: true }), c.startWorker('wb', { capacity: 100, sleepMs: 50, quiet: true })];
    await c.waitWorkersConnected(workers);
    const leader = await c.raft.waitForLeader();
    const addressOf = (id: string) => `${c!.raft.hostOf(id)}:${c!.raft.nodes.get(id)!.clientPort}`;
    // The watcher starts on the leader, the node about to be killed.
    watcher = new HeraldClient({ endpoints: [addressOf(leader), ...[...c.raft.nodes.keys()].filter((id) => id !== leader).map(addressOf)] });

    const items: WatchItem<Run>[] = [];
    const abort = new AbortController();
    let watchError: unknown;
    const consumed = (async () => {
      for await (const it of watcher!.watchRuns({ taskType: 'test' }, { progress: true, signal: abort.signal })) items.push(it);
    })().catch((e: unknown) => void (watchError = e));
    await waitFor('watch attached', () => items.some((i) => i.type === 'progress'), 10_000, 20);

    const t0 = Date.now();
    const start = t0 + 2000;
    await createJobsReliably(
      c.client,
      Array.from({ length: RUNS }, (_, i) => ({
        id: `w-${i}`,
        spec: JobSpec.fromPartial({ taskType: 'test', schedule: { kind: { $case: 'at', at: { atUnixMs: start + Math.floor((i * 4000) / RUNS) } } } }),
      })),
    );
    await sleep(Math.max(0, start + 2000 - Date.now()));
    const progressAtKill = Math.max(0, ...items.filter((i) => i.type === 'progress').map((i) => i.index));
    await c.raft.kill(leader, 'SIGKILL');

    const changes = () => items.filter((i): i is Extract<WatchItem<Run>, { type: 'change' }> => i.type === 'change');
    const finished = () => new Set(changes().filter((i) => TERMINAL.has(i.value.state)).map((i) => i.value.id)).size;
    await waitFor('every run seen finished', () => finished() >= RUNS || watchError !== undefined, 40_000, 100);
    const drainedMs = Date.now() - t0;
    abort.abort();
    await consumed;
    expect(watchError).toBeUndefined();

    const truth = new Map<string, Run>();
    await c.stopAndInspect(async (fsm) => {
      for (let i = 0; i < RUNS; i++) for (const r of await allRuns(fsm, `w-${i}`)) truth.set(r.id, r);
    });
    expect(truth.size).toBe(RUNS);

    const perRun = new Map<string, Run[]>();
    let lastIndex = 0;
    const backwards: string[] = [];
    for (const it of changes()) {
      if (it.index < lastIndex) backwards.push(`${it.value.id} at ${it.index} after ${lastIndex}`);
      lastIndex = it.index;
      perRun.set(it.value.id, [...(perRun.get(it.value.id) ?? []), it.value]);
    }
    expect(backwards).toEqual([]);
    const problems: string[] = [];
    for (const [id, run] of truth) {
      const seen = perRun.get(id) ?? [];
      const terminal = seen.filter((r) => TERMINAL.has(r.state));
      if (terminal.length !== 1 || terminal[0]!.state !== run.state) problems.push(`${id}: terminal seen ${terminal.map((r) => RunState[r.state]).join(',') || 'never'}, store ${RunState[run.state]}`);
      const keys = seen.map((r) => `${r.state}/${r.attempt}`);
      if (new Set(keys).size !== keys.length) problems.push(`${id}: repeated ${keys.join(' ')}`);
      for (let k = 1; k < seen.length; k++) {
        const a = seen[k - 1]!;
        const b = seen[k]!;
        if (b.attempt < a.attempt || (b.attempt === a.attempt && rank(b.state) < rank(a.state) && !(a.state === RunState.RUN_STATE_RUNNING && b.state === RunState.RUN_STATE_PENDING))) {
          problems.push(`${id}: ${RunState[a.state]}/${a.attempt} then ${RunState[b.state]}/${b.attempt}`);
        }
      }
    }
    expect(problems.slice(0, 20)).toEqual([]);
    // The kill happened mid-stream: changes were seen on both sides of it.
    expect(changes().some((i) => i.index <= progressAtKill) && changes().some((i) => i.index > progressAtKill)).toBe(true);
    const sawRunning = [...perRun.values()].filter((s) => s.some((r) => r.state === RunState.RUN_STATE_RUNNING)).length;
    console.log(JSON.stringify({ test: 'watch-failover', runs: RUNS, events: changes().length, sawRunning, progressAtKill, resets: items.filter((i) => i.type === 'reset').length, drainedMs }));
    expect(items.filter((i) => i.type === 'reset')).toEqual([]);
  });
});
