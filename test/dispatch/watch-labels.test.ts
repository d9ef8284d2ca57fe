// WatchRuns' labels filter end to end on an in-process node through the SDK: runs of jobs that
// carried the labels when the stream started, jobs created with them later, and jobs whose labels
// change while the stream runs (in, then out).
import { afterEach, describe, expect, it } from 'vitest';
import type { WatchItem } from '../../src/client/watch-stream.js';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import type { Run } from '../../src/gen/herald/v1/run.js';
import { waitFor } from '../raft-runtime/helpers/cluster.js';
import { startInProcessCluster, type InProcessCluster } from './helpers/in-process-cluster.js';

const manual = (team: string) =>
  JobSpec.fromPartial({ taskType: 'lbl', labels: { team }, schedule: { kind: { $case: 'every', every: { intervalMs: 3_600_000, anchorUnixMs: 0 } } }, startUnixMs: Date.now() + 3_600_000 });

describe('WatchRuns labels filter (in-process)', () => {
  let c: InProcessCluster | undefined;
  afterEach(async () => {
    await c?.stop();
    c = undefined;
  });

  it('sends runs of jobs carrying the labels, following the jobs’ label changes', { timeout: 30_000 }, async () => {
    c = await startInProcessCluster(1);
    const client = c.client;
    await client.createJob(manual('a'), { id: 'a1' });
    await client.createJob(manual('b'), { id: 'b1' });
    await client.createJob(manual('b'), { id: 'b2' });

    const items: WatchItem<Run>[] = [];
    const abort = new AbortController();
    const consumed = (async () => {
      for await (const it of client.watchRuns({ labels: { team: 'a' } }, { progress: true, signal: abort.signal })) items.push(it);
    })().catch(() => undefined);
    await waitFor('watch attached', () => items.some((i) => i.type === 'progress'), 10_000, 20);

    await client.triggerJob('a1'); // carried team=a at the start: seen
    await client.triggerJob('b1'); // never: not seen
    await client.updateJob('b2', manual('a')); // moves in
    await client.triggerJob('b2');
    await client.updateJob('a1', manual('c')); // moves out
    await client.triggerJob('a1', { ignoreOverlap: true });
    await client.createJob(manual('a'), { id: 'a2' }); // created with it later
    await client.triggerJob('a2');

    const seen = () => items.flatMap((i) => (i.type === 'change' ? [i.value.jobId] : []));
    await waitFor('the last run seen', () => seen().includes('a2'), 10_000, 20);
    abort.abort();
    await consumed;
    expect(seen()).toEqual(['a1', 'b2', 'a2']);
  });
});
