// The dispatcher's limits on a fake clock: the token bucket, max_running, max_concurrent, an
// observed start rate, the reasons reads show, the counts the lease table keeps, and the label cap.
import { describe, expect, it } from 'vitest';
import { TaskTypeConfig } from '../../src/gen/herald/v1/task_type_service.js';
import { DispatchGate } from '../../src/server/leader/dispatch/dispatch-gate.js';
import { TokenBucket } from '../../src/server/leader/dispatch/token-bucket.js';
import { LeaseTable } from '../../src/server/leader/leases/lease-table.js';
import { BoundedLabels } from '../../src/server/leader/task-type-metrics.js';

class FakeClock {
  ms = 1_000_000;
  nowMs(): number {
    return this.ms;
  }
}

const cfg = (taskType: string, p: Partial<TaskTypeConfig>) => TaskTypeConfig.fromPartial({ taskType, ...p });
const cand = (n: number, taskType: string, jobId = 'j') => Array.from({ length: n }, (_, i) => ({ runId: `${jobId}-${taskType}-${i}`, taskType, jobId }));

function setup(limits: { taskTypes?: TaskTypeConfig[]; jobs?: [string, number][] }) {
  const clock = new FakeClock();
  const leases = new LeaseTable(clock);
  const gate = new DispatchGate(leases.running, clock);
  gate.setLimits({ taskTypes: limits.taskTypes ?? [], jobs: new Map(limits.jobs ?? []) });
  /** The dispatcher's part: claims planned for what the gate admitted, tokens taken. */
  const start = (admitted: { runId: string; taskType: string; jobId: string }[]) => {
    for (const a of admitted) leases.claimStarted(a.runId, a);
    gate.started(admitted);
  };
  return { clock, leases, gate, start };
}

describe('token bucket', () => {
  it('starts full, refills at its rate up to its burst, and says when the next token comes', () => {
    const b = new TokenBucket(5, 10, 0);
    expect(b.available(0)).toBe(10);
    b.take(10, 0);
    expect(b.available(0)).toBe(0);
    expect(b.msUntilNext(0)).toBe(200);
    expect(b.available(199)).toBe(0);
    expect(b.available(200)).toBe(1);
    expect(b.available(60_000)).toBe(10); // capped at the burst
    b.reconfigure(1, 3, 60_000);
    expect(b.available(60_000)).toBe(3);
  });
});

describe('dispatch gate', () => {
  it('is inactive without limits, and admits everything then', () => {
    const { gate } = setup({});
    expect(gate.active).toBe(false);
    expect(gate.admit(cand(50, 'a'))).toHaveLength(50);
  });

  it('admits up to max_running less what is counted, and frees room when a lease goes', () => {
    const { gate, leases, start } = setup({ taskTypes: [cfg('report', { maxRunning: 3 })] });
    expect(gate.active).toBe(true);
    const first = gate.admit(cand(10, 'report'));
    expect(first).toHaveLength(3);
    start(first);
    expect(gate.held.get('report')?.get('max_running')).toBe(7);
    // Claimed and leased: still counted; another task type is not limited.
    for (const a of first) {
      leases.grant(a.runId, 1, 'w', 30_000);
      leases.claimSettled(a.runId);
    }
    gate.beginRound();
    expect(gate.admit([...cand(5, 'report'), ...cand(4, 'other')]).map((c) => c.taskType)).toEqual(['other', 'other', 'other', 'other']);
    expect(gate.waitingFor('report', 'j')).toBe('task type report at max_running 3');
    expect(gate.waitingFor('other', 'j')).toBe('');
    leases.release(first[0]!.runId);
    expect(gate.waitingFor('report', 'j')).toBe('');
    expect(gate.admit(cand(5, 'report'))).toHaveLength(1);
  });

  it('reads no more ready entries than the task types have room for (more with job limits)', () => {
    const { gate, start } = setup({ taskTypes: [cfg('a', { maxRunning: 3 }), cfg('b', { maxRunning: 2 })] });
    expect(gate.readLimit(['a', 'b'], 100)).toBe(5);
    start(gate.admit(cand(1, 'a')));
    expect(gate.readLimit(['a', 'b'], 100)).toBe(4);
    expect(gate.readLimit(['a', 'free'], 100)).toBe(100);
    gate.setLimits({ taskTypes: [cfg('a', { maxRunning: 3 })], jobs: new Map([['j', 1]]) });
    expect(gate.readLimit(['a'], 100)).toBe(400);
  });

  it('gives a refused claim its room back, and counts adopted runs at takeover', () => {
    const { gate, leases, start } = setup({ taskTypes: [cfg('t', { maxRunning: 2 })] });
    const a = gate.admit(cand(2, 't'));
    start(a);
    expect(gate.admit(cand(1, 't', 'x'))).toHaveLength(0);
    // The claim applied without granting (refused): the runs stop counting.
    for (const c of a) leases.claimSettled(c.runId);
    expect(gate.admit(cand(2, 't', 'y'))).toHaveLength(2);
    // A new leader: no claims, two RUNNING runs adopted from the store.
    const next = setup({ taskTypes: [cfg('t', { maxRunning: 2 })] });
    next.leases.adopt('r1', 5, 'w', 30_000, { taskType: 't', jobId: 'j1' });
    next.leases.adopt('r2', 6, 'w', 30_000, { taskType: 't', jobId: 'j2' });
    next.leases.adopt('r2', 6, 'w', 30_000, { taskType: 't', jobId: 'j2' }); // re-attach: counted once
    expect(next.leases.running.ofTaskType('t')).toBe(2);
    expect(next.gate.admit(cand(3, 't'))).toHaveLength(0);
  });

  it('holds each job to its max_concurrent while other jobs of the task type go on', () => {
    const { gate, start, leases } = setup({ jobs: [['slow', 2]] });
    leases.adopt('slow@1', 1, 'w', 30_000, { taskType: 't', jobId: 'slow' });
    const admitted = gate.admit([...cand(4, 't', 'slow'), ...cand(3, 't', 'fast')]);
    expect(admitted.map((c) => c.jobId)).toEqual(['slow', 'fast', 'fast', 'fast']);
    expect(gate.held.get('t')?.get('max_concurrent')).toBe(3);
    start(admitted);
    expect(gate.waitingFor('t', 'slow')).toBe('job slow at max_concurrent 2');
    expect(gate.waitingFor('t', 'fast')).toBe('');
  });

  it('starts runs at the configured rate (burst first), whatever is ready', () => {
    const { gate, clock, start, leases } = setup({ taskTypes: [cfg('r', { ratePerSecond: 5, burst: 10 })] });
    let started = 0;
    const perSecond: number[] = [];
    let n = 0;
    // Ten seconds of dispatch rounds every 10 ms with far more ready than the rate allows;
    // runs finish at once (their leases go), so only the rate holds them back.
    for (let second = 0; second < 10; second++) {
      let inSecond = 0;
      for (let tick = 0; tick < 100; tick++) {
        gate.beginRound();
        const admitted = gate.admit(Array.from({ length: 50 }, () => ({ runId: `run-${n++}`, taskType: 'r', jobId: 'j' })));
        start(admitted);
        for (const a of admitted) leases.claimSettled(a.runId);
        inSecond += admitted.length;
        if (admitted.length < 50) expect(gate.held.get('r')?.get('rate')).toBeGreaterThan(0);
        clock.ms += 10;
      }
      perSecond.push(inSecond);
      started += inSecond;
    }
    // The burst of 10 at once, then 5 a second.
    expect(perSecond[0]).toBe(10 + 4);
    expect(perSecond.slice(1).every((x) => x === 5)).toBe(true);
    expect(started).toBe(10 + 5 * 10 - 1);
    // Empty bucket: the reason, and when the next token comes.
    gate.beginRound();
    start(gate.admit(cand(50, 'r', 'z')));
    expect(gate.waitingFor('r', 'j')).toBe('task type r at rate 5/s');
    const ms = gate.msUntilRateRoom();
    expect(ms).toBeGreaterThanOrEqual(0);
    expect(ms).toBeLessThanOrEqual(200);
  });

  it('keeps tokens across a config re-read with the same rate, and drops buckets of removed configs', () => {
    const { gate, start } = setup({ taskTypes: [cfg('r', { ratePerSecond: 1, burst: 2 })] });
    start(gate.admit(cand(2, 'r')));
    gate.setLimits({ taskTypes: [cfg('r', { ratePerSecond: 1, burst: 2 })], jobs: new Map() });
    expect(gate.admit(cand(1, 'r', 'x'))).toHaveLength(0);
    gate.setLimits({ taskTypes: [], jobs: new Map() });
    expect(gate.active).toBe(false);
    expect(gate.admit(cand(5, 'r', 'y'))).toHaveLength(5);
  });
});

describe('running counts', () => {
  it('count a run from claim to lease release, once, and tell the listener when one stops', () => {
    const clock = new FakeClock();
    const leases = new LeaseTable(clock);
    const removed: string[] = [];
    leases.running.onRemoved = (k) => removed.push(k.jobId);
    leases.claimStarted('a', { taskType: 't', jobId: 'ja' });
    leases.grant('a', 1, 'w', 1000);
    leases.claimSettled('a');
    expect(leases.running.ofTaskType('t')).toBe(1);
    expect(leases.running.ofJob('ja')).toBe(1);
    leases.release('a');
    expect(leases.running.ofTaskType('t')).toBe(0);
    expect(removed).toEqual(['ja']);
    leases.adopt('b', 2, 'w', 1000, { taskType: 't', jobId: 'jb' });
    leases.clear();
    expect(leases.running.size).toBe(0);
  });
});

describe('task type labels', () => {
  it('are capped: task types past the cap share "other"', () => {
    const l = new BoundedLabels(2);
    expect([l.of('a'), l.of('b'), l.of('c'), l.of('a'), l.of('d')]).toEqual(['a', 'b', 'other', 'a', 'other']);
  });
});
