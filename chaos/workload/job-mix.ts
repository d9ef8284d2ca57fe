// The scheduled jobs of a chaos run, drawn from the seed: cron with seconds, `every` 1–10 s,
// one-offs, FORBID overlap (work longer than the interval, so SKIPPED records appear), jitter,
// failing-then-retrying, a bounded job (end inside the run), and jobs the workload pauses and
// resumes or deletes mid-run. All run the chaos worker's task type; the payload tells the
// handler how to behave. Retention is raised so no run of the window is trimmed before the check.
import type { JobSpec } from '../../src/gen/herald/v1/job.js';
import { at, cron, every, jobSpec } from '../../src/client/job-spec-builders.js';
import { Rng } from '../random.js';
import { CHAOS_TASK_TYPE } from '../worker/task-type.js';

export interface PlannedJob {
  jobId: string;
  kind: string;
  spec: JobSpec;
  failAttempts: number;
  /** Offsets from the start of the fault phase (ms) at which the workload acts on the job. */
  actions: Array<{ atMs: number; type: 'pause' | 'resume' | 'delete' }>;
}

export interface JobMixOptions {
  seed: number;
  /** Wall time the fault phase starts (ms); one-offs and end bounds are placed after it. */
  startMs: number;
  durationMs: number;
  leaseMs: number;
  /** Scale: 1 gives about a dozen jobs. */
  scale?: number;
}

const RETENTION = { maxRuns: 10_000, maxAge: '30d' } as const;

export function jobMix(o: JobMixOptions): PlannedJob[] {
  const rng = new Rng(o.seed).fork('jobs');
  const scale = Math.max(1, Math.round(o.scale ?? 1));
  const jobs: PlannedJob[] = [];
  const base = { taskType: CHAOS_TASK_TYPE, lease: o.leaseMs, retention: RETENTION };
  const add = (kind: string, spec: JobSpec, failAttempts = 0, actions: PlannedJob['actions'] = []) =>
    jobs.push({ jobId: `${kind}-${o.seed}-${jobs.length}`, kind, spec, failAttempts, actions });
  const d = o.durationMs;

  for (let k = 0; k < scale; k++) {
    add('every-1s', jobSpec({ ...base, schedule: every('1s'), payload: { workMs: rng.int(0, 200) } }));
    add('every', jobSpec({ ...base, schedule: every(`${rng.int(2, 10)}s`), payload: { workMs: rng.int(0, 300) } }));
    add('cron-seconds', jobSpec({ ...base, schedule: cron(`*/${rng.pick([2, 3, 5])} * * * * *`), payload: {} }));
    add('one-off', jobSpec({ ...base, schedule: at(o.startMs + rng.int(3_000, Math.max(4_000, d - 2_000))), payload: {} }));
    add('one-off', jobSpec({ ...base, schedule: at(o.startMs + rng.int(3_000, Math.max(4_000, d - 2_000))), payload: {} }));
    add('forbid', jobSpec({ ...base, schedule: every('1s'), overlap: 'forbid', payload: { workMs: 1_600 } }));
    add('jitter', jobSpec({ ...base, schedule: every('2s'), jitter: `${rng.int(300, 1_500)}ms`, payload: {} }));
    const fails = rng.int(1, 2);
    add(
      'flaky',
      jobSpec({ ...base, schedule: every(`${rng.int(2, 4)}s`), retry: { maxAttempts: fails + 2, backoff: '200ms', maxBackoff: '1s' }, payload: { failAttempts: fails } }),
      fails,
    );
    add('bounded', jobSpec({ ...base, schedule: every('1s'), end: o.startMs + Math.round(d / 2), payload: {} }));
    // Paused and resumed (twice in a long run), and deleted mid-run.
    const pauses: PlannedJob['actions'] = [];
    for (let t = rng.int(2_000, 6_000); t + 8_000 < d; t += rng.int(15_000, 60_000)) {
      const len = rng.int(3_000, 6_000);
      pauses.push({ atMs: t, type: 'pause' }, { atMs: t + len, type: 'resume' });
    }
    add('paused', jobSpec({ ...base, schedule: every('1s'), payload: {} }), 0, pauses);
    // Long work: a worker frozen past its lease wakes while the next holder is still working.
    add('slow', jobSpec({ ...base, schedule: every('5s'), payload: { workMs: 4_000 } }));
    add('deleted', jobSpec({ ...base, schedule: every('1s'), payload: {} }), 0, [{ atMs: rng.int(Math.round(d / 3), Math.round((2 * d) / 3)), type: 'delete' }]);
  }
  return jobs;
}
