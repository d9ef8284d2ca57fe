import { afterEach, describe, expect, it } from 'vitest';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { openTestFsm, everySpec, T0, type TestFsm } from './fsm-test-kit.js';

let t: TestFsm;
afterEach(async () => t?.close());

describe('smoke', () => {
  it('create, fire, claim, finish', async () => {
    t = await openTestFsm();
    const put = await t.one({ type: 'putJob', nowMs: T0, jobId: 'a', spec: everySpec(60_000), idempotencyKey: '' }, 'job');
    expect(put.error).toBeUndefined();
    expect(put.job!.nextFireUnixMs).toBe(T0);
    const due = await t.fsm.dueWindow(T0, T0 + 1, 10);
    expect(due).toEqual([{ jobId: 'a', slotMs: T0 }]);
    const fire = await t.one({ type: 'fireRuns', nowMs: T0 + 5, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 }] }, 'fire');
    expect(fire.items[0]!.created).toEqual([`a@${T0}`]);
    expect(fire.items[0]!.nextFireMs).toBe(T0 + 60_000);
    const ready = await t.fsm.readyRuns({ limit: 10 });
    expect(ready.map((r) => r.id)).toEqual([`a@${T0}`]);
    const idx = t.nextIndex();
    const claim = await t.one({ type: 'claimRuns', nowMs: T0 + 10, items: [{ runId: `a@${T0}`, workerId: 'w1', leaseDeadlineMs: T0 + 30_000 }] }, 'claim');
    expect(claim.items[0]!.run!.fencingToken).toBe(idx);
    const fin = await t.one({ type: 'finishRuns', nowMs: T0 + 20, items: [{ runId: `a@${T0}`, fencingToken: idx, succeeded: true, output: new Uint8Array([1]), errorType: '', errorMessage: '', retryable: false, timedOut: false }] }, 'runItems');
    expect(fin.items[0]!.state).toBe(RunState.RUN_STATE_SUCCEEDED);
    const counts = await t.fsm.runCounts();
    expect(counts.get(RunState.RUN_STATE_SUCCEEDED)).toBe(1);
    expect(counts.get(RunState.RUN_STATE_PENDING)).toBe(0); // reported even though not stored
  });
});
