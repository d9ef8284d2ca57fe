// The scheduler under the deterministic simulator: N nodes (sched-sim-node.ts) each running the
// real Raft driver, scheduler state machine and leader services, simulated workers
// (sim-worker.ts) on the real worker stream handler, an idempotent effect sink, and every fault
// drawn from one seed: the Raft simulator's fault plan (drops, duplicates, reordering, delays,
// crashes and restarts, leader crashes, partitions of many shapes, disk I/O errors), wall clocks
// of a minority of nodes skewed and jumping, and worker crashes, pauses past their leases,
// reconnects and duplicate results. A run: create jobs once cluster time is known, the chaos
// phase, then heal and settle (every node up, network and disks calm, workers awake) until every
// slot up to the healing instant is accounted for, then the checks (sched-checks.ts).
//
// Time: a unit is MS_PER_UNIT simulated ms; the Raft tick is 5 units, as in the Raft simulator,
// so its fault plans mean the same here.
import { JobSpec, MisfirePolicy, OverlapPolicy } from '../../gen/herald/v1/job.js';
import { decodeResult, UNSAFE_ENV, type PutJobsItem } from '../../fsm/index.js';
import { stampedAtAppend } from '../node/stamped-proposal.js';
import { drawFaultPlan, type FaultPlan, type FaultProfile } from '../../raft/sim/fault-plan.js';
import { randomShape } from '../../raft/sim/partition-shapes.js';
import { createPrng } from '../../raft/sim/prng.js';
import { drawRuntimeOptions } from '../../raft/sim/runtime-options.js';
import { SimNetwork } from '../../raft/sim/sim-network.js';
import { SimScheduler, type Owner } from '../../raft/sim/sim-scheduler.js';
import type { Packet } from '../../raft/sim/sim-transport.js';
import { schedulerConfig } from '../leader/leader-config.js';
import { EffectSink } from './effect-sink.js';
import { checkScheduler, type SchedCheckResult, type SchedViolation } from './sched-checks.js';
import type { SchedMutation } from './sched-mutations.js';
import { SchedSimNode, type SchedNodeHooks } from './sched-sim-node.js';
import { MS_PER_UNIT, setEpoch, SimWallClock, trueMs } from './sim-wall-clock.js';
import { SIM_TASK_TYPE, SimWorker } from './sim-worker.js';
import { JobChangeLog, SimControlClient, trims, type ControlShared } from './sim-control-client.js';
import { checkLinearizable } from './sched-linearizability.js';
import { CommandTimeLog } from './command-time-log.js';
import { RunRecordLog } from './run-record-log.js';
import type { Prng } from '../../raft/sim/prng.js';

const TICK_UNITS = 5;

/** Zones with daylight saving time and the instants their offsets change in 2027 (spring, autumn). */
const DST_CHANGES = [
  { zone: 'America/New_York', changes: [1_805_007_600_000, 1_825_567_200_000] },
  { zone: 'Europe/Berlin', changes: [1_806_195_600_000, 1_824_944_400_000] },
  { zone: 'Australia/Sydney', changes: [1_806_768_000_000, 1_822_492_800_000] },
] as const;
const SIM: Owner = { alive: true };

export interface SchedSimOptions {
  seed: number;
  nodes: 3 | 5;
  /** Length of the chaos phase in units (default 2000: 20 simulated seconds). */
  chaosUnits?: number;
  /** Bound of the settle phase in units. */
  settleUnits?: number;
  profile?: FaultProfile;
  mutations?: ReadonlySet<SchedMutation>;
  trace?: boolean;
  /**
   * The fault set: v3 (default) adds storage faults in one replica's state machine store and the
   * control-plane client's backfills, cancels and reads; v2 has worker cut-offs and the client's
   * other operations; v1 neither. v4 (opt-in) is v3 whose clients also backfill the jobs whose
   * retention trims, once the cluster is at feature level 4 (the trim horizon). A seed recorded
   * under an older set replays the run it failed in.
   */
  faults?: FaultSet;
}

export type FaultSet = 'v1' | 'v2' | 'v3' | 'v4';

export interface SchedSimResult extends SchedCheckResult {
  seed: number;
  nodes: number;
  /** The run's chaos length and fault set, as given (what a replay needs besides seed and nodes). */
  chaosUnits: number;
  faultSet: FaultSet;
  steps: number;
  faults: number;
  crashes: number;
  workerFaults: number;
  clockJumps: number;
  /** I/O errors injected into a state machine store. */
  storeFaults: number;
  /** Results workers sent with a token already superseded (the server must refuse every one). */
  staleReports: number;
  /** Control-plane operations the linearizability check judged, and jobs it gave up on (bounded search). */
  controlOps: number;
  linearizabilityUnchecked: number;
  /** Simulated ms the run covered. */
  simulatedMs: number;
  /** Each node's applied cluster feature level at the end (-1: down), raised by the leaders' raise loop. */
  featureLevels: number[];
  violations: SchedViolation[];
  plan: FaultPlan;
  trace: string[];
}

/** The scheduler's settings on simulated time: production's shapes, shorter constants. */
const SIM_SCHEDULER = schedulerConfig({
  horizonMs: 10_000,
  tickMs: 20,
  wheelResolutionMs: 10,
  misfireThresholdMs: 1_500,
  fireBatchSize: 100,
  maxFireHoldMs: 1_000,
  defaultLeaseMs: 1_000,
  heartbeatIntervalMs: 200,
  workerSilenceTimeoutMs: 1_000,
  claimBatchSize: 100,
  dispatchPollMs: 100,
  resultBatchMs: 10,
  leaseSweepMs: 50,
  watchdogGraceMs: 5_000,
  watchdogIntervalMs: 500,
  trimIntervalMs: 500,
  dispatchLeadMs: 50,
});

export async function runSchedulerSimulation(opts: SchedSimOptions): Promise<SchedSimResult> {
  const rng = createPrng(opts.seed);
  const n = opts.nodes;
  const mutations = opts.mutations ?? new Set<SchedMutation>();
  const unsafe = {
    skipSlotCheck: mutations.has('skip-slot-check'),
    acceptStaleTokens: mutations.has('accept-stale-tokens'),
    forgetMissedOnPause: mutations.has('forget-missed-on-pause'),
    adoptWithoutTokenCheck: mutations.has('adopt-without-token-check'),
    dropClaimLeaseOnFailover: mutations.has('drop-claim-lease-on-failover'),
  };
  // The state machine refuses its unsafe switches without the opt-in; a mutation run is one.
  if (Object.values(unsafe).some((v) => v)) process.env[UNSAFE_ENV] = '1';
  const plan = drawFaultPlan(rng.fork(`sched-plan-${n}`), opts.profile);
  const calm = plan.dropRate === 0 && plan.crashRate === 0 && plan.partitionRate === 0 && plan.leaderCrashRate === 0;
  const runtime = drawRuntimeOptions(rng.fork(`sched-runtime-${n}`), calm);
  const chaosUnits = opts.chaosUnits ?? 2000;
  const settleUnits = opts.settleUnits ?? 2500;
  const faultRng = rng.fork('faults');
  const faultSet: FaultSet = opts.faults ?? 'v3';
  // v4 is v3 plus one more kind of client operation: every v3 draw is made as in v3.
  const v3 = faultSet === 'v3' || faultSet === 'v4';
  const trace: string[] = [];
  const log = opts.trace ? (line: string) => trace.push(line) : undefined;
  const ids = Array.from({ length: n }, (_, i) => `n${i + 1}`);
  const sched = new SimScheduler();
  // v3: cron jobs in a zone with daylight saving time, and in half the seeds the run starts
  // seconds before one of its changes (a stream of its own, like every v3 draw).
  const v3Rng = rng.fork('v3-jobs');
  const dst = v3Rng.pick(DST_CHANGES);
  if (v3 && v3Rng.chance(0.5)) setEpoch(sched, v3Rng.pick(dst.changes) - v3Rng.int(2_000, 15_000));
  const net = new SimNetwork<Packet>({
    nodes: ids,
    rng: rng.fork('network'),
    faults: { dropRate: plan.dropRate, duplicateRate: plan.duplicateRate, reorderRate: plan.reorderRate, minDelay: plan.minDelay, maxDelay: plan.maxDelay },
  });
  let crashes = 0;
  let clockJumps = 0;
  let workerFaults = 0;
  let partitions = 0;
  let partitioned = false;

  // Wall clocks: a minority of nodes (drawn) have bad ones — skewed from the start, jumping later.
  const clockRng = rng.fork('clocks');
  const badClocks = new Set(clockRng.chance(0.7) ? pickMinority(ids, clockRng) : []);
  const walls = new Map(ids.map((id) => [id, new SimWallClock(sched)]));
  for (const id of badClocks) walls.get(id)!.offsetMs = clockRng.int(-5_000, 5_001);
  const jumpRate = badClocks.size > 0 ? clockRng.pick([0, 0.0005, 0.002, 0.01]) : 0;

  const jobChanges = new JobChangeLog();
  const commandTimes = new CommandTimeLog();
  const runRecords = new RunRecordLog();
  const hooks: SchedNodeHooks = {
    storeWrites: (keys) => runRecords.observe(keys),
    applying: (entries) => {
      jobChanges.observe(entries);
      commandTimes.observe(entries);
    },
    becameLeader: (node, term) => log?.(`t=${sched.now} ${node.id} leader term ${term}`),
    fatal(node, err) {
      log?.(`t=${sched.now} ${node.id} FATAL ${err.message}: exits, restarts`);
      crash(node);
      sched.at(sched.now + faultRng.int(1, 4 * TICK_UNITS), SIM, () => restart(node));
    },
    broken: (_node, detail) => violations.push({ kind: 'node-broken', detail }),
    note: log && ((_node, line) => log(`t=${sched.now} ${line}`)),
    violation: (_node, kind, detail) => {
      log?.(`t=${sched.now} VIOLATION ${kind}: ${detail}`);
      if (violations.filter((v) => v.kind === kind).length < 3) violations.push({ kind, detail });
    },
  };
  const violations: SchedViolation[] = [];
  const nodes = new Map<string, SchedSimNode>();
  for (const id of ids) {
    const period = plan.clockDrift ? faultRng.int(TICK_UNITS - 1, TICK_UNITS + 2) : TICK_UNITS;
    const node = new SchedSimNode(
      id,
      ids,
      {
        electionTicks: plan.electionTicks,
        tickMs: TICK_UNITS * MS_PER_UNIT,
        unitsPerMs: period / TICK_UNITS / MS_PER_UNIT,
        preVote: plan.preVote,
        checkQuorum: plan.checkQuorum,
        ioMaxDelay: runtime.ioMaxDelay,
        ioErrorRate: runtime.ioErrorRate,
        followerApplyWindowMs: runtime.followerApplyWindowMs * MS_PER_UNIT,
        replicateEffects: runtime.replicateEffects,
        snapshotEntries: runtime.snapshotBy === 'entries' ? runtime.snapshotEntries * 10 : 300,
        compactionKeepEntries: runtime.snapshotBy === 'entries' ? runtime.compactionKeepEntries : 8,
        scheduler: SIM_SCHEDULER,
        unsafe,
        leaderUsesLocalWallClock: mutations.has('fire-by-local-wall-clock'),
      },
      sched,
      net,
      walls.get(id)!,
      (other) => walls.get(other)!,
      rng.fork(`node-${id}`),
      hooks,
    );
    nodes.set(id, node);
  }
  const all = [...nodes.values()];
  const starting = new Set<SchedSimNode>();
  // Storage faults in one replica's state machine store (a stream of their own): v3 only.
  const storeRng = rng.fork('store-faults');
  const faultyStore = v3 && storeRng.chance(0.4) ? nodes.get(storeRng.pick(ids)) : undefined;
  faultyStore?.setStoreFaults(storeRng.pick([0.01, 0.03, 0.08]));
  if (faultyStore) log?.(`t=0 ${faultyStore.id}: its state machine store fails some reads and writes`);

  function crash(node: SchedSimNode): void {
    if (!node.up) return;
    node.crash();
    crashes++;
    net.discardInFlight((d) => d.to === node.id);
    log?.(`t=${sched.now} ${node.id} CRASH`);
  }
  function restart(node: SchedSimNode): void {
    if (node.up || starting.has(node)) return;
    starting.add(node);
    void node.start().then(
      (ok) => {
        starting.delete(node);
        log?.(`t=${sched.now} ${node.id} ${ok ? 'restart' : 'restart failed'}`);
      },
      (e: unknown) => {
        starting.delete(node);
        log?.(`t=${sched.now} ${node.id} restart failed: ${(e as Error).message}`);
      },
    );
  }
  const currentLeader = (): SchedSimNode | undefined => {
    let best: SchedSimNode | undefined;
    for (const node of all) {
      if (!node.up || !node.driver.isLeader()) continue;
      if (!best || node.driver.status().term > best.driver.status().term) best = node;
    }
    return best;
  };

  // Workers and the effect sink.
  const sink = new EffectSink();
  const workerRng = rng.fork('workers');
  const workerCount = workerRng.int(2, 5);
  const rogueAt = workerRng.chance(0.6) ? workerRng.int(0, workerCount) : -1;
  const dial = {
    nodeIds: ids,
    connect: (id: string, stream: Parameters<SchedSimNode['connect']>[0]) => nodes.get(id)!.connect(stream),
    ownerOf: (id: string) => nodes.get(id)!.current,
  };
  const workers = Array.from(
    { length: workerCount },
    (_, i) =>
      new SimWorker(
        `w${i + 1}`,
        sched,
        workerRng.fork(`w${i + 1}`),
        dial,
        sink,
        {
          capacity: workerRng.int(2, 9),
          heartbeatMs: SIM_SCHEDULER.heartbeatIntervalMs,
          rogue: i === rogueAt,
          failRate: workerRng.pick([0, 0.05, 0.2]),
          maxRunUnits: i === rogueAt ? 300 : workerRng.pick([5, 20, 60]),
          duplicateRate: workerRng.pick([0, 0.05, 0.2]),
        },
        log,
      ),
  );
  const workerFaultRate = workerRng.pick([0, 0.002, 0.005, 0.01]);
  // Workers cut off from the cluster past their leases while their handlers run (sim-worker.ts
  // cutOff), drawn from a stream of their own so the other faults of a seed stay as they were:
  // a hello on reconnecting lists runs whose leases were lost and maybe claimed again.
  const cutRng = rng.fork('worker-cuts');
  const v2 = faultSet !== 'v1';
  const cutChance = v2 ? cutRng.pick([0, 0.05, 0.1, 0.2]) : 0;
  for (const w of workers) w.cuts = { chance: cutChance, rng: cutRng.fork(w.id) };

  // Jobs: created once the first leader knows cluster time.
  const jobRng = rng.fork('jobs');
  const jobItems: PutJobsItem[] = Array.from({ length: jobRng.int(4, 13) }, (_, i) => ({
    jobId: `job-${i + 1}`,
    // A retried create (the first one's outcome unknown) returns the job the first one made.
    idempotencyKey: `create-job-${i + 1}`,
    spec: JobSpec.fromPartial({
      taskType: SIM_TASK_TYPE,
      schedule: { kind: { $case: 'every', every: { intervalMs: jobRng.pick([1000, 1000, 2000, 3000]), anchorUnixMs: 0 } } },
      leaseDurationMs: jobRng.pick([1000, 1000, 2000, 3000]),
      retry: { maxAttempts: jobRng.int(1, 4), initialBackoffMs: 100, maxBackoffMs: 500, backoffMultiplier: 2 },
      misfirePolicy: jobRng.pick([MisfirePolicy.MISFIRE_POLICY_SKIP, MisfirePolicy.MISFIRE_POLICY_RUN_ONCE, MisfirePolicy.MISFIRE_POLICY_RUN_ALL]),
      overlapPolicy: jobRng.pick([OverlapPolicy.OVERLAP_POLICY_ALLOW, OverlapPolicy.OVERLAP_POLICY_FORBID, OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE, OverlapPolicy.OVERLAP_POLICY_REPLACE]),
      retention: { maxRuns: 10_000, maxAgeMs: 0 },
    }),
  }));
  // v3: cron jobs in that zone, jitter, and retention small enough to trim during the run.
  if (v3) {
    const count = v3Rng.int(2, 5);
    for (let i = 0; i < count; i++) {
      const cron = i === 0 || v3Rng.chance(0.6);
      const schedule: JobSpec['schedule'] = cron
        ? { kind: { $case: 'cron', cron: { expression: v3Rng.pick(['*/2 * * * * *', '*/3 * * * * *', '1-59/2 * * * * *', '*/5 * * * * *']), timeZone: dst.zone } } }
        : { kind: { $case: 'every', every: { intervalMs: v3Rng.pick([1000, 2000]), anchorUnixMs: 0 } } };
      jobItems.push({
        jobId: `job-v3-${i + 1}`,
        idempotencyKey: `create-job-v3-${i + 1}`,
        spec: JobSpec.fromPartial({
          taskType: SIM_TASK_TYPE,
          schedule,
          leaseDurationMs: v3Rng.pick([1000, 2000]),
          retry: { maxAttempts: v3Rng.int(1, 4), initialBackoffMs: 100, maxBackoffMs: 500, backoffMultiplier: 2 },
          misfirePolicy: v3Rng.pick([MisfirePolicy.MISFIRE_POLICY_SKIP, MisfirePolicy.MISFIRE_POLICY_RUN_ONCE, MisfirePolicy.MISFIRE_POLICY_RUN_ALL]),
          overlapPolicy: v3Rng.pick([OverlapPolicy.OVERLAP_POLICY_ALLOW, OverlapPolicy.OVERLAP_POLICY_FORBID, OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE, OverlapPolicy.OVERLAP_POLICY_REPLACE]),
          jitterMs: v3Rng.pick([0, 400, 900, 1500]),
          retention: { maxRuns: v3Rng.pick([2, 3, 5, 8]), maxAgeMs: v3Rng.pick([0, 3_000, 6_000]) },
        }),
      });
    }
  }
  let jobsCreated = false;
  // The control-plane clients (their own stream of draws, so the other faults of a seed stay as
  // they were): creates, CAS updates, pauses, resumes, deletes and triggers during the chaos.
  const controlRng = rng.fork('control');
  const specOf = (r: Prng) =>
    JobSpec.fromPartial({
      taskType: SIM_TASK_TYPE,
      schedule: { kind: { $case: 'every', every: { intervalMs: r.pick([1000, 2000, 3000]), anchorUnixMs: 0 } } },
      leaseDurationMs: r.pick([1000, 2000, 3000]),
      retry: { maxAttempts: r.int(1, 4), initialBackoffMs: 100, maxBackoffMs: 500, backoffMultiplier: 2 },
      misfirePolicy: r.pick([MisfirePolicy.MISFIRE_POLICY_SKIP, MisfirePolicy.MISFIRE_POLICY_RUN_ONCE, MisfirePolicy.MISFIRE_POLICY_RUN_ALL]),
      overlapPolicy: r.pick([OverlapPolicy.OVERLAP_POLICY_ALLOW, OverlapPolicy.OVERLAP_POLICY_FORBID, OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE, OverlapPolicy.OVERLAP_POLICY_REPLACE]),
      retention: { maxRuns: 10_000, maxAgeMs: 0 },
    });
  const setupSpecs = new Map(jobItems.map((j) => [j.jobId, j.spec]));
  const controlShared: ControlShared = { jobIds: jobItems.map((j) => j.jobId), history: [], knownVersion: new Map(), knownRuns: new Map(), nextCreate: 1 };
  const opRate = controlRng.pick([0, 0.01, 0.03, 0.06]);
  const clients = Array.from({ length: controlRng.int(1, 4) }, (_, i) =>
    new SimControlClient(i + 1, {
      sched,
      rng: controlRng.fork(`client-${i + 1}`),
      shared: controlShared,
      leader: () => currentLeader(),
      nodes: all,
      opRate,
      spec: specOf,
      casFromStaleReplica: mutations.has('cas-from-stale-replica'),
      opSet: faultSet === 'v4' ? 'v4' : v3 ? 'v3' : 'v2',
      log,
    }),
  );
  let creatingSince = -Infinity;
  const createJobs = () => {
    if (jobsCreated || sched.now - creatingSince < 300) return;
    const leader = currentLeader();
    const services = leader?.leaderServices();
    const now = leader?.clusterClock.nowMs();
    if (!leader || !services?.ready || now === undefined) {
      if (leader && sched.now % 500 === 0) log?.(`t=${sched.now} ${leader.id} leads; services ${services ? (services.ready ? 'ready' : 'starting') : 'none'}, cluster time ${now}`);
      return;
    }
    const attempt = (creatingSince = sched.now);
    leader.driver
      // As the public API proposes a create: answered once evaluated, before the write lands.
      .propose(stampedAtAppend({ type: 'putJobs', nowMs: now, items: jobItems }, leader.clusterClock), { timeoutMs: 2_000, answerOnceEvaluated: true })
      .then((out) => {
        const r = decodeResult(out.result);
        if (r.type === 'rejected') violations.push({ kind: 'setup', detail: `putJobs rejected: ${r.error.message}` });
        else {
          if (r.type === 'jobs') for (const item of r.items) if (item.error) violations.push({ kind: 'setup', detail: `job refused: ${item.error.message}` });
          jobsCreated = true;
          log?.(`t=${sched.now} jobs created at cluster time ${now}`);
        }
      })
      .catch((e: unknown) => log?.(`t=${sched.now} putJobs failed: ${(e as Error).message}`))
      .finally(() => {
        if (creatingSince === attempt) creatingSince = -Infinity;
      });
  };

  const unit = async (chaos: boolean) => {
    const now = ++sched.now;
    for (const d of net.deliverDue(now)) {
      const node = nodes.get(d.to)!;
      if (!node.up) continue;
      sched.at(now, node.current, () => node.deliver(d.from, d.msg));
    }
    if (!jobsCreated && now % TICK_UNITS === 0) createJobs();
    await sched.runDue();
    if (!chaos) return;
    if (jobsCreated && v2) for (const c of clients) c.tick();
    for (const node of all) {
      if (node.up && faultRng.chance(plan.crashRate)) crash(node);
      else if (!node.up && faultRng.chance(plan.restartRate)) restart(node);
    }
    if (faultRng.chance(plan.leaderCrashRate)) {
      const leader = currentLeader();
      if (leader) crash(leader);
    }
    if (faultRng.chance(plan.transferRate)) {
      const leader = currentLeader();
      const target = faultRng.pick(ids);
      if (leader && target !== leader.id) sched.at(now, leader.current, () => void leader.driver.transferLeadership(target).catch(() => undefined));
    }
    if (faultRng.chance(plan.partitionRate)) {
      const leader = faultRng.chance(plan.leaderTargeted) ? currentLeader()?.id : undefined;
      const shape = randomShape(ids, faultRng, leader);
      net.applyBlocked(shape.blocked);
      partitioned = shape.blocked.length > 0;
      partitions++;
      log?.(`t=${now} partition: ${shape.description}`);
    } else if (partitioned && faultRng.chance(plan.healRate)) {
      net.heal();
      partitioned = false;
      log?.(`t=${now} heal`);
    }
    for (const id of badClocks) {
      if (!faultRng.chance(jumpRate)) continue;
      const wall = walls.get(id)!;
      wall.offsetMs += faultRng.int(-10_000, 10_001);
      clockJumps++;
      log?.(`t=${now} ${id} wall clock jumps to offset ${wall.offsetMs} ms`);
    }
    for (const w of workers) {
      if (!faultRng.chance(workerFaultRate)) continue;
      workerFaults++;
      const kind = faultRng.int(0, 3);
      if (kind === 0) w.crash(faultRng.int(5, 200));
      else if (kind === 1) w.pause(faultRng.int(50, 400));
      else w.reconnect();
    }
    await sched.runDue();
  };

  for (const node of all) restart(node);
  for (const w of workers) w.start();
  await sched.runDue();
  while (sched.now < chaosUnits) await unit(true);

  // Heal and settle: everything up and calm; wait until every slot up to now is accounted for.
  net.heal();
  net.setDefaultFaults({ dropRate: 0, duplicateRate: 0, reorderRate: 0 });
  for (const node of all) node.setIoErrorRate(0);
  faultyStore?.setStoreFaults(0);
  for (const node of all) restart(node);
  for (const w of workers) {
    w.cuts = undefined;
    w.healCut();
  }
  const healedAtMs = trueMs(sched);
  log?.(`t=${sched.now} SETTLE: healed, all nodes up`);
  const settleEnd = sched.now + settleUnits;
  let settled = false;
  // Workers keep the log busy, so a follower may trail the newest commit at any one sample; it is
  // settled when every replica follows the same leader and has applied what was committed at the
  // previous sample (a stuck replica never does).
  let previous: { leader: string; commit: number } | undefined;
  while (sched.now < settleEnd) {
    await unit(false);
    for (const node of all) restart(node);
    if (sched.now % 50 !== 0 || !jobsCreated) continue;
    const leader = currentLeader();
    if (!leader?.leaderServices()?.ready) continue;
    // A bounded wait past the window: misfire and lease expiries need their time.
    if (trueMs(sched) < healedAtMs + SIM_SCHEDULER.misfireThresholdMs + 1_500) continue;
    const st = leader.driver.status();
    const target = previous?.leader === leader.id ? previous.commit : st.commit;
    previous = { leader: leader.id, commit: st.commit };
    if (!all.every((x) => x.up && x.driver.status().leader === leader.id && x.driver.status().applied >= target)) continue;
    settled = true;
    break;
  }
  // Quiesce: workers and leader services stop; every replica applies what was committed.
  let leader = currentLeader();
  let converged = false;
  if (settled) {
    for (const w of workers) w.crash(1_000_000);
    for (const node of all) node.quiesce();
    const quiesceEnd = sched.now + 1000;
    while (sched.now < quiesceEnd && !converged) {
      await unit(false);
      leader = currentLeader();
      if (!leader || sched.now % TICK_UNITS !== 0) continue;
      const st = leader.driver.status();
      const applied = await Promise.all(all.map((x) => (x.up ? x.fsm.appliedIndex() : Promise.resolve(-1))));
      converged = st.commit === st.lastIndex && applied.every((a) => a === st.lastIndex);
    }
  }
  const simulatedMs = sched.now * MS_PER_UNIT;
  // Cluster time extrapolates samples (at most two election timeouts old) on the leader's
  // monotonic clock; with drift drawn (Raft timing: ±20 %, far beyond real clocks' ppm) that
  // extrapolation may run ahead by that share of a sample's age.
  const startTolerance = MS_PER_UNIT + (plan.clockDrift ? Math.ceil(0.25 * 2 * plan.electionTicks * TICK_UNITS * MS_PER_UNIT) : 0);
  let controlOps = 0;
  let linUnchecked = 0;
  let checked: SchedCheckResult = { slotsChecked: 0, trimmedSlots: 0, runsChecked: 0, effects: 0, reExecutions: 0 };
  if (!jobsCreated) violations.push({ kind: 'liveness', detail: 'jobs were never created (no leader with cluster time)' });
  else if (!settled || !leader) violations.push({ kind: 'liveness', detail: `no settled cluster ${settleUnits} units after healing (leader ${leader?.id ?? 'none'})` });
  else if (!converged) violations.push({ kind: 'liveness', detail: `replicas did not apply the whole log within 1000 units of quiescing (leader ${leader.id})` });
  else {
    const res = await checkScheduler({
      nodes: all,
      leader,
      sink,
      windowEndMs: healedAtMs,
      startToleranceMs: startTolerance,
      deletedJobs: jobChanges.deleted,
      everStored: (jobId, slotMs) => runRecords.has(jobId, slotMs),
      runEverStored: (runId) => runRecords.hasRun(runId),
      specsOf: (jobId) => [...(setupSpecs.has(jobId) ? [setupSpecs.get(jobId)!] : []), ...jobChanges.specs(jobId)],
      segmentsOf: (job) =>
        jobChanges.segments(job.id, setupSpecs.get(job.id), job.createdUnixMs, (version) => {
          const op = controlShared.history.find((o) => o.jobId === job.id && (o.kind === 'update' || o.kind === 'resume') && o.outcome === 'ok' && o.version === version);
          return op?.nextFireMs;
        }),
    });
    violations.push(...res.violations);
    checked = res;
    // The v3 jobs' retention trims ended runs while the clients still name them.
    const lin = checkLinearizable(controlShared.history, new Set(jobItems.map((j) => j.jobId)), trims);
    controlOps = lin.opsChecked;
    linUnchecked = lin.unchecked;
    for (const v of lin.violations.slice(0, 3)) violations.push({ kind: 'control-not-linearizable', detail: `${v.jobId}: ${v.detail}` });
  }
  // Judged whatever the run's end: a regression stamped before a liveness failure is still one.
  for (const detail of commandTimes.regressions()) violations.push({ kind: 'command-time-regression', detail });
  const featureLevels = all.map((x) => (x.up ? x.fsm.appliedFeatureLevel : -1));
  for (const node of all) if (node.up) node.crash();
  for (const w of workers) w.crash(1);
  const nc = net.counters();
  for (const v of violations) log?.(`VIOLATION ${v.kind}: ${v.detail}`);
  return {
    seed: opts.seed,
    nodes: n,
    chaosUnits,
    faultSet,
    steps: sched.ran,
    faults: nc.dropped + nc.duplicated + nc.reordered + nc.partitioned + crashes + partitions + clockJumps + workerFaults,
    crashes,
    workerFaults,
    clockJumps,
    storeFaults: faultyStore?.counts.storeFaults ?? 0,
    simulatedMs,
    featureLevels,
    slotsChecked: checked.slotsChecked,
    trimmedSlots: checked.trimmedSlots,
    runsChecked: checked.runsChecked,
    effects: checked.effects,
    reExecutions: checked.reExecutions,
    staleReports: sink.supersededReports,
    controlOps,
    linearizabilityUnchecked: linUnchecked,
    violations,
    plan,
    trace,
  };
}

/** Up to a minority of the nodes (never none). */
function pickMinority(ids: readonly string[], rng: ReturnType<typeof createPrng>): string[] {
  const k = rng.int(1, Math.floor((ids.length - 1) / 2) + 1);
  const pool = [...ids];
  const out: string[] = [];
  for (let i = 0; i < k; i++) out.push(pool.splice(rng.int(0, pool.length), 1)[0]!);
  return out;
}
