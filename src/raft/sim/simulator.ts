// The deterministic simulator: N Raft cores, a simulated network and per-node disks, clients,
// and every fault drawn from one seed. A run is a chaos phase (drops, delays, duplicates,
// reordering, crashes with restart from durable state, partitions of many shapes) followed by
// a liveness phase (heal everything; a leader must emerge and every outstanding proposal must
// be decided within a bound). Safety is checked on every step; the client history must be
// linearizable at the end.
//
// Time is a counter of "units"; a Raft tick is TICK_UNITS units, so network delays (1..6 units)
// are shorter than a heartbeat, as on a LAN.

import { kvModel, type KvOperation } from '../linearizability/kv-model.js';
import { checkOperations, describeResult } from '../linearizability/checker.js';
import type { CoreMutation } from '../core/mutations.js';
import type { Message, NodeId } from '../types.js';
import { drawFaultPlan, type FaultPlan, type FaultProfile } from './fault-plan.js';
import type { KvState } from './kv-command.js';
import { randomShape } from './partition-shapes.js';
import { createPrng } from './prng.js';
import { SafetyChecker, type Violation } from './safety-checker.js';
import { SimClients, type ClientOp } from './sim-clients.js';
import { SimDisk } from './sim-disk.js';
import { SimNetwork } from './sim-network.js';
import { SimNode, type DecodedCommands, type DiskValue, type NodeObserver } from './sim-node.js';

export const TICK_UNITS = 5;

export interface SimOptions {
  seed: number;
  nodes: 3 | 5;
  /** Length of the chaos phase, in units (default: the fault plan's). */
  chaosUnits?: number;
  /** Bound for the liveness phase, in units. */
  livenessUnits?: number;
  mutations?: ReadonlySet<CoreMutation>;
  /** Force one fault profile instead of drawing it from the seed. */
  profile?: FaultProfile;
  trace?: boolean;
  /** Stop at the first violation (faster for searches); default true. */
  stopOnViolation?: boolean;
}

export interface SimResult {
  seed: number;
  nodes: number;
  steps: number;
  faults: number;
  violations: Violation[];
  plan: FaultPlan;
  ops: { ok: number; failed: number; unknown: number };
  /** Raft ticks from healing to a stable leader with every earlier proposal decided (-1: never). */
  livenessTicks: number;
  /** The linearizability verdict ('skipped' when an earlier violation ended the run). */
  linearizability: 'ok' | 'illegal' | 'unknown' | 'skipped';
  trace: string[];
}

interface Packet {
  m: Message;
  snapData: KvState | undefined;
}

interface SnapReport {
  leader: SimNode;
  incarnation: number;
  to: NodeId;
  due: number;
  delivered: boolean;
}

export function runSimulation(opts: SimOptions): SimResult {
  const rng = createPrng(opts.seed);
  const n = opts.nodes;

  const livenessUnits = opts.livenessUnits ?? 1500;
  const stopOnViolation = opts.stopOnViolation ?? true;
  const plan = drawFaultPlan(rng.fork(`plan-${n}`), opts.profile);
  const chaosUnits = opts.chaosUnits ?? plan.chaosUnits;
  const faultRng = rng.fork('faults');
  const trace: string[] = [];
  const log = opts.trace ? (line: string) => trace.push(line) : undefined;
  const ids: NodeId[] = Array.from({ length: n }, (_, i) => `n${i + 1}`);
  const mutations = opts.mutations ?? new Set<CoreMutation>();

  const net = new SimNetwork<Packet>({
    nodes: ids,
    rng: rng.fork('network'),
    faults: {
      dropRate: plan.dropRate,
      duplicateRate: plan.duplicateRate,
      reorderRate: plan.reorderRate,
      minDelay: plan.minDelay,
      maxDelay: plan.maxDelay,
    },
  });
  const nodes = new Map<NodeId, SimNode>();
  const decoded: DecodedCommands = new WeakMap();
  const tickOffset: number[] = [];
  const tickPeriod: number[] = [];
  for (const id of ids) {
    const disk = new SimDisk<DiskValue>({
      rng: rng.fork(`disk-${id}`),
      crashFaults: { unsyncedSurvival: plan.unsyncedSurvival, tornRate: 0 },
    });
    const nodeRng = rng.fork(`raft-${id}`);
    nodes.set(
      id,
      new SimNode(
        id,
        ids,
        disk,
        {
          electionTicks: plan.electionTicks,
          heartbeatTicks: 1,
          maxSizePerMsg: plan.maxSizePerMsg,
          maxInflightMsgs: plan.maxInflightMsgs,
          preVote: plan.preVote,
          checkQuorum: plan.checkQuorum,
          compactEvery: plan.compactEvery,
          compactKeep: plan.compactKeep,
          mutations,
          decoded,
        },
        () => nodeRng.next(),
      ),
    );
    // Monotonic clocks tick at different rates on different machines (here up to ±20%; beyond
    // 2x a stale node with a fast clock can win every timeout race and, without pre-vote,
    // keep deposing everyone: a real Raft liveness limit, not a bug).
    const period = plan.clockDrift ? faultRng.int(TICK_UNITS - 1, TICK_UNITS + 2) : TICK_UNITS;
    tickPeriod.push(period);
    tickOffset.push(faultRng.int(0, period));
  }
  const all = [...nodes.values()];
  const checker = new SafetyChecker(Math.floor(n / 2) + 1);
  const clients = new SimClients(3, rng.fork('clients'), plan.opRate, 4 * 30 * TICK_UNITS, (i) => checker.committed[i]?.term, log);
  let now = 0;
  // Client-visible times: calls at now*4+1, responses at now*4+2, so a response observed while
  // processing Readies is never placed before a call issued earlier in the same unit.
  const respTime = () => now * 4 + 2;
  checker.onCommit = (index, term) => clients.committed(index, term, respTime());

  const snapReports = new Map<Packet, SnapReport>();
  /** Leaders picked by the crash-on-commit fault; crashed at the end of the unit. */
  const crashNext: SimNode[] = [];
  let inChaos = true;
  let steps = 0;
  let crashes = 0;
  let partitions = 0;
  let partitioned = false;

  const obs: NodeObserver = {
    persisted(node, rd, prevCommit) {
      if (rd.entries.length > 0) checker.appended(node, rd.entries);
      if (rd.softState) {
        const term = node.storage.initialState().hardState.term;
        log?.(`t=${now} ${node.id} ${rd.softState.role} term ${term} leader '${rd.softState.leader}'`);
        if (rd.softState.role === 'leader') {
          checker.becameLeader(node, term);
          if (inChaos && !crashNext.includes(node) && faultRng.chance(plan.crashOnCommitRate)) crashNext.push(node);
        }
      }
      if (node.commitSeen > prevCommit) {
        checker.committedRange(node, prevCommit, node.commitSeen);
        if (inChaos && !crashNext.includes(node) && faultRng.chance(plan.crashOnCommitRate) && node.raft.status().role === 'leader') {
          crashNext.push(node);
        }
      }
    },
    send(node, m, snapData) {
      checker.sent(node, m);
      const p: Packet = { m, snapData };
      if (m.type === 'snap') {
        snapReports.set(p, { leader: node, incarnation: node.incarnation, to: m.to, due: now + 3 * plan.maxDelay + 10, delivered: false });
        log?.(`t=${now} ${node.id} sends snapshot ${m.snapshot?.index} to ${m.to}`);
      }
      net.send(node.id, m.to, p, now);
    },
    applied(node, e) {
      checker.applied(node, e);
    },
    readState(node, rs) {
      clients.readState(node, rs, respTime());
    },
  };

  const violated = () => checker.violations.length > 0;

  const processAll = () => {
    for (const node of all) {
      if (!node.up) continue;
      try {
        node.processReady(obs);
      } catch (e) {
        checker.violations.push({ kind: 'core-threw', detail: `${node.id}: ${(e as Error).message}`, at: now });
      }
      clients.applied(node, respTime());
    }
  };

  const currentLeader = (): SimNode | undefined => {
    let best: SimNode | undefined;
    let bestTerm = -1;
    for (const node of all) {
      if (!node.up) continue;
      const st = node.raft.status();
      if (st.role === 'leader' && st.term > bestTerm) {
        best = node;
        bestTerm = st.term;
      }
    }
    return best;
  };

  const crash = (node: SimNode) => {
    node.crash();
    crashes++;
    clients.crashed(node, respTime());
    // Packets addressed to a dead process are lost.
    net.discardInFlight((d) => d.to === node.id);
    log?.(`t=${now} ${node.id} CRASH`);
    checker.durability(all);
  };

  const restart = (node: SimNode) => {
    node.restart();
    checker.restarted(node);
    log?.(`t=${now} ${node.id} restart at term ${node.storage.initialState().hardState.term} last ${node.storage.lastIndex()}`);
  };

  const unit = (chaos: boolean, opRate: number) => {
    now++;
    checker.now = now;
    for (const d of net.deliverDue(now)) {
      const node = nodes.get(d.to)!;
      if (!node.up) continue;
      const r = d.msg.m.type === 'snap' ? snapReports.get(d.msg) : undefined;
      if (r) r.delivered = true;
      steps++;
      try {
        node.deliver(d.msg.m, d.msg.snapData);
      } catch (e) {
        checker.violations.push({ kind: 'core-threw', detail: `${node.id} step ${d.msg.m.type}: ${(e as Error).message}`, at: now });
      }
    }
    for (let i = 0; i < all.length; i++) {
      const node = all[i]!;
      if (node.up && (now + tickOffset[i]!) % tickPeriod[i]! === 0) {
        node.raft.tick();
        steps++;
      }
    }
    clients.step(now * 4 + 1, nodes, ids, opRate);
    if (chaos) {
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
        if (leader && target !== leader.id) {
          leader.raft.transferLeadership(target);
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
    processAll();
    for (const node of crashNext.splice(0)) {
      if (!node.up) continue;
      // Dying right after a Ready may also lose what sat in its socket buffers.
      if (faultRng.chance(0.7)) net.discardInFlight((d) => d.from === node.id);
      crash(node);
    }
    for (const [p, r] of snapReports) {
      if (r.due > now) continue;
      snapReports.delete(p);
      if (r.leader.up && r.leader.incarnation === r.incarnation) r.leader.raft.reportSnapshot(r.to, r.delivered);
    }
  };

  let livenessTicks = -1;
  // Chaos phase.
  while (now < chaosUnits && !(stopOnViolation && violated())) unit(true, plan.opRate);

  // Liveness phase: heal, restart everyone, calm network.
  if (!(stopOnViolation && violated())) {
    const healedAt = now;
    inChaos = false;
    net.heal();
    net.setDefaultFaults({ dropRate: 0, duplicateRate: 0, reorderRate: 0 });
    for (const node of all) if (!node.up) restart(node);
    log?.(`t=${now} LIVENESS: healed, all nodes up`);
    const callCutoff = healedAt * 4 + 4;
    let live = false;
    livenessTicks = -1;
    while (now < healedAt + livenessUnits && !(stopOnViolation && violated())) {
      unit(false, Math.max(plan.opRate, 0.1));
      if (now % TICK_UNITS !== 0) continue;
      const leader = currentLeader();
      if (!leader) continue;
      const st = leader.raft.status();
      const stable = all.every((x) => x.raft.status().leader === leader.id);
      if (stable && st.commit === st.lastIndex && clients.undecidedPuts(callCutoff).length === 0) {
        live = true;
        livenessTicks = Math.ceil((now - healedAt) / TICK_UNITS);
        break;
      }
    }
    if (!live && !violated()) {
      const undecided = clients.undecidedPuts(callCutoff).map((op) => `${op.id}@${op.ticket!.index}/${op.ticket!.term}`);
      checker.violations.push({
        kind: 'liveness',
        detail: `no stable leader with all proposals decided ${livenessUnits} units after healing (leader ${currentLeader()?.id ?? 'none'}; undecided ${undecided.join(',')})`,
        at: now,
      });
    }
  }

  let linearizability: SimResult['linearizability'] = 'skipped';
  if (!violated()) {
    const history = toHistory(clients.ops);
    const res = checkOperations(kvModel, history, { maxSteps: 2_000_000 });
    linearizability = res.result;
    if (res.result === 'illegal') {
      checker.violations.push({ kind: 'linearizability', detail: describeResult(kvModel, res), at: now });
    } else if (res.result === 'unknown') {
      log?.('linearizability check gave up (budget)');
    }
  }

  const nc = net.counters();
  for (const v of checker.violations) log?.(`VIOLATION ${v.kind} at t=${v.at}: ${v.detail}`);
  return {
    seed: opts.seed,
    nodes: n,
    steps,
    faults: nc.dropped + nc.duplicated + nc.reordered + nc.partitioned + crashes + partitions,
    violations: checker.violations,
    plan,
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
