// The demo schedules `herald dev` creates: one of each kind, with fixed ids so that re-running
// dev on the same data directory finds them instead of piling up copies.
import { AlreadyExistsError } from '../../client/errors.js';
import type { HeraldClient } from '../../client/herald-client.js';
import { at, cron, every, type JobSpecInput } from '../../client/job-spec-builders.js';

export const DEMO_TASK_TYPE = 'demo';

export function demoJobs(nowMs: number): Array<{ id: string; spec: JobSpecInput }> {
  return [
    { id: 'demo-every-5s', spec: { taskType: DEMO_TASK_TYPE, schedule: every('5s'), payload: { hello: 'every 5 seconds' }, labels: { demo: 'true' } } },
    {
      id: 'demo-cron-15s',
      spec: { taskType: DEMO_TASK_TYPE, schedule: cron('*/15 * * * * *'), payload: { hello: 'cron */15 (seconds field)' }, labels: { demo: 'true' } },
    },
    {
      id: 'demo-once-30s',
      spec: { taskType: DEMO_TASK_TYPE, schedule: at(nowMs + 30_000), payload: { hello: 'one-off, 30 s after the first start' }, labels: { demo: 'true' } },
    },
  ];
}

/** Creates the demo jobs that do not exist yet; returns the ids with whether each was created now. */
export async function ensureDemoJobs(client: HeraldClient, nowMs = Date.now()): Promise<Array<{ id: string; created: boolean }>> {
  const out: Array<{ id: string; created: boolean }> = [];
  for (const { id, spec } of demoJobs(nowMs)) {
    try {
      // The idempotency key makes the SDK's own retries safe; the fixed id makes re-runs of dev safe.
      const { created } = await client.createJob(spec, { id, idempotencyKey: `herald-dev-${id}` });
      out.push({ id, created });
    } catch (e) {
      if (!(e instanceof AlreadyExistsError)) throw e;
      out.push({ id, created: false });
    }
  }
  return out;
}
