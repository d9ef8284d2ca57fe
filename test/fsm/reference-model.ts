// A small in-memory reference model of the scheduler FSM for property tests: `every` schedules
// anchored at T0, the misfire and overlap policies, retries, fencing and leases. It is written
// independently of src/fsm (plain maps, no indexes) and shares only the schedule math.
import { MisfirePolicy, OverlapPolicy } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { retryBackoffMs } from '../../src/fsm/schedule/index.js';
import { hardRunSlack } from '../../src/fsm/store/retention.js';
import type { RetryPolicy } from '../../src/gen/herald/v1/job.js';

export interface ModelJobSpec {
  intervalMs: number;
  anchorMs: number;
  misfire: MisfirePolicy;
  misfireMaxRuns: number;
  overlap: OverlapPolicy;
  maxAttempts: number;
  priority: number;
  /** HistoryRetention.max_runs (0 = default 100). */
  retentionRuns: number;
}

export interface ModelJob {
  id: string;
  spec: ModelJobSpec;
  paused: boolean;
  nextFire: number;
  lastSlot: number;
  active: string[];
  held: string;
  manualSeq: number;
  version: number;
}

export interface ModelRun {
  id: string;
  jobId: string;
  slot: number;
  state: RunState;
  attempt: number;
  token: number;
  notBefore: number;
  held: boolean;
}

const TERMINAL = new Set([RunState.RUN_STATE_SUCCEEDED, RunState.RUN_STATE_DEAD, RunState.RUN_STATE_CANCELLED, RunState.RUN_STATE_SKIPPED, RunState.RUN_STATE_MISSED]);

function retryOf(s: ModelJobSpec): RetryPolicy {
  return { maxAttempts: s.maxAttempts, initialBackoffMs: 0, maxBackoffMs: 0, backoffMultiplier: 0, nonRetryableErrorTypes: [] };
}

export class ReferenceModel {
  readonly jobs = new Map<string, ModelJob>();
  readonly runs = new Map<string, ModelRun>();
  /** CreateJob idempotency: key → (job id, expiry). */
  readonly idem = new Map<string, { jobId: string; expiresMs: number }>();

  private firstSlotAtOrAfter(s: ModelJobSpec, t: number): number {
    return t <= s.anchorMs ? s.anchorMs : s.anchorMs + Math.ceil((t - s.anchorMs) / s.intervalMs) * s.intervalMs;
  }

  put(id: string, spec: ModelJobSpec, now: number, idemKey = ''): void {
    if (idemKey) {
      const prior = this.idem.get(idemKey);
      if (prior && prior.expiresMs > now) return; // answered from the first create
    }
    // A keyed create refused for a taken id remembers that answer too (jobId '' = refused).
    if (idemKey) this.idem.set(idemKey, { jobId: this.jobs.has(id) ? '' : id, expiresMs: now + 24 * 3600 * 1000 });
    if (this.jobs.has(id)) return;
    this.jobs.set(id, { id, spec, paused: false, nextFire: this.firstSlotAtOrAfter(spec, now), lastSlot: 0, active: [], held: '', manualSeq: 0, version: 1 });
  }

  pause(id: string, now: number): void {
    const j = this.jobs.get(id);
    if (!j) return;
    if (!j.paused) {
      // Slots that came due but were never fired get a MISSED record (I2), at most 1000.
      let last = 0;
      for (let s = j.nextFire, n = 0; s <= now && n < 1000; s += j.spec.intervalMs, n++) {
        last = s;
        const rid = `${id}@${s}`;
        if (!this.runs.has(rid)) this.newRun(j, rid, s, RunState.RUN_STATE_MISSED);
      }
      if (last > 0) {
        j.lastSlot = Math.max(j.lastSlot, last);
        j.nextFire = last + j.spec.intervalMs;
      }
    }
    j.paused = true;
    j.version++;
  }

  resume(id: string, now: number): void {
    const j = this.jobs.get(id);
    if (!j || !j.paused) return;
    j.paused = false;
    j.version++;
    j.nextFire = this.firstSlotAtOrAfter(j.spec, Math.max(now, j.lastSlot + 1));
  }

  delete(id: string): void {
    if (!this.jobs.delete(id)) return;
    for (const [rid, r] of this.runs) if (r.jobId === id) this.runs.delete(rid);
  }

  private newRun(j: ModelJob, id: string, slot: number, state: RunState, held = false): void {
    this.runs.set(id, { id, jobId: j.id, slot, state, attempt: 0, token: 0, notBefore: slot, held });
    if (!TERMINAL.has(state)) j.active.push(id);
  }

  private ended(r: ModelRun): void {
    const j = this.jobs.get(r.jobId);
    if (!j) return;
    j.active = j.active.filter((x) => x !== r.id);
    if (j.held === r.id) j.held = '';
    if (j.held && j.active.every((x) => x === j.held)) {
      this.runs.get(j.held)!.held = false;
      j.held = '';
    }
  }

  fire(id: string, slot: number, now: number, threshold: number): string[] {
    const j = this.jobs.get(id);
    if (!j || j.paused || slot < j.nextFire) return [];
    const upTo = Math.max(slot, now);
    const slots: number[] = [];
    for (let s = j.nextFire; s <= upTo; s += j.spec.intervalMs) slots.push(s);
    const misfired = slots.filter((s) => now > s + threshold);
    const keep = j.spec.misfire === MisfirePolicy.MISFIRE_POLICY_SKIP ? 0 : j.spec.misfire === MisfirePolicy.MISFIRE_POLICY_RUN_ALL ? j.spec.misfireMaxRuns : 1;
    const missed = new Set(misfired.slice(0, Math.max(0, misfired.length - keep)));
    const created: string[] = [];
    for (const s of slots) {
      const rid = `${id}@${s}`;
      if (this.runs.has(rid)) continue;
      created.push(rid);
      if (missed.has(s)) {
        this.newRun(j, rid, s, RunState.RUN_STATE_MISSED);
        continue;
      }
      const busy = j.active.length > 0;
      const ov = j.spec.overlap;
      if (busy && (ov === OverlapPolicy.OVERLAP_POLICY_FORBID || (ov === OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE && j.held))) {
        this.newRun(j, rid, s, RunState.RUN_STATE_SKIPPED);
        continue;
      }
      if (busy && ov === OverlapPolicy.OVERLAP_POLICY_REPLACE) {
        for (const a of j.active) {
          const r = this.runs.get(a)!;
          r.state = RunState.RUN_STATE_CANCELLED;
          r.held = false;
        }
        j.active = [];
        j.held = '';
      }
      const held = busy && ov === OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE;
      this.newRun(j, rid, s, RunState.RUN_STATE_PENDING, held);
      if (held) j.held = rid;
    }
    j.lastSlot = slots[slots.length - 1]!;
    j.nextFire = j.lastSlot + j.spec.intervalMs;
    return created;
  }

  trigger(id: string, now: number): void {
    const j = this.jobs.get(id);
    if (!j) return;
    // The overlap policy applies as to a slot, except that a refused trigger leaves no record.
    const busy = j.active.length > 0;
    const ov = j.spec.overlap;
    if (busy && (ov === OverlapPolicy.OVERLAP_POLICY_FORBID || (ov === OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE && j.held))) return;
    const rid = `${id}@${now}~m${j.manualSeq++}`;
    if (busy && ov === OverlapPolicy.OVERLAP_POLICY_REPLACE) {
      for (const a of j.active) {
        const r = this.runs.get(a)!;
        r.state = RunState.RUN_STATE_CANCELLED;
        r.held = false;
      }
      j.active = [];
      j.held = '';
    }
    const held = busy && ov === OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE;
    this.runs.set(rid, { id: rid, jobId: id, slot: now, state: RunState.RUN_STATE_PENDING, attempt: 0, token: 0, notBefore: now, held });
    j.active.push(rid);
    if (held) j.held = rid;
  }

  claim(rid: string, now: number, token: number): void {
    const r = this.runs.get(rid);
    if (!r || r.held || (r.state !== RunState.RUN_STATE_PENDING && r.state !== RunState.RUN_STATE_FAILED) || r.notBefore > now) return;
    r.state = RunState.RUN_STATE_RUNNING;
    r.attempt++;
    r.token = token;
  }

  finish(rid: string, token: number, ok: boolean, now: number): void {
    const r = this.runs.get(rid);
    if (!r || r.state !== RunState.RUN_STATE_RUNNING || r.token !== token) return;
    const spec = this.jobs.get(r.jobId)!.spec;
    if (ok) r.state = RunState.RUN_STATE_SUCCEEDED;
    else if (r.attempt >= spec.maxAttempts) r.state = RunState.RUN_STATE_DEAD;
    else {
      r.state = RunState.RUN_STATE_FAILED;
      r.notBefore = now + retryBackoffMs(retryOf(spec), r.attempt + 1, rid);
      return;
    }
    this.ended(r);
  }

  expire(rid: string, token: number, now: number): void {
    const r = this.runs.get(rid);
    if (!r || r.state !== RunState.RUN_STATE_RUNNING || r.token !== token) return;
    if (r.attempt >= this.jobs.get(r.jobId)!.spec.maxAttempts) {
      r.state = RunState.RUN_STATE_DEAD;
      this.ended(r);
    } else {
      r.state = RunState.RUN_STATE_PENDING;
      r.notBefore = now;
    }
  }

  /** Keeps the newest retention_runs finished runs of the job (history order: slot, then suffix). */
  trim(jobId: string): void {
    const j = this.jobs.get(jobId);
    if (!j) return;
    const keep = j.spec.retentionRuns || 100;
    const finished = this.finishedOf(jobId);
    for (const r of finished.slice(0, Math.max(0, finished.length - keep))) this.runs.delete(r.id);
  }

  /** The job's terminal runs, oldest first (history order: slot, then suffix). */
  private finishedOf(jobId: string): ModelRun[] {
    const suffix = (id: string) => (id.includes('~') ? id.slice(id.indexOf('~') + 1) : '');
    return [...this.runs.values()]
      .filter((r) => r.jobId === jobId && TERMINAL.has(r.state))
      .sort((a, b) => a.slot - b.slot || (suffix(a.id) < suffix(b.id) ? -1 : suffix(a.id) > suffix(b.id) ? 1 : 0));
  }

  /** Ids of every terminal run (what bound compares an operation's outcome with). */
  terminalIds(): Set<string> {
    return new Set([...this.runs.values()].filter((r) => TERMINAL.has(r.state)).map((r) => r.id));
  }

  /**
   * The hard retention bound after one command (apply-run-bound.ts): a job whose runs it ended
   * holding more than retention + hardRunSlack terminal runs loses its oldest, down to retention
   * and at most the runs it gained plus the slack.
   */
  bound(terminalBefore: Set<string>): void {
    const gained = new Map<string, number>();
    for (const r of this.runs.values()) {
      if (TERMINAL.has(r.state) && !terminalBefore.has(r.id)) gained.set(r.jobId, (gained.get(r.jobId) ?? 0) + 1);
    }
    for (const [jobId, n] of gained) {
      const j = this.jobs.get(jobId);
      if (!j) continue;
      const keep = j.spec.retentionRuns || 100;
      const slack = hardRunSlack(keep);
      const finished = this.finishedOf(jobId);
      if (finished.length <= keep + slack) continue;
      for (const r of finished.slice(0, Math.min(finished.length - keep, n + slack))) this.runs.delete(r.id);
    }
  }

  cancel(rid: string): void {
    const r = this.runs.get(rid);
    if (!r || TERMINAL.has(r.state)) return;
    r.state = RunState.RUN_STATE_CANCELLED;
    r.held = false;
    this.ended(r);
  }
}
