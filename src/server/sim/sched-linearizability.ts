// Linearizability of the control plane's job-level operations, per job (a job is one register:
// exists, version, paused), Wing & Gong style: a depth-first search for an order of the
// operations that respects real time (an operation answered before another was sent comes
// first) and in which every answer is what the model gives. Operations whose outcome is unknown
// may take effect at any point after they were sent, or never. Operations refused before they
// reached the log (NOT_LEADER) are left out: they took no effect and observed nothing.
//
// The model (apply-jobs.ts): create makes version 1, active (ALREADY_EXISTS when it exists);
// update with expected version v fails VERSION_MISMATCH unless the version is v, else version+1;
// pause makes version+1, paused; resume of a paused job makes version+1, active, of an active one
// changes nothing; delete removes it; trigger changes nothing; all but create fail JOB_NOT_FOUND on a
// job that does not exist. Other answers (a rejected command, INVALID_STATE, …) are not judged.
//
// Bounded: a job with more than MAX_OPS operations is checked on its first MAX_OPS (a prefix of
// a linearizable history is linearizable, and its unknown operations may still never apply), and
// a search is stopped after MAX_STEPS states (counted as unchecked, never as a violation).
import type { ControlOp } from './sim-control-client.js';

const MAX_OPS = 24;
const MAX_STEPS = 200_000;

interface JobReg {
  exists: boolean;
  version: number;
  paused: boolean;
}

export interface LinearizabilityResult {
  jobsChecked: number;
  opsChecked: number;
  /** Jobs whose search hit MAX_STEPS. */
  unchecked: number;
  violations: Array<{ jobId: string; detail: string }>;
}

/** The next state and whether `op`'s answer fits it, or undefined when it cannot be this op's effect. */
function step(s: JobReg, op: ControlOp): JobReg | undefined {
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
  if (op.kind === 'create') return s.exists ? judged('ALREADY_EXISTS', s) : judged(undefined, { exists: true, version: 1, paused: false }, 1, false);
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
      return judged(undefined, { exists: false, version: s.version, paused: false });
    case 'trigger':
      return judged(undefined, s);
  }
}

/** Answers the model does not judge (rejected commands, other item errors): left out. */
function judgeable(op: ControlOp): boolean {
  if (op.outcome === 'ok' || op.outcome === 'unknown') return true;
  return op.errorCode === 'JOB_NOT_FOUND' || op.errorCode === 'VERSION_MISMATCH' || op.errorCode === 'ALREADY_EXISTS';
}

export function checkLinearizable(history: readonly ControlOp[], initiallyExisting: ReadonlySet<string>): LinearizabilityResult {
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
    const ops = all.slice(0, MAX_OPS);
    out.jobsChecked++;
    out.opsChecked += ops.length;
    const initial: JobReg = { exists: initiallyExisting.has(jobId), version: 1, paused: false };
    const verdict = search(ops, initial);
    if (verdict === 'unchecked') out.unchecked++;
    else if (verdict === 'violation') {
      const shown = ops.map((o) => `[${o.invokedAt},${o.outcome === 'unknown' ? '∞' : o.answeredAt}] c${o.client} ${o.kind}${o.expectedVersion !== undefined ? `(v${o.expectedVersion})` : ''} → ${o.outcome}${o.version !== undefined ? ` v${o.version}` : ''}${o.errorCode ? ` ${o.errorCode}` : ''}`);
      out.violations.push({ jobId, detail: `no linearization of ${ops.length} operations: ${shown.join('; ')}` });
    }
  }
  return out;
}

function search(ops: readonly ControlOp[], initial: JobReg): 'ok' | 'violation' | 'unchecked' {
  const n = ops.length;
  const end = ops.map((o) => (o.outcome === 'unknown' ? Infinity : o.answeredAt!));
  const mustDo = ops.reduce((m, o, i) => (o.outcome === 'unknown' ? m : m | (1 << i)), 0);
  const seen = new Set<string>();
  let steps = 0;
  const dfs = (done: number, s: JobReg): boolean | undefined => {
    if ((done & mustDo) === mustDo) return true;
    const key = `${done}|${s.exists ? 1 : 0}|${s.version}|${s.paused ? 1 : 0}`;
    if (seen.has(key)) return false;
    seen.add(key);
    if (++steps > MAX_STEPS) return undefined;
    // Real time: an op may go next only if no op still to go was answered before it was sent.
    let firstEnd = Infinity;
    for (let i = 0; i < n; i++) if (!(done & (1 << i)) && end[i]! < firstEnd) firstEnd = end[i]!;
    for (let i = 0; i < n; i++) {
      if (done & (1 << i) || ops[i]!.invokedAt > firstEnd) continue;
      const next = step(s, ops[i]!);
      if (!next) continue;
      const r = dfs(done | (1 << i), next);
      if (r !== false) return r;
    }
    return false;
  };
  const r = dfs(0, initial);
  return r === undefined ? 'unchecked' : r ? 'ok' : 'violation';
}
