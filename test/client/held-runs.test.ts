import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RunAssignment, type RunResult } from '../../src/gen/herald/v1/worker_service.js';
import { HeldRuns, type HeldRun } from '../../src/client/worker/held-runs.js';
import { silentLogger } from '../../src/client/logger.js';

const OK: RunResult['outcome'] = { $case: 'success', success: { output: Buffer.from('ok') } };

function assignment(runId: string, extra: Partial<RunAssignment> = {}): RunAssignment {
  return RunAssignment.fromPartial({ runId, taskType: 'work', fencingToken: 7, attempt: 1, ...extra });
}

let creditsFreed = 0;
function runs(concurrency = 2): HeldRuns {
  creditsFreed = 0;
  return new HeldRuns(concurrency, silentLogger, () => (creditsFreed += 1));
}

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('HeldRun: one object per held run, moving through its phases', () => {
  it('executes, reports its outcome, and is released by the ack; slots are counted from the phases', async () => {
    const held = runs(2);
    const h = held.add(assignment('r1'));
    expect(h.phase).toBe('assigned');
    expect(held.freeSlots()).toBe(2);

    h.start();
    expect(h.phase).toBe('executing');
    expect(held.activeRuns).toBe(1);
    expect(held.freeSlots()).toBe(1);

    const result = h.handlerSettled(OK);
    expect(result).toEqual({ runId: 'r1', fencingToken: 7, outcome: OK });
    expect(h.phase).toBe('reporting');
    expect(h.result).toBe(result);
    expect(held.activeRuns).toBe(0);
    expect(held.freeSlots()).toBe(2);
    // Still held (and heartbeated) until the ack.
    expect(held.refs()).toEqual([{ runId: 'r1', fencingToken: 7 }]);
    expect(held.isIdle()).toBe(false);

    expect(held.acknowledged({ runId: 'r1', fencingToken: 8, accepted: true, reason: '' })).toBe(false);
    const idle = held.idle();
    expect(held.acknowledged({ runId: 'r1', fencingToken: 7, accepted: true, reason: '' })).toBe(true);
    expect(h.phase).toBe('released');
    expect(held.size).toBe(0);
    await idle;
    expect(creditsFreed).toBe(0);
  });

  it('a run dropped while executing is abandoned: it keeps its slot until its handler settles, and reports nothing', () => {
    const held = runs(1);
    const h = held.add(assignment('r1'));
    h.start();
    held.leaseLost({ runId: 'r1', fencingToken: 7, reason: 'moved on' });
    expect(h.phase).toBe('abandoned');
    expect(h.abort.cause).toBe('lease-lost');
    expect(held.get('r1')).toBeUndefined();
    expect(held.activeRuns).toBe(1);
    expect(held.freeSlots()).toBe(0);
    expect(held.isIdle()).toBe(false);

    expect(h.handlerSettled(OK)).toBeUndefined();
    expect(h.phase).toBe('released');
    expect(h.result).toBeUndefined();
    expect(held.activeRuns).toBe(0);
    expect(held.isIdle()).toBe(true);
    // An executing run gives back no credit on drop: its slot frees when the handler settles.
    expect(creditsFreed).toBe(0);
  });

  it('a waiting run is handed on at its instant; dropped before it, its timer is cleared and its credit given back', () => {
    const held = runs(2);
    const started: HeldRun[] = [];
    const early = held.add(assignment('early'));
    const late = held.add(assignment('late'));
    early.wait(50, (h) => started.push(h));
    late.wait(50, (h) => started.push(h));
    expect(held.freeSlots()).toBe(0);

    held.cancel({ runId: 'late', fencingToken: 0, reason: 'job deleted' });
    expect(late.phase).toBe('released');
    expect(late.abort.cause).toBe('cancelled');
    expect(creditsFreed).toBe(1);
    expect(held.freeSlots()).toBe(1);

    vi.advanceTimersByTime(50);
    expect(started).toEqual([early]);
    expect(early.phase).toBe('waiting'); // until whoever was handed it places it
    early.start();
    expect(held.inPhase.waiting).toBe(0);
    expect(held.activeRuns).toBe(1);
  });

  it('queued runs wait for a free slot in order; dropping one takes it out of the queue', () => {
    const held = runs(1);
    const running = held.add(assignment('running'));
    running.start();
    const [a, b, c] = ['a', 'b', 'c'].map((id) => held.add(assignment(id)));
    expect(held.slotsTaken()).toBe(true);
    a!.enqueue();
    b!.enqueue();
    c!.enqueue();
    expect(held.nextQueued()).toBeUndefined(); // the one slot is busy

    held.drop(b!);
    expect(b!.phase).toBe('released');
    expect(creditsFreed).toBe(1);
    expect(held.queue).toEqual([a, c]);

    running.handlerSettled(OK);
    const next = held.nextQueued();
    expect(next).toBe(a);
    next!.start();
    expect(held.nextQueued()).toBeUndefined();
    expect(held.inPhase.queued).toBe(1);
  });

  it('the execution timeout aborts the run as "timeout"; a settled run clears it', () => {
    const held = runs(2);
    const slow = held.add(assignment('slow', { executionTimeoutMs: 100 }));
    const quick = held.add(assignment('quick', { executionTimeoutMs: 100 }));
    slow.start();
    quick.start();
    quick.handlerSettled(OK);
    vi.advanceTimersByTime(100);
    expect(slow.abort.cause).toBe('timeout');
    expect(slow.phase).toBe('executing'); // the handler decides when it stops
    expect(quick.abort.cause).toBeUndefined();
  });

  it('a cancel leaves a finished run to its ack; a lease loss ends it', () => {
    const held = runs(1);
    const h = held.add(assignment('r1'));
    h.start();
    h.handlerSettled(OK);
    held.cancel({ runId: 'r1', fencingToken: 7, reason: 'cancelled' });
    expect(h.phase).toBe('reporting');
    held.leaseLost({ runId: 'r1', fencingToken: 6, reason: 'stale token' });
    expect(h.phase).toBe('reporting');
    held.leaseLost({ runId: 'r1', fencingToken: 0, reason: 'gone' });
    expect(h.phase).toBe('released');
    expect(held.unfinished()).toBe(0);
  });
});
