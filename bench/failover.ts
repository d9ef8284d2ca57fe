// Leader failover under steady load: a real 3-node cluster with worker processes runs jobs that
// fire every second; the leader fails mid-run. Reports the time until the survivors agree on a
// new leader, the fire gap (the largest lateness of a slot delivered after the fault, over the
// median lateness before it), and lost / doubled slots (both must be 0).
//
// Faults (--fault): kill (default) kills the leader with SIGKILL; blackhole runs each node in a
// network namespace of its own on a bridge (chaos/net/netns.ts, root only) and cuts the leader's
// link silently — no RST, no FIN — healing it after the window; both runs kill, then blackhole,
// and prints { bench, runs: [kill, blackhole] }.
//
// Run: npm run bench -- failover [--fault kill|blackhole|both] [--jobs 200] [--workers 2]
//      [--capacity 200] [--warmup-seconds 4] [--before-seconds 5] [--after-seconds 10]
//      [--tick-ms 100] [--election-ticks 10] [--handler-ms 10]
// Workers are Worker-library processes (bench-worker-process.ts). Lateness = handler start − slot
// time. lost = a slot in the window with no run record; missed = a slot recorded MISSED/SKIPPED
// (explicit, but counted); doubled = a run whose handler started more than once, or two runs for
// one (job, slot); notStarted = a run never started by the end. The last stdout line is JSON.
import { JobSpec } from '../src/gen/herald/v1/job.js';
import { RunState } from '../src/gen/herald/v1/run.js';
import { sleep } from '../test/raft-runtime/helpers/cluster.js';
import { allRuns, createJobsReliably, SchedulerCluster } from '../test/dispatch/helpers/process-cluster.js';
import { NetnsLab, netnsUnavailable } from '../chaos/net/netns.js';
import { numArg, strArg } from './lib/args.js';
import { BenchWorkers } from './lib/bench-workers.js';
import { useBenchPortBlock } from './lib/ports.js';
import { machineLoad } from './lib/machine.js';
import { p50p99max } from './lib/percentiles.js';

const JOBS = numArg('jobs', 200);
const WORKERS = numArg('workers', 2);
const CAPACITY = numArg('capacity', 200);
const HANDLER_MS = numArg('handler-ms', 10);
const WARMUP_S = numArg('warmup-seconds', 4);
const BEFORE_S = numArg('before-seconds', 5);
const AFTER_S = numArg('after-seconds', 10);
const TICK_MS = numArg('tick-ms', 100);
const ELECTION_TICKS = numArg('election-ticks', 10);
const FAULT = strArg('fault', 'kill');
if (!['kill', 'blackhole', 'both'].includes(FAULT)) throw new Error(`--fault wants kill, blackhole or both, got ${FAULT}`);
const log = (m: string) => process.stderr.write(`[failover] ${m}\n`);

useBenchPortBlock();
if (FAULT !== 'kill') {
  const why = await netnsUnavailable();
  if (why) throw new Error(`--fault ${FAULT}: ${why}`);
}
if (FAULT === 'both') {
  const runs = [await measure('kill'), await measure('blackhole')];
  console.log(JSON.stringify({ bench: 'failover', runs }));
} else {
  console.log(JSON.stringify(await measure(FAULT as 'kill' | 'blackhole')));
}

async function measure(fault: 'kill' | 'blackhole'): Promise<Record<string, unknown>> {
  const loadAtStart = machineLoad();
  const lab = fault === 'blackhole' ? await NetnsLab.create(3) : undefined;
  const indexOf = (id: string) => Number(id.slice(1)) - 1; // n1 → 0
  let c: SchedulerCluster;
  try {
    c = await SchedulerCluster.start({
      tickMs: TICK_MS,
      electionTicks: ELECTION_TICKS,
      leaseMs: 10_000,
      heartbeatMs: 1000,
      misfireThresholdMs: 60_000,
      ...(lab ? { host: (id: string) => lab.address(indexOf(id)), spawnPrefix: (id: string) => lab.exec(indexOf(id)) } : {}),
    });
  } catch (e) {
    await lab?.destroy();
    throw e;
  }
  let workers: BenchWorkers | undefined;
  try {
    workers = await BenchWorkers.start({ endpoints: c.endpoints, count: WORKERS, capacity: CAPACITY, handlerMs: HANDLER_MS, idPrefix: 'fw' });
    const base = Math.ceil(Date.now() / 1000) * 1000 + 2000;
    // Slots spread evenly over each second, so a kill always lands among due slots.
    await createJobsReliably(
      c.client,
      Array.from({ length: JOBS }, (_, i) => ({
        id: `fo-${i}`,
        spec: JobSpec.fromPartial({ taskType: 'test', schedule: { kind: { $case: 'every', every: { intervalMs: 1000, anchorUnixMs: base + Math.floor((i * 1000) / JOBS) } } } }),
      })),
    );
    const from = Math.max(Date.now(), base) + WARMUP_S * 1000;
    const killAt = from + BEFORE_S * 1000;
    const to = killAt + AFTER_S * 1000;
    await sleep(killAt - Date.now());

    const oldLeader = await c.raft.waitForLeader();
    const killedAt = Date.now();
    if (lab) await lab.cut(indexOf(oldLeader));
    else await c.raft.kill(oldLeader, 'SIGKILL');
    log(`${lab ? 'cut the link of' : 'killed'} leader ${oldLeader} at ${killedAt}`);
    const survivors = c.raft.runningIds().filter((id) => id !== oldLeader);
    const newLeader = await c.raft.waitForLeader(30_000, survivors);
    const newLeaderMs = Date.now() - killedAt;
    log(`new leader ${newLeader} after ${newLeaderMs} ms (${c.endpoints.join(',')})`);

    // Grace after the window: runs of its last slots still reach workers.
    await sleep(Math.max(0, to - Date.now()) + 3000);
    // The old leader rejoins (as a follower) before everything is stopped and inspected.
    if (lab) await lab.heal(indexOf(oldLeader));
    const { starts: assigned } = await workers.finish();
    const deliveries = new Map<string, number>();
    const firstSeen = new Map<string, { at: number; scheduledMs: number; slotMs: number }>();
    for (const a of assigned) {
      deliveries.set(a.runId, (deliveries.get(a.runId) ?? 0) + 1);
      const prev = firstSeen.get(a.runId);
      if (!prev || a.at < prev.at) firstSeen.set(a.runId, { at: a.at, scheduledMs: a.scheduledMs, slotMs: a.slotMs });
    }
    const deliveredTwice = [...deliveries.values()].filter((n) => n > 1).length;

    const inspected = await c.stopAndInspect(async (fsm) => {
      let lost = 0;
      let missed = 0;
      let slotDuplicates = 0;
      let notStarted = 0;
      const before: number[] = [];
      const after: number[] = [];
      for (let i = 0; i < JOBS; i++) {
        const runs = (await allRuns(fsm, `fo-${i}`)).filter((r) => r.slotUnixMs >= from && r.slotUnixMs < to);
        const slots = new Set(runs.map((r) => r.slotUnixMs));
        slotDuplicates += runs.length - slots.size;
        lost += Math.max(0, BEFORE_S + AFTER_S - slots.size); // one slot per second in [from, to)
        for (const r of runs) {
          if (r.state === RunState.RUN_STATE_MISSED || r.state === RunState.RUN_STATE_SKIPPED) {
            missed++;
            continue;
          }
          const seen = firstSeen.get(r.id);
          if (!seen) {
            notStarted++;
            continue;
          }
          // Delivered before the kill = baseline; anything delivered later felt the failover.
          (seen.at < killedAt ? before : after).push(seen.at - seen.scheduledMs);
        }
      }
      return { lost, missed, slotDuplicates, notStarted, before, after };
    });

    const all = [...inspected.before, ...inspected.after];
    const baseline = p50p99max(inspected.before);
    const electionTimeoutMs = TICK_MS * ELECTION_TICKS;
    // Extra lateness the failover caused: the latest slot delivered after the kill, over the usual
    // (pre-kill median) lateness. A slow slot before the kill is machine noise, not failover.
    const fireGapMs = inspected.after.length ? Math.max(...inspected.after) - baseline.p50 : NaN;
    return {
      bench: 'failover',
      fault,
      jobs: JOBS,
      workers: WORKERS,
      handlerMs: HANDLER_MS,
      windowSeconds: BEFORE_S + AFTER_S,
      slots: all.length,
      killed: oldLeader,
      newLeader,
      electionTimeoutMs,
      maxElectionMs: c.raft.maxElectionMs,
      newLeaderMs,
      fireGapMs,
      latenessMs: p50p99max(all),
      latenessDeliveredBeforeKillMs: baseline,
      latenessDeliveredAfterKillMs: p50p99max(inspected.after),
      lost: inspected.lost,
      doubled: deliveredTwice + inspected.slotDuplicates,
      missed: inspected.missed,
      notStarted: inspected.notStarted,
      targets: {
        newLeaderMs: 2 * electionTimeoutMs,
        newLeaderMet: newLeaderMs <= 2 * electionTimeoutMs,
        fireGapMs: 2 * electionTimeoutMs + 1000,
        fireGapMet: fireGapMs <= 2 * electionTimeoutMs + 1000,
      },
      machineAtStart: loadAtStart,
      machineAtEnd: machineLoad(),
    };
  } finally {
    workers?.kill();
    await c.cleanup();
    await lab?.destroy();
  }
}
