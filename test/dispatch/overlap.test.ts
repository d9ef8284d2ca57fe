// Overlap policies end to end (in-process node, in-process raw worker): every-1s jobs whose runs
// take 2.5 s. FORBID records SKIPPED while a run is active; BUFFER_ONE queues one run and starts
// it when the active one ends; REPLACE cancels the active run (the worker gets a RunCancel) and
// starts the new one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobSpec, OverlapPolicy } from '../../src/gen/herald/v1/job.js';
import { RunState, type Run } from '../../src/gen/herald/v1/run.js';
import { sleep } from '../raft-runtime/helpers/cluster.js';
import { RawWorker, sleepAbortable, type TimedEvent } from './fixtures/raw-worker.js';
import { startInProcessCluster, type InProcessCluster } from './helpers/in-process-cluster.js';

const RUN_MS = 2500;

function every1s(taskType: string, overlapPolicy: OverlapPolicy): JobSpec {
  return JobSpec.fromPartial({ taskType, overlapPolicy, schedule: { kind: { $case: 'every', every: { intervalMs: 1000, anchorUnixMs: 0 } } } });
}

/** [start, end] of each execution of the job's runs, from the worker's events. */
function executions(events: TimedEvent[], jobId: string): { runId: string; start: number; end: number }[] {
  return events
    .filter((e): e is Extract<TimedEvent, { type: 'assigned' }> => e.type === 'assigned' && e.jobId === jobId)
    .map((a) => {
      const end = events.find((e) => (e.type === 'finished' || e.type === 'cancel') && e.runId === a.runId && e.at >= a.at);
      return { runId: a.runId, start: a.at, end: end?.at ?? Infinity };
    });
}

describe('overlap policies (in-process)', () => {
  let c: InProcessCluster;
  let w: RawWorker;
  const runs = new Map<string, Run[]>();
  beforeAll(async () => {
    c = await startInProcessCluster(1);
    w = new RawWorker({ endpoints: c.endpoints, workerId: 'ow', taskTypes: ['forbid', 'buffer', 'replace'], capacity: 10, handler: async (_a, s) => (await sleepAbortable(RUN_MS, s), !s.aborted) });
    w.start();
    await c.client.createJob(every1s('forbid', OverlapPolicy.OVERLAP_POLICY_FORBID), { id: 'forbid' });
    await c.client.createJob(every1s('buffer', OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE), { id: 'buffer' });
    await c.client.createJob(every1s('replace', OverlapPolicy.OVERLAP_POLICY_REPLACE), { id: 'replace' });
    await sleep(7_500);
    for (const id of ['forbid', 'buffer', 'replace']) runs.set(id, (await c.client.listRuns({ jobId: id, pageSize: 100 })).items.sort((a, b) => a.slotUnixMs - b.slotUnixMs));
  });
  afterAll(async () => {
    w?.stop();
    await c?.stop();
  });

  it('FORBID: slots due while a run is active are SKIPPED; runs never overlap', () => {
    const r = runs.get('forbid')!;
    expect(r.filter((x) => x.state === RunState.RUN_STATE_SKIPPED).length).toBeGreaterThanOrEqual(3);
    expect(r.filter((x) => x.state === RunState.RUN_STATE_SKIPPED).every((x) => x.reason.includes('FORBID'))).toBe(true);
    const ex = executions(w.events, 'forbid');
    expect(ex.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < ex.length; i++) expect(ex[i]!.start).toBeGreaterThanOrEqual(ex[i - 1]!.end);
    // Every slot has a record: consecutive slots, none missing.
    for (let i = 1; i < r.length; i++) expect(r[i]!.slotUnixMs - r[i - 1]!.slotUnixMs).toBe(1000);
  });

  it('BUFFER_ONE: one run waits behind the active one and starts when it ends; the rest are SKIPPED', () => {
    const r = runs.get('buffer')!;
    expect(r.filter((x) => x.state === RunState.RUN_STATE_SKIPPED).length).toBeGreaterThanOrEqual(2);
    const ex = executions(w.events, 'buffer');
    expect(ex.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < ex.length; i++) {
      expect(ex[i]!.start).toBeGreaterThanOrEqual(ex[i - 1]!.end);
      // The buffered run was waiting: it starts right after its predecessor, not at a later slot.
      expect(ex[i]!.start - ex[i - 1]!.end).toBeLessThan(900);
    }
    // The run started second is the slot right after the first one (it was the buffered one).
    const slotOf = (id: string) => r.find((x) => x.id === id)!.slotUnixMs;
    expect(slotOf(ex[1]!.runId) - slotOf(ex[0]!.runId)).toBe(1000);
  });

  it('REPLACE: the active run is cancelled (worker told) and the new slot starts', () => {
    const r = runs.get('replace')!;
    const cancelled = r.filter((x) => x.state === RunState.RUN_STATE_CANCELLED);
    expect(cancelled.length).toBeGreaterThanOrEqual(3);
    expect(cancelled.every((x) => x.reason.includes('REPLACE'))).toBe(true);
    const cancels = w.events.filter((e): e is Extract<TimedEvent, { type: 'cancel' }> => e.type === 'cancel' && e.runId.startsWith('replace@'));
    for (const x of cancelled.filter((x) => x.attempt > 0)) expect(cancels.some((e) => e.runId === x.id)).toBe(true);
    expect(cancels.every((e) => e.reason.includes('REPLACE'))).toBe(true);
    // No SKIPPED: every slot got a run that started.
    expect(r.filter((x) => x.state === RunState.RUN_STATE_SKIPPED)).toEqual([]);
    const ex = executions(w.events, 'replace');
    expect(ex.length).toBeGreaterThanOrEqual(5);
  });
});
