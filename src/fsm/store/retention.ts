// Retention policy of a job's run history, shared by apply (the transaction keeps each job's
// trim index entry current as its runs become terminal; trims act on it) and the upgrade that
// derives that index for older stores. Pure functions of a job record and times from commands:
// deterministic on every replica (I5).
import type { JobSpec } from '../../gen/herald/v1/job.js';
import type { JobRecord } from './records.js';

export const DEFAULT_RETENTION_RUNS = 100;
export const DEFAULT_RETENTION_AGE_MS = 7 * 24 * 60 * 60 * 1000;
/** Most runs a job's history overshoots its max_runs before it is due (see trimSlack). */
export const MAX_TRIM_SLACK_RUNS = 10;

export function maxRunsOf(spec: JobSpec | undefined): number {
  return spec?.retention?.maxRuns || DEFAULT_RETENTION_RUNS;
}

export function maxAgeOf(spec: JobSpec | undefined): number {
  return spec?.retention?.maxAgeMs || DEFAULT_RETENTION_AGE_MS;
}

/**
 * Terminal runs beyond max_runs a job may hold before it is due: a trim reads the job's history
 * keys, so trimming one run at a time would cost a history read per finished run. A tenth of the
 * retention (1 to MAX_TRIM_SLACK_RUNS) keeps that read amortised over several runs while a small
 * retention stays close to exact.
 */
export function trimSlack(maxRuns: number): number {
  return Math.min(MAX_TRIM_SLACK_RUNS, Math.max(1, Math.ceil(maxRuns / 10)));
}

/**
 * Terminal runs beyond max_runs a job's history may ever hold: past it, the apply that ends a run
 * trims the job itself (apply-run-bound.ts), whether or not the leader's trimmer keeps up. Twice
 * the trimmer's slack (at least 4), so it acts only when the trimmer has fallen behind.
 */
export function hardRunSlack(maxRuns: number): number {
  return Math.max(4, 2 * trimSlack(maxRuns));
}

/**
 * The due time of a job over its max_runs: the lowest there is, so it comes before every job due
 * by age (the trimmer walks the index from there, round robin). A constant rather than the time
 * the count crossed: that time would depend on how entries were grouped into apply calls, which
 * replicas do differently, and the store must not (trimDueAfterFinish is a min over runs).
 */
export const TRIM_DUE_NOW = 1;

/**
 * When the job's history is next due for a trim after runs of it became terminal, the earliest
 * of them at `finishedMs` (the job record already counts them): its current due time, the age
 * of that run, or at once when the count is over max_runs by the slack. Only ever moves the due
 * time earlier.
 */
export function trimDueAfterFinish(rec: JobRecord, finishedMs: number): number {
  const spec = rec.job.spec;
  const maxRuns = maxRunsOf(spec);
  const due = rec.terminalRuns >= maxRuns + trimSlack(maxRuns) ? TRIM_DUE_NOW : Math.max(TRIM_DUE_NOW, finishedMs + maxAgeOf(spec) + 1);
  return rec.trimDueMs > 0 ? Math.min(rec.trimDueMs, due) : due;
}
