// Linearizability of the control plane's job-level operations, per job (a job is one register:
// exists, version, paused, and the state of the runs that trigger and backfill answers named),
// Wing & Gong style: a depth-first search for an order of the operations that respects real time
// (an operation answered before another was sent comes first) and in which every answer is what
// the model gives. Operations whose outcome is unknown may take effect at any point after they
// were sent, or never. Operations refused before they reached the log (NOT_LEADER) and reads
// that got no answer are left out: they took no effect and observed nothing.
//
// The model (apply-jobs.ts, apply-manual-runs.ts, apply-run-lifecycle.ts): create makes version
// 1, active (ALREADY_EXISTS when it exists); update with expected version v fails
// VERSION_MISMATCH unless the version is v, else version+1; pause makes version+1, paused; resume
// of a paused job makes version+1, active, of an active one changes nothing; delete removes it
// and its runs; trigger and backfill create the runs their answer names (a backfill never names
// a run named before, even one retention trimmed since: from feature level 4 the job's trim
// horizon refuses its slot, and the clients backfill jobs whose retention trims only from level 4);
// a backfill refused for reaching trimmed history (INVALID_STATE, reason HISTORY_TRIMMED) changes
// nothing and needs a job that exists and whose retention trims (the trims are the scheduler's, not
// in the history, so where the horizon stands is not modelled: any such refusal of such a job
// fits); all but create fail JOB_NOT_FOUND on a job that does not exist. Named runs
// are live, ended (by the scheduler: finished, replaced, ...) or cancelled (by a cancel that
// applied). The scheduler's ends are not in the history, so a run goes from live to ended when
// an answer first shows it ended — a cancel answered INVALID_STATE, a read showing it terminal —
// and never back. cancel of a live run cancels it; of an ended or cancelled one is INVALID_STATE;
// RUN_NOT_FOUND only once the job is gone (or, for a job whose retention trims, once the run
// may have ended). Reads: GetJob answers the job's existence, version and paused flag; ListRuns
// shows every named run that exists (in the state the model has: a cancelled run CANCELLED, a
// live one not terminal) and none that does not exist yet. Runs no answer named are not judged.
// Other answers (a rejected command, INVALID_STATE of a trigger, LIMIT_EXCEEDED, …) are not judged.
//
// Bounded: a job with more than MAX_OPS operations is checked on its first MAX_OPS (a prefix of
// a linearizable history is linearizable, and its unknown operations may still never apply), and
// a search is stopped after MAX_STEPS states (counted as unchecked, never as a violation).
import { RunState } from '../../gen/herald/v1/run.js';
import { isTerminal } from '../../fsm/store/records.js';
import type { ControlOp } from './sim-control-client.js';

const MAX_OPS = 24;
const MAX_STEPS = 200_000;

type RunFate = 'live' | 'ended' | 'cancelled';

interface JobReg {
  exists: boolean;
  version: number;
  paused: boolean;
  /** The named runs created so far, by id. */
  runs: ReadonlyMap<string, RunFate>;
}

export interface LinearizabilityResult {
  jobsChecked: number;
  opsChecked: number;
  /** Jobs whose search hit MAX_STEPS. */
  unchecked: number;
  violations: Array<{ jobId: string; detail: string }>;
}

const NO_RUNS: ReadonlyMap<string, RunFate> = new Map();

function withRuns(s: JobReg, changes: ReadonlyArray<readonly [string, RunFate]>): JobReg {
  if (changes.length === 0) return s;
  const runs = new Map(s.runs);
  for (const [id, fate] of changes) runs.set(id, fate);
  return { ...s, runs };
}

/** The next state and whether `op`'s answer fits it, or undefined when it cannot be this op's effect. */
function step(s: JobReg, op: ControlOp, mayTrim: boolean): JobReg | undefined {
  const unknown = op.outcome === 'unknown';
  const code = op.outcome === 'failed' ? op.errorCode : undefined;
  const judged = (expected: string | undefined, next: JobReg, version?: number, paused?: boolean): JobReg | undefined => {
    if (unknown) return expected === undefined ? next : s;
    if (expected !== undefined) return code === expected ? s : undefined;
    if (op.outcome !== 'ok') return undefined;
    if (version !== undefined && op.version !== undefined && op.version !== version) return undefined;
    if (paused !== undefined && op.paused !== undefined && op.paused !== paused) return undefined;
    return next;
  };
  if (op.kind === 'list') return listRuns(s, op, mayTrim);
  if (op.kind === 'cancel') return cancel(s, op, mayTrim);
  if (op.kind === 'create') return s.exists ? judged('ALREADY_EXISTS', s) : judged(undefined, { exists: true, version: 1, paused: false, runs: NO_RUNS }, 1, false);
  if (!s.exists) return judged('JOB_NOT_FOUND', s);
  switch (op.kind) {
    case 'update':
      if (op.expectedVersion !== 0 && op.expectedVersion !== s.version) return judged('VERSION_MISMATCH', s);
      return judged(undefined, { ...s, version: s.version + 1 }, s.version + 1);
    case 'pause':
      return judged(undefined, { ...s, version: s.version + 1, paused: true }, s.version + 1, true);
    case 'resume':
      return s.paused ? judged(undefined, { ...s, version: s.version + 1, paused: false }, s.version + 1, false) : judged(undefined, s, s.version, false);
    case 'delete':
      return judged(undefined, { exists: false, version: s.version, paused: false, runs: NO_RUNS });
    case 'trigger':
    case 'backfill': {
      if (trimmedRefusal(op)) return mayTrim ? s : undefined;
      const named = op.outcome === 'ok' ? (op.runIds ?? []) : [];
      // Each named run is new: a backfill skips slots backfilled before.
      if (named.some((id) => s.runs.has(id))) return undefined;
      return judged(undefined, withRuns(s, named.map((id) => [id, 'live'] as const)));
    }
    case 'get':
      // A read: exactly the job as it is (exists, else JOB_NOT_FOUND above).
      return judged(undefined, s, s.version, s.paused);
  }
}

function cancel(s: JobReg, op: ControlOp, mayTrim: boolean): JobReg | undefined {
  const id = op.runId!;
  const fate = s.runs.get(id);
  // Runs of a job that exists and were not created yet cannot be cancelled (their creator first).
  if (fate === undefined) {
    if (s.exists) return undefined;
    return op.outcome === 'unknown' || op.errorCode === 'RUN_NOT_FOUND' ? s : undefined;
  }
  if (op.outcome === 'unknown') return fate === 'live' ? withRuns(s, [[id, 'cancelled']]) : s;
  if (op.outcome === 'ok') return fate === 'live' ? withRuns(s, [[id, 'cancelled']]) : undefined;
  if (op.errorCode === 'INVALID_STATE') return fate === 'live' ? withRuns(s, [[id, 'ended']]) : s;
  if (op.errorCode === 'RUN_NOT_FOUND' && mayTrim) return fate === 'live' ? withRuns(s, [[id, 'ended']]) : s;
  return undefined;
}

function listRuns(s: JobReg, op: ControlOp, mayTrim: boolean): JobReg | undefined {
  if (op.outcome !== 'ok') return undefined;
  const seen = new Map((op.runs ?? []).map((r) => [r.id, r.state]));
  const changes: Array<readonly [string, RunFate]> = [];
  for (const id of op.named ?? []) {
    const state = seen.get(id);
    const fate = s.runs.get(id);
    if (state === undefined) {
      // Not shown: never created (yet), gone with its job, on a later page, or trimmed after it ended.
      if (fate === undefined || op.partial) continue;
      if (!mayTrim) return undefined;
      if (fate === 'live') changes.push([id, 'ended']);
      continue;
    }
    if (fate === undefined) return undefined; // shown before it was created
    if (!isTerminal(state)) {
      if (fate !== 'live') return undefined; // a stale read: it ended before
    } else if (fate === 'cancelled') {
      if (state !== RunState.RUN_STATE_CANCELLED) return undefined;
    } else if (fate === 'live') changes.push([id, 'ended']);
  }
  return withRuns(s, changes);
}

/** A backfill refused because its range reaches the job's trim horizon (apply-manual-runs.ts). */
function trimmedRefusal(op: ControlOp): boolean {
  return op.kind === 'backfill' && op.outcome === 'failed' && op.errorCode === 'INVALID_STATE' && op.errorReason === 'HISTORY_TRIMMED';
}

/** Answers the model does not judge (rejected commands, other item errors, unanswered reads): left out. */
function judgeable(op: ControlOp): boolean {
  if (op.outcome === 'ok') return true;
  if (op.outcome === 'unknown') return op.kind !== 'get' && op.kind !== 'list';
  if (op.kind === 'cancel') return op.errorCode === 'INVALID_STATE' || op.errorCode === 'RUN_NOT_FOUND';
  if (trimmedRefusal(op)) return true;
  return op.errorCode === 'JOB_NOT_FOUND' || op.errorCode === 'VERSION_MISMATCH' || op.errorCode === 'ALREADY_EXISTS';
}

/**
 * `mayTrim(jobId)`: whether the job's retention can delete its ended runs during the run (then a
 * named run may be missing once it may have ended).
 */
export function checkLinearizable(history: readonly ControlOp[], initiallyExisting: ReadonlySet<string>, mayTrim: (jobId: string) => boolean = () => false): LinearizabilityResult {
  const byJob = new Map<string, ControlOp[]>();
  for (const sent of history) {
    // Still unanswered when the run ended: it may have taken effect, as an unknown outcome may.
    const op: ControlOp = sent.outcome === undefined ? { ...sent, outcome: 'unknown' } : sent;
    if (!judgeable(op)) continue;
    const list = byJob.get(op.jobId) ?? [];
    list.push(op);
    byJob.set(op.jobId, list);
  }
  const out: LinearizabilityResult = { jobsChecked: 0, opsChecked: 0, unchecked: 0, violations: [] };
  for (const [jobId, all] of byJob) {
    const prefix = all.slice(0, MAX_OPS);
    // The runs the answers of these operations named: the only ones reads are judged on.
    const named = [...new Set(prefix.flatMap((o) => (o.outcome === 'ok' ? (o.runIds ?? []) : [])))];
    const ops = prefix.map((o) => (o.kind === 'list' ? { ...o, named } : o));
    out.jobsChecked++;
    out.opsChecked += ops.length;
    const initial: JobReg = { exists: initiallyExisting.has(jobId), version: 1, paused: false, runs: NO_RUNS };
    const verdict = search(ops, initial, mayTrim(jobId));
    if (verdict === 'unchecked') out.unchecked++;
    else if (verdict === 'violation') out.violations.push({ jobId, detail: `no linearization of ${ops.length} operations: ${ops.map(describe).join('; ')}` });
  }
  return out;
}

function describe(o: ControlOp): string {
  const what = o.kind === 'cancel' ? `cancel(${o.runId})` : o.kind === 'get' || o.kind === 'list' ? `${o.kind}@${o.node}` : `${o.kind}${o.expectedVersion !== undefined ? `(v${o.expectedVersion})` : ''}`;
  const runs = o.kind === 'list' && o.runs ? ` [${o.runs.filter((r) => o.named?.includes(r.id)).map((r) => `${r.id}:${RunState[r.state]}`).join(',')}]` : '';
  const made = o.kind !== 'list' && o.runIds?.length ? ` runs ${o.runIds.join(',')}` : '';
  return `[${o.invokedAt},${o.outcome === 'unknown' ? '∞' : o.answeredAt}] c${o.client} ${what} → ${o.outcome}${o.version !== undefined ? ` v${o.version}` : ''}${o.errorCode ? ` ${o.errorCode}` : ''}${made}${runs}`;
}

function keyOf(done: number, s: JobReg): string {
  let runs = '';
  if (s.runs.size > 0) runs = [...s.runs].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([id, f]) => `${id}:${f[0]}`).join(',');
  return `${done}|${s.exists ? 1 : 0}|${s.version}|${s.paused ? 1 : 0}|${runs}`;
}

function search(ops: readonly ControlOp[], initial: JobReg, mayTrim: boolean): 'ok' | 'violation' | 'unchecked' {
  const n = ops.length;
  const end = ops.map((o) => (o.outcome === 'unknown' ? Infinity : o.answeredAt!));
  const mustDo = ops.reduce((m, o, i) => (o.outcome === 'unknown' ? m : m | (1 << i)), 0);
  const seen = new Set<string>();
  let steps = 0;
  const dfs = (done: number, s: JobReg): boolean | undefined => {
    if ((done & mustDo) === mustDo) return true;
    const key = keyOf(done, s);
    if (seen.has(key)) return false;
    seen.add(key);
    if (++steps > MAX_STEPS) return undefined;
    // Real time: an op may go next only if no op still to go was answered before it was sent.
    let firstEnd = Infinity;
    for (let i = 0; i < n; i++) if (!(done & (1 << i)) && end[i]! < firstEnd) firstEnd = end[i]!;
    for (let i = 0; i < n; i++) {
      if (done & (1 << i) || ops[i]!.invokedAt > firstEnd) continue;
      const next = step(s, ops[i]!, mayTrim);
      if (!next) continue;
      const r = dfs(done | (1 << i), next);
      if (r !== false) return r;
    }
    return false;
  };
  const r = dfs(0, initial);
  return r === undefined ? 'unchecked' : r ? 'ok' : 'violation';
}
