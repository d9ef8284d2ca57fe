/**
 * Matching ready runs to worker capacity: a pure function, so fairness and pacing are tested
 * without streams or a cluster. The dispatcher proposes the plan as one claim command and sends
 * assignments only after it commits.
 */
export interface DispatchCandidate {
  runId: string;
  /** The run's job ('' when unknown: counted under no job). */
  jobId?: string;
  taskType: string;
  priority: number;
  notBeforeMs: number;
}

export interface WorkerCapacity {
  workerId: string;
  taskTypes: ReadonlySet<string>;
  /** Runs the worker can take now. */
  credits: number;
}

export interface DispatchAssignment {
  runId: string;
  workerId: string;
  /** The candidate's, for the counts the dispatcher's limits keep. */
  taskType: string;
  jobId: string;
}

export interface DispatchPlanOptions {
  /** Cluster time: candidates with notBeforeMs after it wait. */
  nowMs: number;
  /** At most this many assignments in one plan (admission limit per round). */
  limit: number;
}

/**
 * Order: priority (high first), then not-before (oldest first), then run id — so equal-priority
 * work of every task type is served in the order it became ready. Each run goes to the eligible
 * worker with the most spare credits (ties: fewest assignments in this plan, then worker id), which
 * spreads load evenly across workers instead of filling the first one.
 */
export function planDispatch(
  candidates: readonly DispatchCandidate[],
  workers: readonly WorkerCapacity[],
  options: DispatchPlanOptions,
): DispatchAssignment[] {
  const spare = new Map<string, number>();
  const given = new Map<string, number>();
  for (const w of workers) if (w.credits > 0) spare.set(w.workerId, w.credits);
  if (spare.size === 0 || options.limit <= 0) return [];

  const ordered = candidates
    .filter((c) => c.notBeforeMs <= options.nowMs)
    .sort((a, b) => b.priority - a.priority || a.notBeforeMs - b.notBeforeMs || (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0));

  const out: DispatchAssignment[] = [];
  for (const c of ordered) {
    if (out.length >= options.limit) break;
    let best: WorkerCapacity | undefined;
    for (const w of workers) {
      const s = spare.get(w.workerId) ?? 0;
      if (s <= 0 || !w.taskTypes.has(c.taskType)) continue;
      if (!best) {
        best = w;
        continue;
      }
      const bs = spare.get(best.workerId)!;
      const bg = given.get(best.workerId) ?? 0;
      const wg = given.get(w.workerId) ?? 0;
      if (s > bs || (s === bs && (wg < bg || (wg === bg && w.workerId < best.workerId)))) best = w;
    }
    if (!best) continue;
    spare.set(best.workerId, spare.get(best.workerId)! - 1);
    given.set(best.workerId, (given.get(best.workerId) ?? 0) + 1);
    out.push({ runId: c.runId, workerId: best.workerId, taskType: c.taskType, jobId: c.jobId ?? '' });
  }
  return out;
}
