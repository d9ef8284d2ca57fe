// Retention: N jobs firing every second whose task type no worker serves (issue 30), on a real
// 3-node cluster, for M minutes. Without retention for every outcome the store grows by N runs a
// second forever; with it, each job holds at most max_runs terminal runs (plus the trim slack)
// and its backlog at most max_pending_runs. Prints the stored run count (by state, read through
// ListRuns pages from the leader) and the leader's RSS at the start, every --sample-seconds, and
// at the end: both should be flat once every job reached its retention.
//
// Run: npm run bench -- retention [--jobs 1000] [--minutes 10] [--max-runs 100]
//      [--deadline-ms 1000 (0: no starting deadline; runs then stop at max_pending_runs)]
//      [--sample-seconds 60] [--server-flags "..."]
// The last stdout line is JSON.
import { HeraldClient } from '../src/client/herald-client.js';
import { JobSpec } from '../src/gen/herald/v1/job.js';
import { RunState } from '../src/gen/herald/v1/run.js';
import { sleep } from '../test/raft-runtime/helpers/cluster.js';
import { createJobsReliably, SchedulerCluster } from '../test/dispatch/helpers/process-cluster.js';
import { numArg, strArg } from './lib/args.js';
import { useBenchPortBlock } from './lib/ports.js';
import { machineLoad, rssMiB } from './lib/machine.js';

const JOBS = numArg('jobs', 1000);
const MINUTES = numArg('minutes', 10);
const MAX_RUNS = numArg('max-runs', 100);
const DEADLINE_MS = numArg('deadline-ms', 1000);
const SAMPLE_S = numArg('sample-seconds', 60);
const log = (m: string) => process.stderr.write(`[retention] ${m}\n`);

interface Sample {
  atS: number;
  storedRuns: number;
  byState: Record<string, number>;
  leaderRssMiB: number;
  countMs: number;
}

/** Every stored run, counted by state through ListRuns pages of the leader (linearizable reads not needed). */
async function countRuns(client: HeraldClient): Promise<{ total: number; byState: Record<string, number> }> {
  const byState: Record<string, number> = {};
  let total = 0;
  let pageToken = '';
  do {
    const page = await client.listRuns({ pageSize: 1000, pageToken }, { deadlineMs: 60_000 });
    for (const r of page.items) byState[RunState[r.state]] = (byState[RunState[r.state]] ?? 0) + 1;
    total += page.items.length;
    pageToken = page.nextPageToken;
  } while (pageToken);
  return { total, byState };
}

useBenchPortBlock();
const loadAtStart = machineLoad();
const c = await SchedulerCluster.start({ extraArgs: strArg('server-flags', '').split(' ').filter((f) => f !== '') });
try {
  const items = Array.from({ length: JOBS }, (_, i) => ({
    id: `ret-${String(i).padStart(6, '0')}`,
    spec: JobSpec.fromPartial({
      taskType: 'unserved',
      schedule: { kind: { $case: 'every', every: { intervalMs: 1000, anchorUnixMs: 0 } } },
      startingDeadlineMs: DEADLINE_MS,
      retention: { maxRuns: MAX_RUNS },
    }),
  }));
  await createJobsReliably(c.client, items);
  const t0 = Date.now();
  log(`${JOBS} jobs created`);
  const samples: Sample[] = [];
  const sample = async (): Promise<Sample> => {
    const leader = await c.raft.waitForLeader(30_000);
    const c0 = Date.now();
    const { total, byState } = await countRuns(c.client);
    const s = { atS: Math.round((Date.now() - t0) / 1000), storedRuns: total, byState, leaderRssMiB: rssMiB(c.raft.nodes.get(leader)!.proc?.pid).rss, countMs: Date.now() - c0 };
    log(JSON.stringify(s));
    samples.push(s);
    return s;
  };
  const start = await sample();
  const endAt = t0 + MINUTES * 60_000;
  while (Date.now() < endAt) {
    await sleep(Math.min(SAMPLE_S * 1000, Math.max(0, endAt - Date.now())));
    await sample();
  }
  const end = samples.at(-1)!;
  // The bound the store should hold once every job reached its retention: max_runs terminal runs
  // plus the trim slack (a tenth, at most 10) and the runs still waiting for their deadline.
  const slack = Math.min(10, Math.max(1, Math.ceil(MAX_RUNS / 10)));
  console.log(
    JSON.stringify({
      bench: 'retention',
      jobs: JOBS,
      minutes: MINUTES,
      maxRuns: MAX_RUNS,
      deadlineMs: DEADLINE_MS,
      start: { storedRuns: start.storedRuns, leaderRssMiB: start.leaderRssMiB },
      end: { storedRuns: end.storedRuns, byState: end.byState, leaderRssMiB: end.leaderRssMiB },
      boundRuns: JOBS * (MAX_RUNS + slack + Math.ceil(DEADLINE_MS / 1000) + 2),
      samples: samples.map((s) => ({ atS: s.atS, storedRuns: s.storedRuns, leaderRssMiB: s.leaderRssMiB })),
      loadAtStart,
      loadAtEnd: machineLoad(),
    }),
  );
} finally {
  await c.cleanup();
}
