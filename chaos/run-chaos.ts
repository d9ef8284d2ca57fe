// One chaos run, start to finish: ledger, cluster (behind proxies), workers, workload and
// nemesis for the fault phase; then heal everything, wait for a leader and a quiet period, let
// the window's runs settle, quiesce, read everything back and run the checkers. Everything
// started is stopped in `finally`, whatever happened.
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { HeraldClient } from '../src/client/herald-client.js';
import { NotFoundError } from '../src/client/errors.js';
import type { Run } from '../src/gen/herald/v1/run.js';
import { ClusterProcesses, HERALD_BIN, REPO_ROOT } from './orchestrator/cluster-processes.js';
import { LedgerProcess } from './orchestrator/support-processes.js';
import { WorkerPool } from './orchestrator/worker-pool.js';
import { collectNodeStates } from './orchestrator/state-hash.js';
import { snapshotBuild } from './orchestrator/build-snapshot.js';
import { sleep } from './orchestrator/free-port.js';
import { ALL_FAULT_KINDS, availableKinds, familyOf, type FaultFamily, type FaultKind } from './nemesis/fault-kinds.js';
import { countByKind, faultSchedule } from './nemesis/fault-schedule.js';
import { Nemesis } from './nemesis/nemesis.js';
import { MembershipMoves } from './nemesis/membership-moves.js';
import { OperatorCli } from './orchestrator/operator-cli.js';
import { jobMix } from './workload/job-mix.js';
import { ScheduledWorkload } from './workload/scheduled-workload.js';
import { ControlPlaneWorkload } from './workload/control-plane-workload.js';
import { checkSlots, TERMINAL } from './checkers/slots-checker.js';
import { checkFencing } from './checkers/fencing-checker.js';
import { checkControlPlane } from './checkers/control-plane-checker.js';
import { checkRecovery } from './checkers/recovery-checker.js';
import { checkConvergence } from './checkers/convergence-checker.js';
import { percentile } from './checkers/interval-set.js';
import { kernelFaultsUnavailable, NetnsLab } from './net/netns.js';
import { createRoleTokens, makeSecureCluster, probeAuth, type AuthProbe, type SecureCluster } from './orchestrator/secure-cluster.js';
import { CHAOS_TASK_TYPE } from './worker/task-type.js';
import { humanSummary, summarize, type ChaosReport, type ChaosSummary } from './report.js';

export interface ChaosOptions {
  nodes: 3 | 5;
  durationMs: number;
  families: FaultFamily[];
  seed: number;
  workers?: number;
  /** How many of the workers are rogue (ignore lease loss, report with stale tokens). */
  rogueWorkers?: number;
  /**
   * Let the control-plane clients' SDK retry after connection failures (default true). Off gives
   * exact outcomes (an error is "unknown") and keeps an SDK retry bug out of the server's check.
   */
  sdkRetries?: boolean;
  /**
   * Kernel network faults: every node and worker in a network namespace of its own on a bridge,
   * partitions made by the kernel (chaos/net/kernel-network.ts). Needs root, iproute2 and nft;
   * where they are missing the run throws KernelFaultsUnavailableError with the reason.
   */
  netns?: boolean;
  /**
   * TLS and auth (`--secure`): the nodes serve TLS on the client port and mutual TLS on the peer
   * port with certificates made as `herald dev` makes them, auth on with a bootstrap admin token;
   * the workload writes with an operator token, the checkers read with a viewer token, the workers
   * connect with a worker token for the chaos task type, status reads use a viewer certificate.
   */
  secure?: boolean;
  /** Restricts the fault kinds (after the families); default every available kind. */
  kinds?: FaultKind[];
  /** Extra environment for every node (test-only unsafe switches). */
  nodeEnv?: NodeJS.ProcessEnv;
  /** Negative controls: passed to every node as `herald server --unsafe-<name>` with the env opt-in. */
  unsafe?: UnsafeSwitchName[];
  /** Where the report goes (default: the run's temp dir, kept when the run fails). */
  reportDir?: string;
  /** Keep the run's data dirs and logs (default: only when the run fails). */
  keep?: 'always' | 'on-failure' | 'never';
  leaseMs?: number;
  quietMs?: number;
  /** Raft snapshot/compaction cadence (small values exercise snapshots and InstallSnapshot). */
  snapshotEntries?: number;
  compactionKeep?: number;
  /** Workload size multiplier. */
  scale?: number;
  /** The nodes' log level (default warn; info shows elections and leader services). */
  nodeLogLevel?: string;
  /** How long the convergence check waits for the applied indexes to agree (default 20 s). */
  convergenceWaitMs?: number;
  /** Time limit of the linearizability search (default 60 s; past it the verdict is "unknown"). */
  linearizabilityTimeLimitMs?: number;
  log?: (line: string) => void;
}

export interface ChaosResult {
  report: ChaosReport;
  summary: ChaosSummary;
  human: string;
  reportPath: string | undefined;
}

/** The server's opt-in for test-only unsafe switches (src/fsm/apply/unsafe-switches.ts, src/raft/storage/unsafe-durability.ts). */
const UNSAFE_ENV = 'HERALD_UNSAFE_TEST_SWITCHES';
export const UNSAFE_SWITCHES = ['accept-stale-tokens', 'skip-slot-check', 'skip-fsync'] as const;
export type UnsafeSwitchName = (typeof UNSAFE_SWITCHES)[number];

async function listRunsOf(client: HeraldClient, jobId: string): Promise<Run[] | undefined> {
  try {
    await client.getJob(jobId, { deadlineMs: 10_000 });
  } catch (e) {
    if (e instanceof NotFoundError) return undefined;
    throw e;
  }
  const out: Run[] = [];
  for await (const r of client.iterateRuns({ jobId, pageSize: 1000 }, { deadlineMs: 20_000 })) out.push(r);
  return out;
}

async function retry<T>(what: string, fn: () => Promise<T>, timeoutMs: number): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (Date.now() > end) throw new Error(`${what}: ${e instanceof Error ? e.message : String(e)}`);
      await sleep(300);
    }
  }
}

/** `--netns` asked for, but network namespaces or nft cannot be used here (the reason says why). */
export class KernelFaultsUnavailableError extends Error {
  constructor(readonly reason: string) {
    super(`kernel network faults (--netns) unavailable: ${reason}`);
  }
}

export async function runChaos(o: ChaosOptions): Promise<ChaosResult> {
  const log = o.log ?? ((l: string) => process.stderr.write(`[chaos] ${l}\n`));
  if (!existsSync(join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js'))) throw new Error(`${HERALD_BIN} needs dist/: run \`npm run build\` first`);
  if (o.netns) {
    const why = await kernelFaultsUnavailable();
    if (why) throw new KernelFaultsUnavailableError(why);
  }
  const started = Date.now();
  const root = await mkdtemp(join(tmpdir(), `herald-chaos-${o.seed}-`));
  const leaseMs = o.leaseMs ?? 3_000;
  const quietMs = o.quietMs ?? 6_000;
  const unsafe = o.unsafe ?? [];
  const nodeEnv: NodeJS.ProcessEnv = { ...o.nodeEnv, ...(unsafe.length ? { [UNSAFE_ENV]: '1' } : {}) };
  const unsafeArgs = unsafe.map((u) => `--unsafe-${u}`);

  const workerCount = o.workers ?? 3;
  let lab: NetnsLab | undefined;
  try {
    // Nodes first, then one member per worker slot (kernel-network.ts).
    if (o.netns) lab = await NetnsLab.create(o.nodes + workerCount);
  } catch (e) {
    await rm(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 }).catch(() => undefined);
    throw e;
  }
  const nodeIds = Array.from({ length: o.nodes }, (_, i) => `n${i + 1}`);
  let sec: SecureCluster | undefined;
  try {
    if (o.secure) sec = await makeSecureCluster(root, nodeIds, (id) => (lab ? [lab.address(nodeIds.indexOf(id))] : []));
  } catch (e) {
    await lab?.destroy().catch(() => undefined);
    await rm(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 }).catch(() => undefined);
    throw e;
  }
  const ledger = new LedgerProcess(root, lab?.hostAddress);
  let cluster: ClusterProcesses | undefined;
  let workers: WorkerPool | undefined;
  let client: HeraldClient | undefined;
  let nemesis: Nemesis | undefined;
  let ok = false;
  const closers: Array<() => void> = [];
  try {
    await ledger.start();
    const heraldBin = await snapshotBuild(join(root, 'build'));
    cluster = await ClusterProcesses.create({
      heraldBin,
      nodes: o.nodes,
      root,
      clusterId: `chaos-${o.seed}`,
      stateMachine: 'scheduler',
      seed: o.seed,
      tickMs: 50,
      electionTicks: 10,
      snapshotEntries: o.snapshotEntries ?? 10_000,
      compactionKeep: o.compactionKeep ?? (o.snapshotEntries !== undefined && o.snapshotEntries < 1_000 ? 100 : 5_000),
      env: nodeEnv,
      extraArgs: ['--lease-ms', String(leaseMs), '--heartbeat-interval-ms', '500', '--watchdog-grace-ms', '5000', '--log-level', o.nodeLogLevel ?? 'warn', ...unsafeArgs],
      ...(lab ? { netns: lab } : {}),
      ...(sec ? { security: sec.serverFlags, statusCredentials: sec.observerCredentials } : {}),
    });
    const c = cluster;
    await c.startAll();
    await c.waitLeader(30_000);
    log(`${sec ? 'secure (TLS, mTLS peers, auth) ' : ''}cluster of ${o.nodes} up in ${root}${lab ? ` (kernel network: namespaces ${lab.prefix}-n*, bridge ${lab.bridge}, ${lab.hostAddress}/24)` : ''}`);
    // Secure: one token per role the run needs, made with the bootstrap admin token.
    const tokens = sec
      ? await createRoleTokens(c.clientEndpoints(), sec, [
          { name: 'chaos-workload', role: 'operator' },
          { name: 'chaos-checkers', role: 'viewer' },
          { name: 'chaos-workers', role: 'worker', taskTypes: [CHAOS_TASK_TYPE] },
        ])
      : {};
    // Auth must really be on: refusals, not just credentials that happen to be accepted.
    const authProbe: AuthProbe | undefined = sec ? await probeAuth(c.clientEndpoints(), sec, tokens['chaos-checkers']!) : undefined;
    if (authProbe) log(`auth probe: no token → ${authProbe.noToken}, viewer write → ${authProbe.viewerWrite}`);
    const as = (name: string) => (sec ? { tls: sec.clientTls, token: tokens[name]! } : {});
    const workerEnv: NodeJS.ProcessEnv = sec ? { CHAOS_CA: sec.caFile, CHAOS_TOKEN: tokens['chaos-workers']! } : {};
    workers = new WorkerPool(workerCount, root, () => c.clientEndpoints(), () => ledger.url, 4, o.rogueWorkers ?? 0, (slot) => c.network.workerPrefix(slot), workerEnv);
    await workers.startAll();
    client = new HeraldClient({ endpoints: c.clientEndpoints(), defaultDeadlineMs: 5_000, retry: { perAttemptTimeoutMs: 2_000 }, ...as('chaos-workload') });
    // The checkers' reads (run histories): a viewer's, when the run is secure.
    const reader = sec ? new HeraldClient({ endpoints: c.clientEndpoints(), defaultDeadlineMs: 5_000, retry: { perAttemptTimeoutMs: 2_000 }, ...as('chaos-checkers') }) : client;
    closers.push(() => reader.close());
    // The control plane's own client: with retries off, every failure is reported as it happened.
    const controlClient =
      o.sdkRetries === false
        ? new HeraldClient({ endpoints: c.clientEndpoints(), defaultDeadlineMs: 5_000, retry: { maxAttempts: 1 }, ...as('chaos-workload') })
        : client;
    closers.push(() => controlClient.close());

    const networkCannot: Record<string, string> = { ...c.network.unavailableKinds() };
    // A machine added at runtime would need a member certificate (and the operator CLI a token)
    // that a secure run does not make: membership moves run on plaintext runs only, for now.
    if (sec) for (const k of ['replace-node', 'grow-shrink']) networkCannot[k] ??= 'not with --secure (new machines get no member certificate)';
    const kinds = availableKinds(o.families, { workers: true, nodes: o.nodes, clock: true, crashpoints: true }, o.kinds).filter((k) => (!o.kinds || o.kinds.includes(k)) && !(k in networkCannot));
    const unavailableFaults: Record<string, string> = {};
    for (const k of ALL_FAULT_KINDS) {
      if (o.families.includes(familyOf(k)) && !kinds.includes(k) && (!o.kinds || o.kinds.includes(k))) {
        unavailableFaults[k] = networkCannot[k] ?? (k === 'partition-ring' ? 'needs 5 nodes' : 'not supported by this cluster');
      }
    }
    for (const [k, why] of Object.entries(unavailableFaults)) log(`fault ${k} not available: ${why}`);
    const steps = faultSchedule({ seed: o.seed, nodeIds: c.ids, durationMs: o.durationMs, kinds, electionTimeoutMs: c.electionTimeoutMs, leaseMs });

    // Workload: scheduled jobs first (the fault phase starts once they exist), control plane along.
    const phaseStart = Date.now() + 1_000;
    const plan = jobMix({ seed: o.seed, startMs: phaseStart, durationMs: o.durationMs, leaseMs, scale: o.scale });
    const scheduled = new ScheduledWorkload(client, plan);
    await scheduled.createAll();
    // About 600 operations per job id at most: the WGL search per id stays small in long runs.
    const ids = Math.max(6, Math.ceil(o.durationMs / 45_000));
    const control = new ControlPlaneWorkload(controlClient, { seed: o.seed, clients: 3, ids, retryNotApplied: o.sdkRetries === false });
    scheduled.startActions(phaseStart);
    control.start();
    log(`${plan.length} jobs created; ${steps.length} faults planned over ${Math.round(o.durationMs / 1000)} s`);

    // The operator's CLI, for membership moves and for reading the final membership.
    const operator = new OperatorCli(heraldBin, () => c.clientEndpoints());
    const membership = new MembershipMoves({ cluster: c, operator, log });
    nemesis = new Nemesis({ cluster: c, workers, ledger, log, membership });
    await sleep(Math.max(0, phaseStart - Date.now()));
    await Promise.race([nemesis.run(steps), sleep(o.durationMs + 30_000)]);
    const remaining = phaseStart + o.durationMs - Date.now();
    if (remaining > 0) await sleep(remaining);

    // Heal, then look.
    await nemesis.stopAndWait();
    await scheduled.stop();
    await control.stop();
    await nemesis.healAll();
    const healMs = Date.now();
    log('healed; waiting for a leader and a quiet period');
    let leaderSeenMs: number | undefined;
    try {
      await c.waitLeader(30_000);
      leaderSeenMs = Date.now();
    } catch {
      leaderSeenMs = undefined;
    }
    await sleep(quietMs);
    const windowEndMs = healMs;
    const recoveryEndMs = healMs + quietMs - 1_000;

    // Settle: every run of the window terminal (bounded wait).
    const settleEnd = Date.now() + 45_000;
    for (;;) {
      let pending = 0;
      for (const t of scheduled.timelines) {
        const runs = await retry(`list runs of ${t.jobId}`, () => listRunsOf(reader, t.jobId), 30_000);
        pending += (runs ?? []).filter((r) => r.slotUnixMs <= windowEndMs && !TERMINAL.has(r.state)).length;
      }
      if (pending === 0 || Date.now() > settleEnd) break;
      await sleep(1_000);
    }

    // Quiesce: no more fires or results, so the replicas can be compared.
    log(`settled (${Math.round((Date.now() - healMs) / 1000)} s after the heal)`);
    await control.finalReads();
    for (const t of scheduled.timelines) await client.pauseJob(t.jobId, 'chaos: quiesce', { deadlineMs: 10_000 }).catch(() => undefined);
    await workers.stopAll();
    const runsByJob = new Map<string, Run[]>();
    // A job whose history cannot be read is a finding (reported, fails the run), not a crash of
    // the whole run: the other checks still speak.
    const readErrors: Record<string, string> = {};
    for (const t of scheduled.timelines) {
      try {
        const runs = await retry(`list runs of ${t.jobId}`, () => listRunsOf(reader, t.jobId), 30_000);
        if (runs) runsByJob.set(t.jobId, runs);
      } catch (e) {
        readErrors[t.jobId] = e instanceof Error ? e.message : String(e);
        log(`cannot read the runs of ${t.jobId}: ${readErrors[t.jobId]}`);
      }
    }
    const readable = scheduled.timelines.filter((t) => !(t.jobId in readErrors));
    const snapshot = await ledger.snapshot();
    // Convergence is over the final membership as the cluster reports it (removed nodes are out;
    // a member without a machine shows as a node that did not report).
    const finalMembers = await membership
      .view()
      .then((v) => v.members.map((m) => m.id))
      .catch((e: unknown) => {
        log(`final membership not read (${e instanceof Error ? e.message : String(e)}); comparing the machines in service`);
        return c.ids;
      });
    const nodeStates = await collectNodeStates(c, root, { timeoutMs: o.convergenceWaitMs, ids: finalMembers.filter((id) => c.ids.includes(id)) });
    log(`histories, ledger and node states read (${Math.round((Date.now() - healMs) / 1000)} s after the heal); checking`);

    const allRuns = [...runsByJob.values()].flat();
    const deletedJobs = new Set(readable.filter((t) => !runsByJob.has(t.jobId)).map((t) => t.jobId));
    const slots = checkSlots({ jobs: readable, runsByJob, ledger: snapshot, windowEndMs, marginMs: 2_000, earlyToleranceMs: 50 });
    const fencing = checkFencing(allRuns, snapshot, { deletedJobs });
    const controlPlane = checkControlPlane(control.history, { timeLimitMs: o.linearizabilityTimeLimitMs });
    const recovery = checkRecovery({ healMs, leaderSeenMs, runs: allRuns, windowEndMs: recoveryEndMs, bounds: { leaderMs: 10_000, fireMs: 3_000 } });
    const convergence = checkConvergence(nodeStates, finalMembers.length);
    log(`checked (${Math.round((Date.now() - healMs) / 1000)} s after the heal)`);
    ok = slots.ok && fencing.ok && controlPlane.ok && recovery.ok && convergence.ok && nemesis.startFailures.length === 0 && Object.keys(readErrors).length === 0;
    const jobActions = scheduled.timelines.reduce((n, t) => n + t.events.length, 0);
    const report: ChaosReport = {
      seed: o.seed,
      nodes: o.nodes,
      durationS: Math.round(o.durationMs / 1000),
      network: c.network.mode,
      secure: !!sec,
      ...(authProbe ? { authProbe } : {}),
      faultFamilies: o.families,
      unavailableFaults,
      faults: nemesis.records.filter((r) => r.applied).length,
      faultsByKind: countByKind(nemesis.records.filter((r) => r.applied) as Array<{ kind: (typeof steps)[number]['kind'] }>),
      faultLog: nemesis.records,
      finalMembers,
      nodeStartFailures: nemesis.startFailures,
      readErrors,
      leaderRecoveryMs: (() => {
        const all = nemesis.records.filter((r) => r.leaderRecoveryMs !== undefined);
        const got = all.map((r) => r.leaderRecoveryMs).filter((x): x is number => typeof x === 'number');
        return { samples: got.length, p50: percentile(got, 50), max: got.length ? Math.max(...got) : 0, none: all.length - got.length };
      })(),
      operations: { total: control.operations + jobActions + plan.length, controlPlane: control.operations, jobActions, jobsCreated: plan.length },
      workers: { started: workers.started },
      windowEndUnixMs: windowEndMs,
      checks: { slots, fencing, controlPlane, recovery, convergence },
      unsafe,
      ok,
      wallTimeS: Math.round((Date.now() - started) / 1000),
    };
    const keep = o.keep ?? 'on-failure';
    const dir = o.reportDir ?? (keep === 'never' ? undefined : root);
    let reportPath: string | undefined;
    if (dir) {
      await mkdir(dir, { recursive: true });
      reportPath = join(dir, `chaos-report-${o.seed}.json`);
      await writeFile(reportPath, JSON.stringify(report, null, 2));
      // The control-plane history, for re-checking offline (unknown outcomes return at Infinity).
      await writeFile(join(dir, `chaos-history-${o.seed}.jsonl`), control.history.map((op) => JSON.stringify({ ...op, return: op.return === Infinity ? null : op.return })).join('\n'));
    }
    return { report, summary: summarize(report, reportPath), human: humanSummary(report), reportPath };
  } finally {
    // A step under way (a node restart) must not outlive the cluster and re-create its data dir.
    await nemesis?.stopAndWait(10_000).catch(() => undefined);
    for (const close of closers) close();
    client?.close();
    await workers?.close().catch(() => undefined);
    await cluster?.close().catch(() => undefined);
    await ledger.process.close().catch(() => undefined);
    // After every process in it is gone: namespaces, bridge and nft table.
    await lab?.destroy().catch(() => undefined);
    const keep = o.keep ?? 'on-failure';
    if (keep === 'never' || (keep === 'on-failure' && ok)) {
      if (!o.reportDir || !o.reportDir.startsWith(root)) {
        await rm(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 }).catch(() => undefined);
        // Once more a moment later: a process that was still exiting may have written into it.
        await sleep(500);
        await rm(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 }).catch(() => undefined);
      }
    } else {
      log(`data dirs and logs kept in ${root}`);
    }
  }
}
