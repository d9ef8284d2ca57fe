// The simulation's control-plane client: job operations proposed on the leader exactly as the
// JobService handler does (job-service.ts onLeader: the leader's cluster time as the command's
// nowMs, a proposal that is never forwarded), each recorded with its outcome: ok (applied,
// result read), failed (refused before it reached the log, or applied with an item error) or
// unknown (the proposal timed out or its proposer died: it may apply later, or never).
//
// Operations: create, update (CAS on the version), pause, resume, delete, trigger, backfill,
// cancel (of a run a trigger or backfill answer named), and the reads GetJob and ListRuns as the
// JobService serves them (job-service.ts read: a read barrier on the node asked — any node, a
// follower included — then the state machine's answer). Several clients, each with one operation in flight; one drawn while no leader knows cluster time waits
// for the first that does, so it lands right after a failover, racing the new leader's first
// fires (what forget-missed-on-pause needs to show). The history feeds the linearizability check
// (sched-linearizability.ts).
//
// What the checks use is not this history but JobChangeLog: the pause and resume commands that
// applied, by log index (collected from every replica's apply, so nothing applied is missed),
// which gives each job's paused intervals exactly.
import { decodeCommand, decodeResult, type FsmCommand } from '../../fsm/index.js';
import { stampedAtAppend } from '../node/stamped-proposal.js';
import { JobState, type JobSpec } from '../../gen/herald/v1/job.js';
import type { RunState } from '../../gen/herald/v1/run.js';
import { MAX_PAGE_SIZE } from '../../fsm/machine/fsm-reads.js';
import { FEATURE_LEVEL } from '../../fsm/commands/feature-levels.js';
import { isHeraldError } from '../../herald-error.js';
import type { Entry } from '../../raft/types.js';
import type { Prng } from '../../raft/sim/prng.js';
import type { SimScheduler } from '../../raft/sim/sim-scheduler.js';
import type { SchedSimNode } from './sched-sim-node.js';

export type ControlOpKind = 'create' | 'update' | 'pause' | 'resume' | 'delete' | 'trigger' | 'backfill' | 'cancel' | 'get' | 'list';

/** A run as a ListRuns answer showed it. */
export interface SeenRun {
  id: string;
  state: RunState;
}
export type ControlOutcome = 'ok' | 'failed' | 'unknown';

export interface ControlOp {
  id: number;
  client: number;
  jobId: string;
  kind: ControlOpKind;
  /** update: the version the CAS expects. */
  expectedVersion?: number;
  /** Simulation units when it was sent and when answered (undefined: no answer). */
  invokedAt: number;
  answeredAt?: number;
  nowMs?: number;
  outcome?: ControlOutcome;
  /** ok: the job the answer carried (version, paused); failed: the item error's code. */
  version?: number;
  paused?: boolean;
  errorCode?: string;
  /** failed with an item error: its reason ('HISTORY_TRIMMED': a backfill into trimmed history). */
  errorReason?: string;
  detail?: string;
  /** create, update: the spec sent. */
  spec?: JobSpec;
  /** ok: the job's next fire instant in the answer (after an update: where its new schedule starts). */
  nextFireMs?: number;
  /** trigger, backfill ok: the runs the answer says were created. */
  runIds?: string[];
  /** cancel: the run. */
  runId?: string;
  /** backfill: the range. */
  fromMs?: number;
  toMs?: number;
  /** get, list: the node that served the read. */
  node?: string;
  /** list ok: the job's runs as read; partial when the page did not hold them all. */
  runs?: SeenRun[];
  partial?: boolean;
  /** list, set by the linearizability check: the runs its job's answers named (the ones judged). */
  named?: string[];
}

/** A job-level command that applied, in log order. */
export interface JobEvent {
  index: number;
  type: 'putJob' | 'updateJob' | 'pauseJob' | 'resumeJob' | 'deleteJob';
  nowMs: number;
  spec?: JobSpec;
  expectedVersion?: number;
}

/**
 * The job-level commands that applied, by log index, collected from every replica's apply (the
 * first to apply an entry records it; every committed entry is evaluated by some replica), so
 * the checks see what happened rather than what the clients were told.
 */
export class JobChangeLog {
  private readonly seen = new Set<number>();
  private readonly events = new Map<string, JobEvent[]>();
  /** Jobs a deleteJob applied to (their runs, and so the sink's effects for them, are gone). */
  readonly deleted = new Set<string>();

  observe(entries: readonly Entry[]): void {
    for (const e of entries) {
      if (e.type !== 'normal' || e.data.length === 0 || this.seen.has(e.index)) continue;
      this.seen.add(e.index);
      let cmd: FsmCommand;
      try {
        cmd = decodeCommand(e.data);
      } catch {
        continue;
      }
      if (cmd.type !== 'putJob' && cmd.type !== 'updateJob' && cmd.type !== 'pauseJob' && cmd.type !== 'resumeJob' && cmd.type !== 'deleteJob') continue;
      if (cmd.type === 'deleteJob') this.deleted.add(cmd.jobId);
      const ev: JobEvent = { index: e.index, type: cmd.type, nowMs: cmd.nowMs };
      if (cmd.type === 'putJob' || cmd.type === 'updateJob') ev.spec = cmd.spec;
      if (cmd.type === 'updateJob') ev.expectedVersion = cmd.expectedVersion;
      const list = this.events.get(cmd.jobId) ?? [];
      list.push(ev);
      this.events.set(cmd.jobId, list);
    }
  }

  /** Every spec the job's applied creates and updates carried (a version mismatch's too: harmless). */
  specs(jobId: string): JobSpec[] {
    return (this.events.get(jobId) ?? []).flatMap((e) => (e.spec ? [e.spec] : []));
  }

  /**
   * The stretches of a job's life whose slots must each have a run record (I2): slots in
   * (fromMs, toMs] of the spec then in force. Replays the job's applied commands in log order
   * (apply-jobs.ts): a pause ends a stretch at its instant (PauseJob records the unfired slots up
   * to it); a resume starts one at the next fire instant its ok answer carried (ResumeJob fires
   * from its instant or after the last slot handled, whichever is later; unknown: nothing after
   * it is checked); an update of an active job ends the old spec's stretch at its instant and
   * starts the new one at the next fire instant its ok answer carried (`nextFireOf(version)`;
   * unknown: nothing after it is checked); an update of a paused job only changes the spec.
   * The command's version check is replayed too (VERSION_MISMATCH changes nothing).
   */
  /** `nextFireOf(version)`: the next fire instant of the ok answer (update or resume) that left the job at that version. */
  segments(jobId: string, initial: JobSpec | undefined, createdMs: number, nextFireOf: (version: number) => number | undefined): SpecSegment[] {
    const out: SpecSegment[] = [];
    const events = [...(this.events.get(jobId) ?? [])].sort((x, y) => x.index - y.index);
    let spec = initial;
    let version = 1;
    let exists = initial !== undefined;
    let paused = false;
    let from = createdMs - 1;
    const close = (to: number) => {
      if (spec && to > from) out.push({ spec, fromMs: from, toMs: to });
    };
    for (const ev of events) {
      if (ev.type === 'putJob') {
        if (exists) continue;
        exists = true;
        spec = ev.spec;
        from = createdMs - 1;
        continue;
      }
      if (!exists) continue;
      switch (ev.type) {
        case 'deleteJob':
          return [];
        case 'pauseJob':
          if (!paused) close(ev.nowMs);
          paused = true;
          version++;
          break;
        case 'resumeJob': {
          if (!paused) break;
          paused = false;
          version++;
          // It fires again from its instant or after the last slot handled, whichever is later:
          // the next fire instant its ok answer carried says which.
          const next = nextFireOf(version);
          if (next === undefined) return out;
          from = next === 0 ? Infinity : next - 1;
          break;
        }
        case 'updateJob': {
          if (ev.expectedVersion !== 0 && ev.expectedVersion !== version) break;
          version++;
          if (paused) {
            spec = ev.spec;
            break;
          }
          close(ev.nowMs);
          spec = ev.spec;
          const next = nextFireOf(version);
          if (next === undefined) return out; // outcome unknown: where the new schedule starts is not known
          from = next === 0 ? Infinity : next - 1;
          break;
        }
      }
    }
    if (!paused) close(Infinity);
    return out;
  }
}

/** What the clients share: the job ids in play, the history, the last version each saw. */
export interface ControlShared {
  readonly jobIds: string[];
  readonly history: ControlOp[];
  readonly knownVersion: Map<string, number>;
  /** Per job, the runs trigger and backfill answers named (what cancels pick from). */
  readonly knownRuns: Map<string, string[]>;
  /** Ids for jobs the clients create. */
  nextCreate: number;
}

export interface ControlClientDeps {
  readonly sched: SimScheduler;
  readonly rng: Prng;
  readonly shared: ControlShared;
  readonly leader: () => SchedSimNode | undefined;
  /** Every node (the cas-from-stale-replica mutation reads one of them). */
  readonly nodes: readonly SchedSimNode[];
  readonly opRate: number;
  readonly spec: (rng: Prng) => JobSpec;
  /** The cas-from-stale-replica mutation (sched-mutations.ts). */
  readonly casFromStaleReplica: boolean;
  /**
   * v2: the operations of fault set v2 only (create to trigger), drawn as then, so its seeds replay.
   * v4: as v3, but the jobs whose retention trims are backfilled too (v3 triggers them instead).
   */
  readonly opSet?: 'v2' | 'v3' | 'v4';
  readonly log?: (line: string) => void;
}

export class SimControlClient {
  private pending: ControlOp | undefined;
  private inFlight = false;
  /** The job of this client's last operation: often the next one's too (read-your-writes pressure). */
  private lastJob: string | undefined;
  /** v4: the range of this client's last backfill of each job, to backfill again once retention may have trimmed it. */
  private readonly backfilled = new Map<string, { fromMs: number; toMs: number }>();

  constructor(
    readonly id: number,
    private readonly d: ControlClientDeps,
  ) {}

  /** One simulation unit: maybe draw an operation; send the one waiting when a leader can take it. */
  tick(): void {
    if (this.inFlight) return;
    const { rng, shared, sched } = this.d;
    if (!this.pending && rng.chance(this.d.opRate)) this.pending = this.draw();
    const op = this.pending;
    if (!op) return;
    const leader = this.d.leader();
    const nowMs = leader?.clusterClock.nowMs();
    if (!leader || nowMs === undefined) return;
    // Below level 4 a backfill re-runs a slot whose run retention trimmed (the old rule, which a
    // cluster keeps until every voter runs a build with the trim horizon): the model's "a backfill
    // never names a run named before" holds from level 4 on. The leader's applied level at sending
    // is a floor for the level the backfill is applied at (the raise entry is before it in the log).
    if (op.kind === 'backfill' && trims(op.jobId) && leader.fsm.appliedFeatureLevel < FEATURE_LEVEL.TRIM_HORIZON) op.kind = 'trigger';
    this.pending = undefined;
    this.inFlight = true;
    op.invokedAt = sched.now;
    op.nowMs = nowMs;
    op.id = shared.history.length + 1;
    shared.history.push(op);
    void this.send(op, leader, nowMs);
  }

  private draw(): ControlOp {
    if (this.d.opSet === 'v2') return this.drawV2();
    const { rng, shared, sched } = this.d;
    const r = rng.next();
    const base = { id: 0, client: this.id, invokedAt: sched.now };
    if (r < 0.05) return { ...base, kind: 'create', jobId: `ctl-job-${shared.nextCreate++}` };
    const jobId = this.lastJob !== undefined && rng.chance(0.5) ? this.lastJob : rng.pick(shared.jobIds);
    this.lastJob = jobId;
    // v4: a fifth of the operations on a job whose retention trims are backfills (half of them over
    // a range backfilled before, see send), so backfills meet trimmed history in most seeds.
    if (this.d.opSet === 'v4' && trims(jobId) && rng.chance(0.2)) return { ...base, kind: 'backfill', jobId };
    if (r < 0.32) {
      const known = shared.knownVersion.get(jobId) ?? 1;
      // Mostly the version last seen; sometimes one behind (a CAS that must fail).
      return { ...base, kind: 'update', jobId, expectedVersion: rng.chance(0.8) ? known : Math.max(1, known - 1) };
    }
    if (r < 0.48) return { ...base, kind: 'pause', jobId };
    if (r < 0.66) return { ...base, kind: 'resume', jobId };
    if (r < 0.68) return { ...base, kind: 'delete', jobId };
    if (r < 0.74) return { ...base, kind: 'trigger', jobId };
    // v3: not on the jobs whose retention trims during the run: before the trim horizon (feature
    // level 4) a backfill re-ran a slot whose backfilled run was trimmed, under the same run id
    // (README: seed 61, 5 nodes). v4 backfills them (refused once the range reaches trimmed history).
    if (r < 0.8) return { ...base, kind: trims(jobId) && this.d.opSet !== 'v4' ? 'trigger' : 'backfill', jobId };
    if (r < 0.86) {
      const runs = shared.knownRuns.get(jobId);
      if (runs && runs.length > 0) return { ...base, kind: 'cancel', jobId, runId: rng.pick(runs) };
      return { ...base, kind: 'trigger', jobId };
    }
    if (r < 0.93) return { ...base, kind: 'get', jobId };
    return { ...base, kind: 'list', jobId };
  }

  private drawV2(): ControlOp {
    const { rng, shared, sched } = this.d;
    const r = rng.next();
    const base = { id: 0, client: this.id, invokedAt: sched.now };
    if (r < 0.06) return { ...base, kind: 'create', jobId: `ctl-job-${shared.nextCreate++}` };
    const jobId = this.lastJob !== undefined && rng.chance(0.5) ? this.lastJob : rng.pick(shared.jobIds);
    this.lastJob = jobId;
    if (r < 0.4) {
      const known = shared.knownVersion.get(jobId) ?? 1;
      return { ...base, kind: 'update', jobId, expectedVersion: rng.chance(0.8) ? known : Math.max(1, known - 1) };
    }
    if (r < 0.62) return { ...base, kind: 'pause', jobId };
    if (r < 0.88) return { ...base, kind: 'resume', jobId };
    if (r < 0.9) return { ...base, kind: 'delete', jobId };
    return { ...base, kind: 'trigger', jobId };
  }

  /** GetJob / ListRuns on a node drawn among those up (a follower's read barrier asks the leader). */
  private async read(op: ControlOp): Promise<void> {
    const d = this.d;
    const up = d.nodes.filter((n) => n.up);
    const node = d.rng.pick(up.length > 0 ? up : [...d.nodes]);
    op.node = node.id;
    // A read that never answers took no effect: it is left out of the history (failed).
    d.sched.at(d.sched.now + 400, { alive: true }, () => this.settle(op, 'failed', { errorCode: 'NO_ANSWER' }));
    try {
      const { found, ...seen } = await readOn(node, op);
      if (!found) return this.settle(op, 'failed', { errorCode: 'JOB_NOT_FOUND', detail: `read on ${node.id}` });
      this.settle(op, 'ok', seen);
    } catch (e) {
      this.settle(op, 'failed', { errorCode: isHeraldError(e) ? e.code : 'ERROR', detail: e instanceof Error ? e.message : String(e) });
    }
  }

  private settle(op: ControlOp, outcome: ControlOutcome, fill?: Partial<ControlOp>): void {
    if (op.outcome !== undefined) return;
    Object.assign(op, fill);
    op.outcome = outcome;
    op.answeredAt = this.d.sched.now;
    this.inFlight = false;
    if (outcome === 'ok' && op.version !== undefined) this.d.shared.knownVersion.set(op.jobId, op.version);
    if (outcome === 'ok' && op.runIds && op.runIds.length > 0) {
      const shared = this.d.shared;
      shared.knownRuns.set(op.jobId, [...(shared.knownRuns.get(op.jobId) ?? []), ...op.runIds]);
    }
    this.d.log?.(
      `t=${this.d.sched.now} client ${this.id} ${op.kind} ${op.jobId} at ${op.nowMs}${op.expectedVersion !== undefined ? ` (expects v${op.expectedVersion})` : ''}: ${outcome}${op.version !== undefined ? ` v${op.version}${op.paused ? ' paused' : ''}` : ''}${op.errorCode ? ` ${op.errorCode}` : ''}${op.detail ? ` (${op.detail})` : ''}`,
    );
  }

  private async send(op: ControlOp, leader: SchedSimNode, nowMs: number): Promise<void> {
    const d = this.d;
    if (op.kind === 'get' || op.kind === 'list') return this.read(op);
    if (op.kind === 'update' && d.casFromStaleReplica) {
      // The mutation: a CAS refused from some replica's applied state (a follower's may be stale).
      const up = d.nodes.filter((n) => n.up);
      const job = up.length > 0 ? await d.rng.pick(up).fsm.getJob(op.jobId).catch(() => undefined) : undefined;
      if (job && job.version !== op.expectedVersion) {
        this.settle(op, 'failed', { errorCode: 'VERSION_MISMATCH', detail: `stale replica at v${job.version}` });
        return;
      }
    }
    let cmd: FsmCommand;
    switch (op.kind) {
      case 'create':
        op.spec = d.spec(d.rng);
        cmd = { type: 'putJob', nowMs, jobId: op.jobId, spec: op.spec, idempotencyKey: `ctl-${op.jobId}` };
        break;
      case 'update':
        op.spec = d.spec(d.rng);
        cmd = { type: 'updateJob', nowMs, jobId: op.jobId, spec: op.spec, expectedVersion: op.expectedVersion! };
        break;
      case 'pause':
        cmd = { type: 'pauseJob', nowMs, jobId: op.jobId, note: `sim op ${op.id}` };
        break;
      case 'resume':
        cmd = { type: 'resumeJob', nowMs, jobId: op.jobId };
        break;
      case 'delete':
        cmd = { type: 'deleteJob', nowMs, jobId: op.jobId, expectedVersion: 0 };
        break;
      case 'trigger':
        cmd = { type: 'triggerJob', nowMs, jobId: op.jobId, idempotencyKey: `ctl-${op.id}`, ignoreOverlap: false };
        break;
      case 'backfill': {
        // v4, a job whose retention trims: half the time the range backfilled before, whose runs
        // may have ended and been trimmed since (the horizon must refuse it, not run them again).
        const again = d.opSet === 'v4' && trims(op.jobId) ? this.backfilled.get(op.jobId) : undefined;
        if (again && d.rng.chance(0.5)) {
          op.fromMs = again.fromMs;
          op.toMs = again.toMs;
        } else {
          // A few past slots of 1-3 s schedules (job-service.ts backfillJob: the range must be past).
          const to = nowMs - d.rng.int(0, 4_000);
          op.fromMs = to - d.rng.pick([1_000, 3_000, 6_000]);
          op.toMs = to;
        }
        if (d.opSet === 'v4' && trims(op.jobId)) this.backfilled.set(op.jobId, { fromMs: op.fromMs, toMs: op.toMs });
        cmd = { type: 'backfillJob', nowMs, jobId: op.jobId, fromMs: op.fromMs, toMs: op.toMs, maxRuns: 10, ignoreOverlap: d.rng.chance(0.5) };
        break;
      }
      case 'cancel':
        cmd = { type: 'cancelRuns', nowMs, items: [{ runId: op.runId!, reason: `sim op ${op.id}` }] };
        break;
      default:
        throw new Error(`${op.kind} is a read`);
    }
    if (op.kind === 'create') d.shared.jobIds.push(op.jobId);
    // A proposer that dies never answers (its proposal would have timed out well before this).
    d.sched.at(d.sched.now + 400, { alive: true }, () => this.settle(op, 'unknown', { detail: 'no answer (the proposer crashed)' }));
    try {
      const out = await leader.driver.propose(stampedAtAppend(cmd, leader.clusterClock), { timeoutMs: 2_000 });
      const r = decodeResult(out.result);
      if (r.type === 'rejected') return this.settle(op, 'failed', { errorCode: `rejected:${r.error.code}`, detail: r.error.message });
      const err = 'error' in r ? r.error : r.type === 'cancel' ? r.items[0]?.error : undefined;
      if (err) return this.settle(op, 'failed', { errorCode: err.code, ...(err.reason ? { errorReason: err.reason } : {}), detail: err.message });
      if (r.type === 'trigger') return this.settle(op, 'ok', { runIds: r.run ? [r.run.id] : [] });
      if (r.type === 'backfill') return this.settle(op, 'ok', { runIds: [...r.runIds] });
      const job = r.type === 'job' ? r.job : undefined;
      this.settle(op, 'ok', job ? { version: job.version, paused: job.state === JobState.JOB_STATE_PAUSED, nextFireMs: job.nextFireUnixMs } : {});
    } catch (e) {
      // Refused before it reached the log (this node is no leader): failed, no effect. Otherwise unknown.
      this.settle(op, isHeraldError(e, 'NOT_LEADER') ? 'failed' : 'unknown', { errorCode: isHeraldError(e) ? e.code : undefined, detail: e instanceof Error ? e.message : String(e) });
    }
  }
}

/** The simulation's jobs whose retention trims during a run (the v3 jobs, sched-simulator.ts). */
export function trims(jobId: string): boolean {
  return jobId.startsWith('job-v3-');
}

/** The JobService's read path on one node: its read barrier, then its state machine's answer. */
async function readOn(node: SchedSimNode, op: ControlOp): Promise<Partial<ControlOp> & { found: boolean }> {
  const fsm = node.fsm;
  await node.driver.readIndex({ timeoutMs: 2_000 });
  if (op.kind === 'get') {
    const job = await fsm.getJob(op.jobId);
    return job ? { found: true, version: job.version, paused: job.state === JobState.JOB_STATE_PAUSED } : { found: false };
  }
  const page = await fsm.listRuns({ jobId: op.jobId, pageSize: MAX_PAGE_SIZE });
  return { found: true, runs: page.items.map((r) => ({ id: r.id, state: r.state })), partial: page.nextPageToken !== '' };
}

/** A stretch of a job's life under one spec: its slots in (fromMs, toMs] are to be accounted for. */
export interface SpecSegment {
  spec: JobSpec;
  fromMs: number;
  toMs: number;
}
