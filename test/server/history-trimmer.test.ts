// The leader's history trimmer: what it trims comes from the trim index (a fake of the state
// machine's read here), at most MAX_JOBS_PER_TRIM jobs a command, round robin from where the last
// round stopped so jobs due "now" take turns; a failed proposal needs nothing put back. And the
// watchdog's unserved task types (waiting runs with no connected worker subscribed) and the
// raiseAlerts commands it proposes for stalled slots.
import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { HistoryTrimmer, MAX_JOBS_PER_TRIM, MAX_TRIM_ROUNDS_PER_TICK } from '../../src/server/leader/history-trimmer.js';
import { Watchdog } from '../../src/server/leader/watchdog.js';
import { schedulerConfig } from '../../src/server/leader/leader-config.js';
import { createNodeMetrics } from '../../src/server/node/metrics.js';
import type { FsmCommand } from '../../src/fsm/index.js';

const trimKey = (due: number, jobId: string) => `h\0${String(due).padStart(15, '0')}\0${jobId}`;

/** The trim index as the state machine's read answers it: sorted keys, due at or before now. */
function fakeIndex(keys: string[]) {
  let sorted = [...keys].sort();
  return {
    async trimDueKeys(nowMs: number, limit: number, afterKey?: string) {
      const lt = `h\0${String(nowMs + 1).padStart(15, '0')}`;
      return sorted.filter((k) => k < lt && (afterKey === undefined || k > afterKey)).slice(0, limit);
    },
    /** What applying a trim does to the index: the trimmed jobs are no longer due. */
    trimmed(jobIds: readonly string[]) {
      sorted = sorted.filter((k) => !jobIds.some((j) => k.endsWith(`\0${j}`)));
    },
  };
}

/** `stayDue`: trims leave the jobs due (as a job over the per-trim deletion bound stays). */
function trimmer(keys: string[], o: { now?: number; fail?: boolean; stayDue?: boolean } = {}) {
  const proposed: string[][] = [];
  const index = fakeIndex(keys);
  const t = new HistoryTrimmer({
    config: schedulerConfig({ trimIntervalMs: 100 }),
    log: pino({ level: 'silent' }),
    now: () => o.now ?? 10_000,
    active: () => true,
    reads: index,
    propose: (async (cmd: FsmCommand) => {
      if (cmd.type === 'trimHistory') proposed.push([...cmd.jobIds]);
      if (o.fail) throw new Error('leadership lost');
      if (cmd.type === 'trimHistory' && !o.stayDue) index.trimmed(cmd.jobIds);
      return { type: 'trim', runsTrimmed: 0, idempotencyKeysTrimmed: 0 };
    }) as never,
  });
  return { t, proposed };
}

describe('HistoryTrimmer', () => {
  it('trims the jobs the index has due, at most MAX_JOBS_PER_TRIM per command, back to back while a command is full', async () => {
    const n = 2 * MAX_JOBS_PER_TRIM + 5;
    const keys = Array.from({ length: n }, (_, i) => trimKey(1, `j${String(i).padStart(3, '0')}`));
    keys.push(trimKey(20_000, 'later')); // not due yet
    const { t, proposed } = trimmer(keys);
    await t.trim();
    expect(proposed.map((p) => p.length)).toEqual([MAX_JOBS_PER_TRIM, MAX_JOBS_PER_TRIM, 5]);
    expect(proposed.flat()).toEqual(keys.slice(0, n).map((k) => k.split('\0')[2]));
    // Nothing left due: later ticks trim no job (an empty command carries idempotency-key expiry,
    // one tick in a hundred at this interval).
    for (let i = 0; i < 10; i++) await t.trim();
    expect(proposed.slice(3).flat()).toEqual([]);
    expect(proposed.length).toBeLessThanOrEqual(4);
  });

  it('jobs that stay due take turns: each command starts after the last one taken and wraps; a tick is bounded', async () => {
    const n = MAX_JOBS_PER_TRIM + 5;
    const keys = Array.from({ length: n }, (_, i) => trimKey(1, `j${String(i).padStart(3, '0')}`));
    const { t, proposed } = trimmer(keys, { stayDue: true });
    await t.trim();
    expect(proposed).toHaveLength(MAX_TRIM_ROUNDS_PER_TICK);
    expect(proposed[0]![0]).toBe('j000');
    expect(proposed[1]!.slice(0, 5)).toEqual(['j020', 'j021', 'j022', 'j023', 'j024']);
    expect(proposed[1]!.slice(5, 7)).toEqual(['j000', 'j001']);
  });

  it('a failed trim leaves the jobs due (the index still has them): the next round proposes them again', async () => {
    const { t, proposed } = trimmer([trimKey(1, 'a')], { fail: true });
    await t.trim();
    await t.trim();
    expect(proposed).toEqual([['a'], ['a']]);
  });
});

describe('Watchdog: unserved task types', () => {
  it('flags task types with waiting runs and no connected worker, in the metric and a warning once per change', async () => {
    const metrics = createNodeMetrics({ nodeId: 'n1' });
    const warnings: unknown[] = [];
    const log = { warn: (o: unknown) => warnings.push(o), info: () => undefined, debug: () => undefined } as never;
    let sessions = [{ taskTypes: new Set(['served']) }];
    const waiting = new Map([['served', 3], ['nobody', 2]]);
    const w = new Watchdog({
      config: schedulerConfig(),
      metrics,
      log,
      now: () => 1_000_000,
      active: () => true,
      reads: { dueWindow: async () => [], waitingByTaskType: () => waiting },
      sessions: { all: () => sessions as never },
      propose: () => Promise.reject(new Error('nothing to propose')),
    });
    await w.check();
    expect(w.lastUnserved).toEqual([{ taskType: 'nobody', waitingRuns: 2 }]);
    expect((await metrics.unservedTaskTypes.get()).values[0]!.value).toBe(1);
    await w.check();
    expect(warnings).toHaveLength(1);
    sessions = [{ taskTypes: new Set(['served', 'nobody']) }];
    await w.check();
    expect(w.lastUnserved).toEqual([]);
    expect((await metrics.unservedTaskTypes.get()).values[0]!.value).toBe(0);
  });
});

describe('Watchdog: stalled slots become raiseAlerts commands', () => {
  it('proposes each stalled slot once per term, and again once it is a new slot', async () => {
    const proposed: unknown[] = [];
    let silent = [{ jobId: 'a', slotMs: 5_000 }];
    const w = new Watchdog({
      config: schedulerConfig(),
      metrics: createNodeMetrics({ nodeId: 'n1' }),
      log: { warn: () => undefined, info: () => undefined, debug: () => undefined } as never,
      now: () => 1_000_000,
      active: () => true,
      reads: { dueWindow: async () => silent, waitingByTaskType: () => new Map() },
      sessions: { all: () => [] },
      propose: async (cmd) => {
        proposed.push(cmd);
        return { type: 'alerts', items: [] } as never;
      },
    });
    await w.check();
    await w.check();
    expect(proposed).toEqual([{ type: 'raiseAlerts', nowMs: 1_000_000, items: [{ jobId: 'a', slotMs: 5_000, reason: expect.stringContaining('firing stalled') }] }]);
    silent = [{ jobId: 'a', slotMs: 6_000 }];
    await w.check();
    expect(proposed).toHaveLength(2);
  });
});
