// The simulation's control-plane client: job operations proposed on the leader exactly as the
// JobService handler does (job-service.ts onLeader: the leader's cluster time as the command's
// nowMs, a proposal that is never forwarded), each recorded with its outcome: ok (applied,
// result read), failed (refused before it reached the log, or applied with an item error) or
// unknown (the proposal timed out or its proposer died: it may apply later, or never).
//
// Built so far: pause and resume. One operation in flight at a time; one drawn while no leader
// knows cluster time waits for the first that does, so it lands right after a failover, racing
// the new leader's first fires (what forget-missed-on-pause needs to show).
//
// What the checks use is not this history but JobChangeLog: the pause and resume commands that
// applied, by log index (collected from every replica's apply, so nothing applied is missed),
// which gives each job's paused intervals exactly.
import { decodeCommand, decodeResult, encodeCommand, type FsmCommand } from '../../fsm/index.js';
import { isHeraldError } from '../../herald-error.js';
import type { Entry } from '../../raft/types.js';
import type { Prng } from '../../raft/sim/prng.js';
import type { SimScheduler } from '../../raft/sim/sim-scheduler.js';
import type { SchedSimNode } from './sched-sim-node.js';

export type ControlOpKind = 'pause' | 'resume';
export type ControlOutcome = 'ok' | 'failed' | 'unknown';

export interface ControlOp {
  id: number;
  jobId: string;
  kind: ControlOpKind;
  /** Simulation units at invocation and at the answer (undefined: none came). */
  invokedAt: number;
  answeredAt?: number;
  nowMs?: number;
  outcome?: ControlOutcome;
  detail?: string;
}

/** Pause and resume commands that applied, by log index (the first replica to apply one records it). */
export class JobChangeLog {
  private readonly seen = new Set<number>();
  readonly changes = new Map<number, { jobId: string; type: 'pauseJob' | 'resumeJob'; nowMs: number }>();

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
      if (cmd.type === 'pauseJob' || cmd.type === 'resumeJob') this.changes.set(e.index, { jobId: cmd.jobId, type: cmd.type, nowMs: cmd.nowMs });
    }
  }

  /**
   * Per job, the cluster-time intervals (open at both ends) whose slots a pause excuses: from a
   * pause that found the job active to the resume that found it paused (PauseJob records the
   * unfired slots up to its nowMs; ResumeJob fires again from its nowMs on).
   */
  pausedIntervals(): Map<string, Array<[number, number]>> {
    const out = new Map<string, Array<[number, number]>>();
    const pausedAt = new Map<string, number>();
    const add = (jobId: string, from: number, to: number) => {
      const list = out.get(jobId) ?? [];
      list.push([from, to]);
      out.set(jobId, list);
    };
    for (const [, c] of [...this.changes].sort((a, b) => a[0] - b[0])) {
      if (c.type === 'pauseJob') {
        if (!pausedAt.has(c.jobId)) pausedAt.set(c.jobId, c.nowMs);
        continue;
      }
      const from = pausedAt.get(c.jobId);
      if (from === undefined) continue;
      pausedAt.delete(c.jobId);
      add(c.jobId, from, c.nowMs);
    }
    for (const [jobId, from] of pausedAt) add(jobId, from, Infinity);
    return out;
  }
}

export class SimControlClient {
  readonly history: ControlOp[] = [];
  private pending: ControlOp | undefined;
  private inFlight = false;
  private readonly believedPaused = new Set<string>();

  constructor(
    private readonly sched: SimScheduler,
    private readonly rng: Prng,
    private readonly jobIds: readonly string[],
    private readonly leader: () => SchedSimNode | undefined,
    private readonly opRate: number,
    private readonly log?: (line: string) => void,
  ) {}

  /** One simulation unit: maybe draw an operation; send the one waiting when a leader can take it. */
  tick(): void {
    if (this.inFlight) return;
    if (!this.pending && this.jobIds.length > 0 && this.rng.chance(this.opRate)) {
      const jobId = this.rng.pick(this.jobIds);
      const paused = this.believedPaused.has(jobId);
      const kind: ControlOpKind = this.rng.chance(0.9) !== paused ? 'pause' : 'resume';
      this.pending = { id: this.history.length + 1, jobId, kind, invokedAt: this.sched.now };
      this.history.push(this.pending);
    }
    const op = this.pending;
    if (!op) return;
    const leader = this.leader();
    const nowMs = leader?.clusterClock.nowMs();
    if (!leader || nowMs === undefined) return;
    this.pending = undefined;
    this.inFlight = true;
    op.nowMs = nowMs;
    const cmd: FsmCommand = op.kind === 'pause' ? { type: 'pauseJob', nowMs, jobId: op.jobId, note: `sim op ${op.id}` } : { type: 'resumeJob', nowMs, jobId: op.jobId };
    const settle = (outcome: ControlOutcome, detail?: string) => {
      if (op.outcome !== undefined) return;
      op.outcome = outcome;
      op.detail = detail;
      op.answeredAt = this.sched.now;
      this.inFlight = false;
      this.log?.(`t=${this.sched.now} client ${op.kind} ${op.jobId} at cluster time ${op.nowMs}: ${outcome}${detail ? ` (${detail})` : ''}`);
    };
    leader.driver.propose(encodeCommand(cmd), { timeoutMs: 2_000 }).then(
      (out) => {
        const r = decodeResult(out.result);
        if (r.type === 'job' && !r.error) {
          if (op.kind === 'pause') this.believedPaused.add(op.jobId);
          else this.believedPaused.delete(op.jobId);
          settle('ok');
        } else settle('failed', r.type === 'job' ? r.error?.message : r.type === 'rejected' ? r.error.message : r.type);
      },
      // Refused before it reached the log (this node is no leader), or lost on the way: unknown.
      (e: unknown) => settle(isHeraldError(e, 'NOT_LEADER') ? 'failed' : 'unknown', e instanceof Error ? e.message : String(e)),
    );
    // A proposer that dies never answers (its proposal would have timed out well before this).
    this.sched.at(this.sched.now + 400, { alive: true }, () => settle('unknown', 'no answer (the proposer crashed)'));
  }
}
