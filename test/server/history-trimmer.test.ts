// The leader's history trimmer: what it trims comes from the trim index (a fake of the state
// machine's read here), at most MAX_JOBS_PER_TRIM jobs a command, round robin from where the last
// round stopped so jobs due "now" take turns; a failed proposal needs nothing put back. And the
// watchdog's unserved task types (waiting runs with no connected worker subscribed) and the
// raiseAlerts commands it proposes for stalled slots.
import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { HistoryTrimmer, MAX_JOBS_PER_TRIM } from '../../src/server/leader/history-trimmer.js';
import { Watchdog } from '../../src/server/leader/watchdog.js';
import { schedulerConfig } from '../../src/server/leader/leader-config.js';
import { createNodeMetrics } from '../../src/server/node/metrics.js';
import type { FsmCommand } from '../../src/fsm/index.js';

const trimKey = (due: number, jobId: string) => `h\0${String(due).padStart(15, '0')}\0${jobId}`;

/** The trim index as the state machine's read answers it: sorted keys, due at or before now. */
function fakeIndex(keys: string[]) {
  const sorted = [...keys].sort();
  return {
    async trimDueKeys(nowMs: number, limit: number, afterKey?: string) {
      const lt = `h\0${String(nowMs + 1).padStart(15, '0')}`;
      return sorted.filter((k) => k < lt && (afterKey === undefined || k > afterKey)).slice(0, limit);
    },
  };
}

function trimmer(keys: string[], now = 10_000, fail = false) {
  const proposed: string[][] = [];
  const t = new HistoryTrimmer({
    config: schedulerConfig({ trimIntervalMs: 100 }),
    log: pino({ level: 'silent' }),
    now: () => now,
    active: () => true,
    reads: fakeIndex(keys),
    propose: (async (cmd: FsmCommand) => {
      if (cmd.type === 'trimHistory') proposed.push([...cmd.jobIds]);
      if (fail) throw new Error('leadership lost');
      return { type: 'trim', runsTrimmed: 0, idempotencyKeysTrimmed: 0 };
    }) as never,
  });
  return { t, proposed };
}

describe('HistoryTrimmer', () => {
  it('trims the jobs the index has due, at most MAX_JOBS_PER_TRIM per command, round robin', async () => {
    const n = MAX_JOBS_PER_TRIM + 5;
    const keys = Array.from({ length: n }, (_, i) => trimKey(1, `j${String(i).padStart(3, '0')}`));
    keys.push(trimKey(20_000, 'later')); // not due yet
    const { t, proposed } = trimmer(keys);
    await t.trim();
    await t.trim();
    expect(proposed[0]).toHaveLength(MAX_JOBS_PER_TRIM);
    expect(proposed[0]![0]).toBe('j000');
    // The second round starts after the first one's last job and wraps to the start.
    expect(proposed[1]!.slice(0, 5)).toEqual(['j020', 'j021', 'j022', 'j023', 'j024']);
    expect(proposed[1]!.slice(5, 7)).toEqual(['j000', 'j001']);
    expect(proposed.flat()).not.toContain('later');
  });

  it('a failed trim leaves the jobs due (the index still has them): the next round proposes them again', async () => {
    const { t, proposed } = trimmer([trimKey(1, 'a')], 10_000, true);
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
