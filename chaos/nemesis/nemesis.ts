// Carries out a fault schedule against the running processes: applies each step at its time,
// holds it, heals it, and records what really happened (the leader it hit, the worker it killed,
// whether a crash point fired). Only one fault is active at a time; healAll() undoes everything
// (the end of the fault phase, or an aborted run).
import type { ClusterProcesses } from '../orchestrator/cluster-processes.js';
import type { WorkerPool } from '../orchestrator/worker-pool.js';
import type { LedgerProcess } from '../orchestrator/support-processes.js';
import { sleep } from '../orchestrator/free-port.js';
import type { FaultStep } from './fault-schedule.js';
import { oneWay, ring, split } from './partition-shapes.js';
import type { CrashControl } from '../orchestrator/node-control.js';
import type { MembershipMoves } from './membership-moves.js';

export interface FaultRecord {
  index: number;
  kind: string;
  /** Offset from the fault phase start when it was applied / healed (ms). */
  appliedAtMs: number;
  healedAtMs: number;
  targets: string[];
  detail?: string;
  /** False when the step could not be applied (e.g. no leader to hit); the reason is in detail. */
  applied: boolean;
  /**
   * Leader faults: ms from the fault until another node led (with a majority agreeing);
   * kill-majority/kill-all: ms from the restart until a leader was agreed. Absent otherwise,
   * null when none appeared within the bound.
   */
  leaderRecoveryMs?: number | null;
}

export interface NemesisDeps {
  cluster: ClusterProcesses;
  workers: WorkerPool;
  ledger: LedgerProcess;
  log: (line: string) => void;
  /** The membership faults' operator (replace-node, grow-shrink); without it they fail. */
  membership?: MembershipMoves;
}

const CRASH: Record<string, Pick<CrashControl, 'point' | 'phase'>> = {
  'crash-before-sync': { point: 'sync', phase: 'before' },
  'crash-after-sync': { point: 'sync', phase: 'after' },
  'crash-snapshot-save': { point: 'snapshot-save', phase: 'before' },
  'crash-snapshot-install': { point: 'snapshot-install', phase: 'after' },
  'crash-compaction': { point: 'compaction', phase: 'before' },
};

export interface StartFailure {
  node: string;
  /** Offset from the fault phase start (ms). */
  atMs: number;
  error: string;
}

export class Nemesis {
  readonly records: FaultRecord[] = [];
  /** Nodes that refused to (re)start: a finding in itself (e.g. storage left unrecoverable). */
  readonly startFailures: StartFailure[] = [];
  private stopped = false;
  private t0 = 0;
  /** Runs whose holder pause-worker-busy already paused. */
  private readonly pausedRuns = new Set<string>();
  /** The run in progress (resolves after the step under way, if any, healed once stopped). */
  private running: Promise<void> = Promise.resolve();

  constructor(private readonly d: NemesisDeps) {}

  stop(): void {
    this.stopped = true;
  }

  /** Runs the steps from now; resolves after the last one healed (or stop()). */
  run(steps: readonly FaultStep[]): Promise<void> {
    this.running = this.runSteps(steps);
    return this.running;
  }

  /**
   * Stops, and waits (bounded) for the step under way to heal: a membership move's heal is a
   * procedure that must not overlap the final heal.
   */
  async stopAndWait(boundMs = 180_000): Promise<void> {
    this.stop();
    await Promise.race([this.running, sleep(boundMs)]);
  }

  private async runSteps(steps: readonly FaultStep[]): Promise<void> {
    this.t0 = Date.now();
    for (const step of steps) {
      const wait = this.t0 + step.atMs - Date.now();
      if (wait > 0) await this.sleepUnlessStopped(wait);
      if (this.stopped) return;
      const rec: FaultRecord = { index: step.index, kind: step.kind, appliedAtMs: Date.now() - this.t0, healedAtMs: 0, targets: [], applied: true };
      this.records.push(rec);
      try {
        const heal = await this.apply(step, rec);
        const leaderFault = ['kill-leader', 'pause-leader', 'partition-isolate-leader'].includes(step.kind);
        const watch = leaderFault ? this.watchLeader(rec, rec.targets[0], Date.now(), step.durationMs) : undefined;
        this.d.log(`fault #${step.index} ${step.kind} on [${rec.targets.join(',')}]${rec.detail ? ` (${rec.detail})` : ''} for ${step.durationMs} ms`);
        await this.sleepUnlessStopped(step.durationMs);
        await watch;
        await heal();
        if (step.kind === 'kill-majority' || step.kind === 'kill-all' || step.kind === 'kill-all-leader-last') await this.watchLeader(rec, undefined, Date.now(), 15_000);
      } catch (e) {
        rec.applied = false;
        rec.detail = `${rec.detail ?? ''} error: ${e instanceof Error ? e.message : String(e)}`.trim();
        this.d.log(`fault #${step.index} ${step.kind} failed: ${rec.detail}`);
        await this.healAll();
      }
      rec.healedAtMs = Date.now() - this.t0;
    }
  }

  /** Undoes every fault: network, clocks, crash points, paused and dead processes. */
  async healAll(): Promise<void> {
    const c = this.d.cluster;
    await c.healNetwork();
    for (const id of c.ids) {
      const n = c.node(id);
      n.control.reset();
      if (n.process.paused) c.resume(id);
    }
    await this.d.ledger.disarm().catch(() => 0);
    await Promise.all(c.ids.filter((id) => !c.node(id).process.running && !c.node(id).parked).map((id) => this.tryStart(id)));
    await this.d.workers.healAll();
    if (this.d.membership) {
      // A move that failed half way: back to the cluster's size, every machine a voter.
      try {
        const steps = await this.d.membership.reconcile();
        if (steps.length > 0) this.d.log(`membership reconciled: ${steps.join('; ')}`);
      } catch (e) {
        this.d.log(`membership not reconciled: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  }

  /** (Re)starts a node; a node that refuses is recorded once per attempt, not thrown. */
  async tryStart(id: string): Promise<boolean> {
    try {
      await this.d.cluster.start(id);
      return true;
    } catch (e) {
      const error = (e instanceof Error ? e.message : String(e)).split('\n').filter((l) => l.includes('refusing') || l.includes('fatal') || l.includes('exited')).join(' | ').slice(0, 1_000);
      this.startFailures.push({ node: id, atMs: Date.now() - this.t0, error });
      this.d.log(`node ${id} failed to start: ${error}`);
      return false;
    }
  }

  /** Polls for an agreed leader other than `old`; stores the time it took in the record. */
  private async watchLeader(rec: FaultRecord, old: string | undefined, since: number, boundMs: number): Promise<void> {
    rec.leaderRecoveryMs = null;
    while (!this.stopped && Date.now() - since < boundMs) {
      const l = await this.d.cluster.leader(500).catch(() => undefined);
      if (l !== undefined && l !== old) {
        rec.leaderRecoveryMs = Date.now() - since;
        return;
      }
      await sleep(100);
    }
  }

  private async sleepUnlessStopped(ms: number): Promise<void> {
    const end = Date.now() + ms;
    while (!this.stopped && Date.now() < end) await sleep(Math.min(100, end - Date.now()));
  }

  private membership(): MembershipMoves {
    if (!this.d.membership) throw new Error('membership moves are not wired to this nemesis');
    return this.d.membership;
  }

  private async leaderOr(step: FaultStep, rec: FaultRecord): Promise<string> {
    const l = await this.d.cluster.leader();
    if (l) return l;
    const up = this.d.cluster.ids.filter((id) => this.d.cluster.isUp(id));
    const pick = up[Math.floor(step.choice * up.length)] ?? this.d.cluster.ids[0]!;
    rec.detail = 'no agreed leader; hit a running node instead';
    return pick;
  }

  /** Applies a step; returns its heal. */
  private async apply(scheduled: FaultStep, rec: FaultRecord): Promise<() => Promise<void>> {
    const c = this.d.cluster;
    // The schedule names the machines of the start; membership moves may have replaced them.
    const r = (id: string) => c.resolve(id);
    const p = scheduled.params;
    const step: FaultStep = {
      ...scheduled,
      targets: scheduled.targets.map(r),
      params: {
        ...p,
        ...(p.minority ? { minority: p.minority.map(r) } : {}),
        ...(p.ring ? { ring: p.ring.map(r) } : {}),
        ...(p.from ? { from: r(p.from) } : {}),
        ...(p.to ? { to: r(p.to) } : {}),
      },
    };
    const restart = (ids: string[]) => async () => {
      await Promise.all(ids.map((id) => this.tryStart(id)));
    };
    const heal = () => c.healNetwork();
    switch (step.kind) {
      case 'kill-one':
      case 'kill-majority':
      case 'kill-all':
      case 'kill-leader': {
        const ids = step.kind === 'kill-leader' ? [await this.leaderOr(step, rec)] : step.targets;
        rec.targets = ids;
        await Promise.all(ids.map((id) => c.kill(id)));
        return restart(ids);
      }
      case 'kill-all-leader-last': {
        const old = await this.leaderOr(step, rec);
        rec.targets = [old, ...c.ids.filter((id) => id !== old)];
        await Promise.all(c.ids.map((id) => c.kill(id)));
        return async () => {
          await Promise.all(c.ids.filter((id) => id !== old).map((id) => this.tryStart(id)));
          // The others elect among themselves first; then the old leader rejoins as a follower.
          const l = await c.waitLeader(15_000).catch(() => undefined);
          rec.detail = `${rec.detail ? `${rec.detail}; ` : ''}old leader ${old} restarted after ${l ? `${l.leader} led` : 'no leader in 15 s'}`;
          await sleep(1_000);
          await this.tryStart(old);
        };
      }
      case 'pause-leader':
      case 'pause-follower': {
        let id: string;
        if (step.kind === 'pause-leader') id = await this.leaderOr(step, rec);
        else {
          const l = await c.leader();
          const followers = c.ids.filter((x) => x !== l && c.isUp(x));
          id = followers[Math.floor(step.choice * followers.length)] ?? c.ids[0]!;
        }
        rec.targets = [id];
        c.pause(id);
        return async () => c.resume(id);
      }
      case 'partition-isolate-one':
      case 'partition-isolate-leader': {
        const id = step.kind === 'partition-isolate-one' ? step.targets[0]! : await this.leaderOr(step, rec);
        rec.targets = [id];
        await c.network.isolate(id, c.ids);
        return heal;
      }
      case 'partition-majority-minority':
        rec.targets = step.params.minority ?? [];
        await c.network.partition(split(rec.targets, c.ids));
        return heal;
      case 'partition-ring':
        rec.targets = step.params.ring ?? [];
        await c.network.partition(ring(rec.targets));
        return heal;
      case 'partition-one-way':
        rec.targets = [step.params.from!, step.params.to!];
        await c.network.partition(oneWay(step.params.from!, step.params.to!));
        return heal;
      case 'partition-worker-leader': {
        const id = await this.leaderOr(step, rec);
        // The worker (kernel network: one, by choice; proxies: every client) loses the leader only.
        const w = this.d.workers.pick(step.choice);
        rec.targets = [id, ...(c.network.mode === 'netns' && w ? [w.id] : [])];
        rec.detail = await c.network.cutWorkerFrom(id, w?.slot ?? 0);
        return heal;
      }
      case 'link-delay':
        rec.detail = `${step.params.delayMs} ms on every peer link`;
        await c.network.linkFaults({ delayMs: step.params.delayMs });
        return heal;
      case 'link-loss':
        rec.detail = c.network.mode === 'netns' ? `${Math.round(step.params.resetProbability! * 1000)}/1000 of frames between nodes dropped` : `reset probability ${step.params.resetProbability} per chunk on every peer link`;
        await c.network.linkFaults({ resetProbability: step.params.resetProbability });
        return heal;
      case 'clock-jump-one':
      case 'clock-jump-leader':
      case 'clock-drift-leader':
      case 'clock-drift-one': {
        const id = step.kind === 'clock-jump-one' || step.kind === 'clock-drift-one' ? step.targets[0]! : await this.leaderOr(step, rec);
        rec.targets = [id];
        const n = c.node(id);
        if (step.kind === 'clock-drift-leader' || step.kind === 'clock-drift-one') {
          rec.detail = `drift ${step.params.clockDriftMsPerS} ms/s`;
          n.control.setClock({ driftMsPerS: step.params.clockDriftMsPerS!, sinceMs: Date.now() });
        } else {
          rec.detail = `offset ${step.params.clockOffsetMs} ms`;
          n.control.setClock({ offsetMs: step.params.clockOffsetMs! });
        }
        return async () => n.control.reset();
      }
      case 'crash-before-sync':
      case 'crash-after-sync':
      case 'crash-snapshot-save':
      case 'crash-snapshot-install':
      case 'crash-compaction': {
        const id = step.targets[0]!;
        rec.targets = [id];
        const n = c.node(id);
        n.control.armCrash({ id: `step-${step.index}`, ...CRASH[step.kind]!, nth: 1 + Math.floor(step.choice * 3) });
        return async () => {
          n.control.armCrash(undefined);
          const fired = !n.process.running;
          rec.detail = fired ? 'crash point reached; restarted' : 'crash point not reached while armed';
          if (fired) await this.tryStart(id);
        };
      }
      case 'kill-worker': {
        const w = this.d.workers.pick(step.choice);
        if (!w) throw new Error('no worker running');
        rec.targets = [w.id];
        await w.process.kill();
        return async () => this.d.workers.healAll();
      }
      case 'kill-worker-before-effect':
      case 'kill-worker-after-effect': {
        // Armed for whichever worker executes next: the one that dies is the target.
        const before = new Set(this.d.workers.running().map((w) => w.id));
        await this.d.ledger.arm(step.kind === 'kill-worker-before-effect' ? 'before-effect' : 'after-effect');
        return async () => {
          const left = await this.d.ledger.disarm();
          rec.targets = [...before].filter((id) => !this.d.workers.running().some((w) => w.id === id));
          rec.detail = left > 0 ? 'no invocation while armed' : 'a worker killed itself at the crash instruction';
          await this.d.workers.healAll();
        };
      }
      case 'pause-worker-busy': {
        // The newest invocation of a long job without an effect yet: its worker is mid-run.
        const snap = await this.d.ledger.snapshot();
        const written = new Set([...snap.effects, ...snap.replays, ...snap.staleRejected].map((e) => `${e.runId}#${e.fencingToken}`));
        const running = this.d.workers.running();
        const busy = [...snap.invocations]
          .sort((a, b) => (b.seq ?? 0) - (a.seq ?? 0))
          .find((i) => i.jobId.startsWith('slow-') && !written.has(`${i.runId}#${i.fencingToken}`) && !this.pausedRuns.has(i.runId) && running.some((w) => w.id === i.workerId));
        if (busy) this.pausedRuns.add(busy.runId); // its successor is not a new case
        const w = busy ? running.find((x) => x.id === busy.workerId) : this.d.workers.pick(step.choice);
        if (!w) throw new Error('no worker running');
        rec.targets = [w.id];
        rec.detail = busy ? `executing ${busy.runId} (token ${busy.fencingToken})` : 'no long run in progress; a random worker';
        w.process.signal('SIGSTOP');
        return async () => w.process.signal('SIGCONT');
      }
      case 'pause-worker': {
        const w = this.d.workers.pick(step.choice);
        if (!w) throw new Error('no worker running');
        rec.targets = [w.id];
        w.process.signal('SIGSTOP');
        return async () => w.process.signal('SIGCONT');
      }
      case 'replace-node': {
        const m = this.membership();
        const id = step.targets[0]!;
        rec.targets = [id];
        const move = await m.killAndWipe(id, step.params.sameId === true);
        rec.detail = move.detail;
        return async () => {
          const done = await move.heal();
          rec.detail = `${rec.detail}; ${done.detail}`;
          if (done.newId !== id) rec.targets = [id, done.newId];
        };
      }
      case 'grow-shrink': {
        const m = this.membership();
        const added = await m.grow();
        rec.targets = added;
        rec.detail = `grew to ${c.ids.length} voters (${added.join(', ')} joined, added, promoted)`;
        return async () => {
          const leader = await c.leader().catch(() => undefined);
          const removed = await m.shrink(step.params.removeLeader === true, step.choice);
          rec.detail = `${rec.detail}; removed ${removed.map((x) => (x === leader ? `${x} (the leader)` : x)).join(', ')}`;
        };
      }
    }
  }
}
