// The deterministic simulator: N nodes running the real RaftDriver (sim-node.ts) over a
// simulated network, per-node disks and one scheduler of timers and I/O completions, clients,
// and every fault and runtime option drawn from one seed. A run is a chaos phase (drops, delays,
// duplicates, reordering, crashes with restart from durable state, disk I/O errors, partitions
// of many shapes) followed by a liveness phase (heal everything; a leader must emerge and every
// outstanding proposal must be decided within a bound). Safety is checked as the run goes; the
// client history must be linearizable at the end.
//
// Time is a counter of "units", one simulated millisecond of the drivers' clocks (give or take
// a node's clock drift); a Raft tick is TICK_UNITS units, so network delays (1..6 units) are
// shorter than a heartbeat, as on a LAN.

import { kvModel, type KvOperation } from '../linearizability/kv-model.js';
import { checkOperations, describeResult } from '../linearizability/checker.js';
import type { CoreMutation } from '../core/mutations.js';
import type { DriverMutation } from '../driver/mutations.js';
import type { NodeId } from '../types.js';
import { drawFaultPlan, type FaultPlan, type FaultProfile } from './fault-plan.js';
import { randomShape } from './partition-shapes.js';
import { createPrng } from './prng.js';
import { drawRuntimeOptions, type RuntimeOptions } from './runtime-options.js';
import { SafetyChecker, type Violation } from './safety-checker.js';
import { SimClients, type ClientOp } from './sim-clients.js';
import { drawMembershipPlan, MIN_VOTERS, SimMembership, type MembershipPlan } from './sim-membership.js';
import { SimNetwork } from './sim-network.js';
import { SimNode, type NodeHooks } from './sim-node.js';
import { SimScheduler, type Owner } from './sim-scheduler.js';
import type { Packet } from './sim-transport.js';

export const TICK_UNITS = 5;

export interface SimOptions {
  seed: number;
  nodes: 3 | 5;
  /** Length of the chaos phase, in units (default: the fault plan's). */
  chaosUnits?: number;
  /** Bound for the liveness phase, in units. */
  livenessUnits?: number;
  mutations?: ReadonlySet<CoreMutation>;
  driverMutations?: ReadonlySet<DriverMutation>;
  /** Force one fault profile instead of drawing it from the seed. */
  profile?: FaultProfile;
  /** Override runtime options drawn from the seed. */
  runtime?: Partial<RuntimeOptions>;
  trace?: boolean;
  /** Stop at the first violation (faster for searches); default true. */
  stopOnViolation?: boolean;
  /**
   * Configuration changes: forced on (with these overrides), 'draw' (on for some seeds), or off
   * (the default: the fresh-seed suites keep exploring what they did before).
   */
  membership?: Partial<MembershipPlan> | 'draw' | false;
}

export interface SimResult {
  seed: number;
  nodes: number;
  steps: number;
  faults: number;
  /** Crashes (drawn, and after a driver's fatal error) and injected disk I/O errors. */
  crashes: number;
  ioErrors: number;
  violations: Violation[];
  plan: FaultPlan;
  runtime: RuntimeOptions;
  membership: MembershipPlan & { changes: number; refused: number; wipes: number };
  ops: { ok: number; failed: number; unknown: number };
  /** Raft ticks from healing to a stable leader with every earlier proposal decided (-1: never). */
  livenessTicks: number;
  /** The linearizability verdict ('skipped' when an earlier violation ended the run). */
  linearizability: 'ok' | 'illegal' | 'unknown' | 'skipped';
  trace: string[];
}

/** The simulator's own events (restarts after a fatal error) never die. */
const SIM: Owner = { alive: true };

export async function runSimulation(opts: SimOptions): Promise<SimResult> {
  const rng = createPrng(opts.seed);
  const n = opts.nodes;
  const livenessUnits = opts.livenessUnits ?? 1500;
  const stopOnViolation = opts.stopOnViolation ?? true;
  const plan = drawFaultPlan(rng.fork(`plan-${n}`), opts.profile);
  const calm = plan.dropRate === 0 && plan.crashRate === 0 && plan.partitionRate === 0 && plan.leaderCrashRate === 0;
  const runtime: RuntimeOptions = { ...drawRuntimeOptions(rng.fork(`runtime-${n}`), calm), ...opts.runtime };
  const chaosUnits = opts.chaosUnits ?? plan.chaosUnits;
  const faultRng = rng.fork('faults');
  const trace: string[] = [];
  const log = opts.trace ? (line: string) => trace.push(line) : undefined;
  // Its own fork, so seeds without configuration changes run as they did before they existed.
  const m = opts.membership ?? false;
  const mplan: MembershipPlan = { ...drawMembershipPlan(rng.fork('membership'), m === 'draw' ? undefined : m !== false), ...(typeof m === 'object' ? m : {}) };
  const initial: NodeId[] = Array.from({ length: n }, (_, i) => `n${i + 1}`);
  // Spare machines (added as learners later) exist only in runs with configuration changes.
  const ids: NodeId[] = mplan.enabled ? Array.from({ length: n + 2 }, (_, i) => `n${i + 1}`) : initial;
  const sched = new SimScheduler();
  const net = new SimNetwork<Packet>({
    nodes: ids,
    rng: rng.fork('network'),
    faults: { dropRate: plan.dropRate, duplicateRate: plan.duplicateRate, reorderRate: plan.reorderRate, minDelay: plan.minDelay, maxDelay: plan.maxDelay },
  });
  const checker = new SafetyChecker(Math.floor((mplan.enabled ? Math.min(n, MIN_VOTERS) : n) / 2) + 1);
  const respTime = () => sched.now * 4 + 2;
  const clients = new SimClients(3, rng.fork('clients'), plan.opRate, 4 * 30 * TICK_UNITS, respTime, log);
  checker.onCommit = (_index, _term, data) => clients.committed(data);
  const violated = () => checker.violations.length > 0;
  let inChaos = true;
  let crashes = 0;
  let partitions = 0;
  let partitioned = false;
  /** Nodes picked by the crash-on-commit fault; crashed at the end of the unit. */
  const crashNext: SimNode[] = [];

  const pickForCrash = (node: SimNode) => {
    if (inChaos && !crashNext.includes(node) && faultRng.chance(plan.crashOnCommitRate)) crashNext.push(node);
  };
  const hooks: NodeHooks = {
    sent: (node, m) => checker.sent(node, m),
    landed: (node, entries) => checker.appended(node, entries),
    evaluated(node, e) {
      checker.applied(node, e);
      checker.evaluatedFromDisk(node, e);
    },
    applied(node, index) {
      checker.appliedState(node, index, node.sm.applied, node.sm.digest);
      // A leader just past a commit, or a follower that applied while its log write may still
      // be in flight: the adversarial moments to die.
      pickForCrash(node);
    },
    becameLeader(node, term) {
      log?.(`t=${sched.now} ${node.id} leader term ${term}`);
      checker.becameLeader(node, term);
      pickForCrash(node);
    },
    fatal(node, err) {
      log?.(`t=${sched.now} ${node.id} FATAL ${err.message}: exits, restarts`);
      crash(node);
      sched.at(sched.now + faultRng.int(1, 4 * TICK_UNITS), SIM, () => restart(node));
    },
    started(node, applied) {
      checker.restarted(node);
      checker.restartedApplied(node, applied);
    },
    broken(node, kind, detail) {
      checker.violations.push({ kind, detail, at: sched.now });
    },
  };

  const nodes = new Map<NodeId, SimNode>();
  for (const id of ids) {
    // Clocks of different machines run at different rates (here up to ±20%).
    const period = plan.clockDrift ? faultRng.int(TICK_UNITS - 1, TICK_UNITS + 2) : TICK_UNITS;
    const params = {
      electionTicks: plan.electionTicks,
      tickUnits: TICK_UNITS,
      maxSizePerMsg: plan.maxSizePerMsg,
      maxInflightMsgs: plan.maxInflightMsgs,
      preVote: plan.preVote,
      checkQuorum: plan.checkQuorum,
      runtime: { ...runtime },
      coreMutations: opts.mutations ?? new Set<CoreMutation>(),
      mutations: opts.driverMutations ?? new Set<DriverMutation>(),
      crashFaults: { unsyncedSurvival: plan.unsyncedSurvival, tornRate: 0 },
    };
    const node = new SimNode(id, ids, params, sched, net, period / TICK_UNITS, rng.fork(`node-${id}`), hooks);
    // Bootstrap members list their first incarnation; spares know no configuration until added.
    node.bootstrap = initial.includes(id) ? { voters: [...initial], incarnations: Object.fromEntries(initial.map((v) => [v, 'g1'])) } : { voters: [] };
    nodes.set(id, node);
  }
  const all = [...nodes.values()];
  const starting = new Set<SimNode>();

  function crash(node: SimNode): void {
    if (!node.up) return;
    node.crash();
    crashes++;
    clients.crashed(node);
    // Packets addressed to a dead process are lost.
    net.discardInFlight((d) => d.to === node.id);
    log?.(`t=${sched.now} ${node.id} CRASH`);
    checker.durability(all);
  }

  function restart(node: SimNode): void {
    if (node.up || starting.has(node)) return;
    starting.add(node);
    void node.start().then((ok) => {
      starting.delete(node);
      log?.(ok ? `t=${sched.now} ${node.id} restart at term ${node.storage.initialState().hardState.term} last ${node.storage.lastIndex()} applied ${node.sm.applied}` : `t=${sched.now} ${node.id} restart failed`);
    });
  }

  const membership = new SimMembership(nodes, initial, mplan, rng.fork('membership-changes'), {
    leader: () => currentLeader(),
    crash: (node) => crash(node),
    restart: (node) => restart(node),
    wiped: (node, same) => checker.wiped(node, same),
    log: log ? (line) => log(`t=${sched.now} ${line}`) : undefined,
  }, opts.mutations?.has('wiped-rejoins-as-voter') ?? false);
  /** The machines the run keeps running (all of them, without configuration changes). */
  const running = (): SimNode[] => (mplan.enabled ? [...membership.active] : all);

  const currentLeader = (): SimNode | undefined => {
    let best: SimNode | undefined;
    let bestTerm = -1;
    for (const node of all) {
      if (!node.up || !node.driver.isLeader()) continue;
      const term = node.driver.status().term;
      if (term > bestTerm) {
        best = node;
        bestTerm = term;
      }
    }
    return best;
  };

  const unit = async (chaos: boolean, opRate: number) => {
    const now = ++sched.now;
    checker.now = now;
    for (const d of net.deliverDue(now)) {
      const node = nodes.get(d.to)!;
      if (!node.up) continue;
      sched.at(now, node.current, () => node.deliver(d.from, d.msg));
    }
    sched.at(now, SIM, () => clients.step(now * 4 + 1, nodes, ids, opRate));
    await sched.runDue();
    if (chaos) {
      membership.step(now);
      for (const node of running()) {
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
        if (leader && target !== leader.id) {
          sched.at(now, leader.current, () => void leader.driver.transferLeadership(target).catch(() => undefined));
          log?.(`t=${now} ${leader.id} transfers leadership to ${target}`);
        }
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
    }
    if (mplan.enabled) {
      const leader = currentLeader();
      if (leader) checker.leaderConf(leader, leader.driver.status().term);
    }
    for (const node of crashNext.splice(0)) {
      if (!node.up) continue;
      // Dying right after a Ready may also lose what sat in its socket buffers.
      if (faultRng.chance(0.7)) net.discardInFlight((d) => d.from === node.id);
      crash(node);
    }
    await sched.runDue();
  };

  for (const node of running()) restart(node);
  await sched.runDue();

  let livenessTicks = -1;
  while (sched.now < chaosUnits && !(stopOnViolation && violated())) await unit(true, plan.opRate);

  // Liveness phase: heal, restart everyone, calm network and disks.
  if (!(stopOnViolation && violated())) {
    const healedAt = sched.now;
    inChaos = false;
    net.heal();
    net.setDefaultFaults({ dropRate: 0, duplicateRate: 0, reorderRate: 0 });
    for (const node of all) node.setIoErrorRate(0);
    for (const node of running()) restart(node);
    log?.(`t=${sched.now} LIVENESS: healed, all nodes up`);
    const callCutoff = healedAt * 4 + 4;
    let live = false;
    while (sched.now < healedAt + livenessUnits && !(stopOnViolation && violated())) {
      await unit(false, Math.max(plan.opRate, 0.1));
      // A start begun during the chaos may still fail (an I/O error drawn then): try again.
      for (const node of running()) restart(node);
      if (sched.now % TICK_UNITS !== 0) continue;
      const leader = currentLeader();
      if (!leader) continue;
      const st = leader.driver.status();
      // Machines outside the leader's configuration (removed, or wiped and not re-added) follow no one.
      const followers = mplan.enabled ? membership.participants(leader.driver.confState()) : all;
      const stable = followers.every((x) => x.up && x.driver.status().leader === leader.id);
      if (stable && st.commit === st.lastIndex && clients.undecidedPuts(callCutoff).length === 0) {
        live = true;
        livenessTicks = Math.ceil((sched.now - healedAt) / TICK_UNITS);
        break;
      }
    }
    if (!live && !violated()) {
      const undecided = clients.undecidedPuts(callCutoff).map((op) => `${op.id}@${op.node}`);
      const l = currentLeader();
      const lst = l?.driver.status();
      const confNote = mplan.enabled && l && lst ? `; conf ${JSON.stringify(l.driver.confState())} commit ${lst.commit}/${lst.lastIndex} progress ${JSON.stringify(lst.progress)}` : '';
      // Each node's view: what a reader needs to see why no one wins or why one is stuck.
      const nodesNote = `; nodes ${running().filter((x) => x.up).map((x) => {
        const s = x.driver.status();
        return `${x.id} ${s.role} t${s.term} vote ${s.vote || '-'} last ${s.lastIndex}/t${s.lastTerm} commit ${s.commit} voters ${s.voters.join('+')} learners ${s.learners.join('+') || '-'}`;
      }).join(' | ')}`;
      checker.violations.push({
        kind: 'liveness',
        detail: `no stable leader with all proposals decided ${livenessUnits} units after healing (leader ${currentLeader()?.id ?? 'none'}; down ${running().filter((x) => !x.up).map((x) => x.id).join(',') || 'none'}; undecided ${undecided.join(',')})${confNote}${nodesNote}`,
        at: sched.now,
      });
    }
  }
  // Whatever still runs belongs to this run only: kill it so nothing outlives the result.
  for (const node of all) if (node.up) node.crash();

  let linearizability: SimResult['linearizability'] = 'skipped';
  if (!violated()) {
    const res = checkOperations(kvModel, toHistory(clients.ops), { maxSteps: 2_000_000 });
    linearizability = res.result;
    if (res.result === 'illegal') {
      checker.violations.push({ kind: 'linearizability', detail: describeResult(kvModel, res), at: sched.now });
    } else if (res.result === 'unknown') {
      log?.('linearizability check gave up (budget)');
    }
  }

  const nc = net.counters();
  let ioErrors = 0;
  for (const node of all) ioErrors += node.counts.ioErrors;
  for (const v of checker.violations) log?.(`VIOLATION ${v.kind} at t=${v.at}: ${v.detail}`);
  return {
    seed: opts.seed,
    nodes: n,
    steps: sched.ran,
    faults: nc.dropped + nc.duplicated + nc.reordered + nc.partitioned + crashes + partitions + ioErrors,
    crashes,
    ioErrors,
    violations: checker.violations,
    plan,
    runtime,
    membership: { ...mplan, changes: membership.changes, refused: membership.refused, wipes: membership.wipes },
    ops: clients.stats(),
    linearizability,
    livenessTicks,
    trace,
  };
}

/** The client history in the checker's vocabulary: failed ops had no effect and are left out. */
export function toHistory(ops: readonly ClientOp[]): KvOperation[] {
  const out: KvOperation[] = [];
  for (const op of ops) {
    if (op.outcome === 'failed') continue;
    const known = op.outcome === 'ok';
    if (op.input.kind === 'get') {
      if (!known) continue;
      out.push({
        clientId: op.client,
        input: { kind: 'get', key: op.input.key },
        call: op.call,
        return: op.return,
        output: { kind: 'get', value: op.output === '' ? null : op.output! },
      });
    } else {
      out.push({
        clientId: op.client,
        input: { kind: 'put', key: op.input.key, value: op.input.value },
        call: op.call,
        return: known ? op.return : Infinity,
        ...(known ? { output: { kind: 'ack' as const } } : {}),
      });
    }
  }
  return out;
}
