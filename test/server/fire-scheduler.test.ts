// The fire scheduler against a fake leader context: due slots go out as fireRuns commands, at most
// maxFiresInFlight at a time, slots coming due meanwhile wait for the next command, and a failed
// fire puts its slots back in the wheel.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import pino from 'pino';
import { Job, JobSpec, JobState } from '../../src/gen/herald/v1/job.js';
import { encodeCommand, encodeResult, type DispatchHint, type FireItem, type FsmCommand } from '../../src/fsm/index.js';
import { RESULT_TAG } from '../../src/server/observed-state-machine.js';
import { FireScheduler } from '../../src/server/fire-scheduler.js';
import type { LeaderContext } from '../../src/server/leader-context.js';
import { createNodeMetrics } from '../../src/server/metrics.js';
import { schedulerConfig, type SchedulerConfig } from '../../src/server/scheduler-config.js';

const T0 = Date.UTC(2030, 0, 1);

interface Proposed {
  items: readonly FireItem[];
  settle: (ok: boolean) => void;
}

function fakeContext(config: Partial<SchedulerConfig>, due: { jobId: string; slotMs: number }[]) {
  let now = T0;
  const proposed: Proposed[] = [];
  const behind: FireItem[][] = [];
  const ctx = {
    config: schedulerConfig({ tickMs: 10, wheelResolutionMs: 10, horizonMs: 60_000, ...config }),
    metrics: createNodeMetrics({ nodeId: 'n1' }, { defaultMetrics: false }),
    log: pino({ level: 'silent' }),
    fsm: { dueWindow: async (from: number, to: number) => due.filter((d) => d.slotMs >= from && d.slotMs < to) },
    now: () => now,
    active: () => true,
    wakeDispatcher: () => undefined,
    claimBehindFire: (items: readonly FireItem[]) => void behind.push([...items]),
    proposeUnread: (cmd: FsmCommand) =>
      new Promise<void>((resolve, reject) => {
        if (cmd.type !== 'fireRuns') throw new Error(`unexpected ${cmd.type}`);
        proposed.push({ items: cmd.items, settle: (ok) => (ok ? resolve() : reject(new Error('commit failed'))) });
      }),
  } as unknown as LeaderContext;
  return { ctx, proposed, behind, advance: (ms: number) => (now += ms) };
}

async function tick(advance: (ms: number) => void, ms: number): Promise<void> {
  advance(ms);
  await vi.advanceTimersByTimeAsync(ms);
}

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('FireScheduler', () => {
  it('keeps one fire in flight by default: slots due meanwhile ride in the next command', async () => {
    const due = [0, 1, 2].map((i) => ({ jobId: `j${i}`, slotMs: T0 + 20 + i * 10 }));
    const f = fakeContext({ fireBatchSize: 100 }, due);
    const s = new FireScheduler(f.ctx);
    await s.start(T0);
    await tick(f.advance, 25);
    expect(f.proposed.map((p) => p.items.map((i) => i.jobId))).toEqual([['j0']]);
    // j1 and j2 come due while j0's fire is in flight: nothing more is proposed.
    await tick(f.advance, 30);
    expect(f.proposed).toHaveLength(1);
    f.proposed[0]!.settle(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(f.proposed.map((p) => p.items.map((i) => i.jobId))).toEqual([['j0'], ['j1', 'j2']]);
    // Each fire's claim is proposed right behind it.
    expect(f.behind).toEqual(f.proposed.map((p) => p.items));
    s.stop();
  });

  it('with maxFiresInFlight = 2, a second fire goes out while the first is still in flight', async () => {
    const due = [0, 1, 2].map((i) => ({ jobId: `j${i}`, slotMs: T0 + 20 + i * 10 }));
    const f = fakeContext({ fireBatchSize: 100, maxFiresInFlight: 2 }, due);
    const s = new FireScheduler(f.ctx);
    await s.start(T0);
    await tick(f.advance, 25);
    await tick(f.advance, 10);
    expect(f.proposed.map((p) => p.items.map((i) => i.jobId))).toEqual([['j0'], ['j1']]);
    await tick(f.advance, 10);
    expect(f.proposed).toHaveLength(2); // j2 waits: two are in flight
    f.proposed[1]!.settle(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(f.proposed.map((p) => p.items.map((i) => i.jobId))).toEqual([['j0'], ['j1'], ['j2']]);
    s.stop();
  });

  it('cuts due slots into commands of fireBatchSize', async () => {
    const due = Array.from({ length: 5 }, (_, i) => ({ jobId: `j${i}`, slotMs: T0 + 20 }));
    const f = fakeContext({ fireBatchSize: 2, maxFiresInFlight: 3 }, due);
    const s = new FireScheduler(f.ctx);
    await s.start(T0);
    await tick(f.advance, 30);
    expect(f.proposed.map((p) => p.items.length)).toEqual([2, 2, 1]);
    s.stop();
  });

  it('fires a job ahead of its slot by dispatchLeadMs once its last fire said it allows overlap and has no jitter; others at the slot', async () => {
    const slot = T0 + 200;
    const f = fakeContext({ fireBatchSize: 100, maxFiresInFlight: 4, dispatchLeadMs: 100 }, []);
    const s = new FireScheduler(f.ctx);
    await s.start(T0);
    // The previous fire of each job (as applied): its next slot, and how that run will be dispatched.
    const hint = (p: Partial<DispatchHint>): DispatchHint => ({ taskType: 't', priority: 0, jittered: false, allowsOverlap: true, ...p });
    const jobs = ['allow', 'forbid', 'jitter', 'none', 'changed'];
    const dispatch = [hint({}), hint({ allowsOverlap: false }), hint({ jittered: true }), undefined, hint({})];
    s.onApplied([
      {
        index: 7,
        tag: RESULT_TAG.fire,
        data: encodeCommand({ type: 'fireRuns', nowMs: T0 - 1000, misfireThresholdMs: 60_000, items: jobs.map((jobId) => ({ jobId, slotMs: T0 - 1000 })) }),
        result: encodeResult({ type: 'fire', items: jobs.map((_, i) => ({ created: [], missed: [], skipped: [], nextFireMs: slot, ...(dispatch[i] && { dispatch: dispatch[i] }) })), signals: [] }),
      },
    ]);
    expect(s.hintOf('allow')).toEqual(hint({}));
    // Any applied change to a job drops its hint ("changed" was updated after that fire).
    const job = Job.fromPartial({ id: 'changed', state: JobState.JOB_STATE_ACTIVE, nextFireUnixMs: slot, spec: JobSpec.fromPartial({ taskType: 't' }) });
    s.onApplied([{ index: 8, tag: RESULT_TAG.job, data: new Uint8Array(), result: encodeResult({ type: 'job', job, created: false }) }]);
    expect(s.hintOf('changed')).toBeUndefined();
    await tick(f.advance, 90);
    expect(f.proposed).toEqual([]); // 110 ms before the slot: not yet
    await tick(f.advance, 20);
    expect(f.proposed.map((p) => p.items)).toEqual([[{ jobId: 'allow', slotMs: slot }]]); // the slot is still 90 ms away
    await tick(f.advance, 90);
    expect(f.proposed.slice(1).flatMap((p) => p.items.map((i) => i.jobId)).sort()).toEqual(['changed', 'forbid', 'jitter', 'none']);
    s.stop();
  });

  it('with dispatchLeadMs 0 fires every job at its slot', async () => {
    const f = fakeContext({ fireBatchSize: 100, dispatchLeadMs: 0 }, []);
    const s = new FireScheduler(f.ctx);
    await s.start(T0);
    s.onApplied([
      {
        index: 7,
        tag: RESULT_TAG.fire,
        data: encodeCommand({ type: 'fireRuns', nowMs: T0, misfireThresholdMs: 60_000, items: [{ jobId: 'allow', slotMs: T0 - 1000 }] }),
        result: encodeResult({ type: 'fire', items: [{ created: [], missed: [], skipped: [], nextFireMs: T0 + 200, dispatch: { taskType: 't', priority: 0, jittered: false, allowsOverlap: true } }], signals: [] }),
      },
    ]);
    await tick(f.advance, 190);
    expect(f.proposed).toEqual([]);
    await tick(f.advance, 20);
    expect(f.proposed).toHaveLength(1);
    s.stop();
  });

  it('puts the slots of a failed fire back in the wheel and fires them again', async () => {
    const f = fakeContext({ fireBatchSize: 100 }, [{ jobId: 'j0', slotMs: T0 + 20 }]);
    const s = new FireScheduler(f.ctx);
    await s.start(T0);
    await tick(f.advance, 25);
    expect(f.proposed).toHaveLength(1);
    f.proposed[0]!.settle(false);
    await vi.advanceTimersByTimeAsync(0);
    expect(s.holds('j0')).toBe(true);
    await tick(f.advance, 150);
    expect(f.proposed.map((p) => p.items)).toEqual([
      [{ jobId: 'j0', slotMs: T0 + 20 }],
      [{ jobId: 'j0', slotMs: T0 + 20 }],
    ]);
    s.stop();
  });
});
