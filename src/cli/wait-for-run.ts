// `--wait`: poll a run until it reaches a terminal state. Polling (rather than a watch stream) is
// what the public API offers; the interval backs off to 1 s so a long run costs little.
import type { HeraldClient } from '../client/herald-client.js';
import type { Run } from '../gen/herald/v1/run.js';
import { isTerminal, runState } from './output/run-view.js';

/** --wait gave up before the run finished (exit 5: the cluster did not get it done in time). */
export class WaitTimeoutError extends Error {
  override name = 'WaitTimeoutError';
}

export async function waitForRun(client: HeraldClient, run: Run, timeoutMs: number): Promise<Run> {
  const deadline = Date.now() + timeoutMs;
  let current = run;
  let delay = 100;
  while (!isTerminal(current)) {
    if (Date.now() >= deadline) {
      throw new WaitTimeoutError(
        `run ${run.id} still ${runState(current)} after ${timeoutMs} ms (is a worker for task type "${run.taskType}" connected?)`,
      );
    }
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 1_000);
    current = await client.getRun(run.id);
  }
  return current;
}
