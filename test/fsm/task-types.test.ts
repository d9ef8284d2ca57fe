// Task type configs and job limits in the state machine: put / delete commands (tags 20, 21),
// validation by apply, the y\0 reads the leader loads its limits with, and the codecs.
import { afterEach, describe, expect, it } from 'vitest';
import { TaskTypeConfig } from '../../src/gen/herald/v1/task_type_service.js';
import { decodeCommand, decodeResult, encodeCommand, encodeResult } from '../../src/fsm/index.js';
import { everySpec, openTestFsm, T0, type TestFsm } from './fsm-test-kit.js';

let t: TestFsm;
afterEach(async () => t?.close());

const cfg = (p: Partial<TaskTypeConfig>) => TaskTypeConfig.fromPartial({ taskType: 'report', ...p });

describe('task type configs', () => {
  it('put stores the config stamped with the command time; get, list and limits() read it; delete removes it', async () => {
    t = await openTestFsm();
    const r = await t.one({ type: 'putTaskType', nowMs: T0, config: cfg({ maxRunning: 10, ratePerSecond: 5, burst: 10 }) }, 'taskType');
    expect(r.error).toBeUndefined();
    expect(r.config).toMatchObject({ taskType: 'report', maxRunning: 10, ratePerSecond: 5, burst: 10, updatedUnixMs: T0 });
    await t.one({ type: 'putTaskType', nowMs: T0 + 1, config: cfg({ taskType: 'email', maxRunning: 1 }) }, 'taskType');
    expect(await t.fsm.getTaskType('report')).toMatchObject({ maxRunning: 10, updatedUnixMs: T0 });
    expect((await t.fsm.listTaskTypes()).map((c) => c.taskType)).toEqual(['email', 'report']);
    expect((await t.fsm.limits()).taskTypes.map((c) => c.taskType)).toEqual(['email', 'report']);

    // Replacing keeps one config.
    await t.one({ type: 'putTaskType', nowMs: T0 + 2, config: cfg({ maxRunning: 3 }) }, 'taskType');
    expect(await t.fsm.getTaskType('report')).toMatchObject({ maxRunning: 3, ratePerSecond: 0, updatedUnixMs: T0 + 2 });

    const d = await t.one({ type: 'deleteTaskType', nowMs: T0 + 3, taskType: 'report' }, 'taskType');
    expect(d.config?.maxRunning).toBe(3);
    expect(await t.fsm.getTaskType('report')).toBeUndefined();
    const again = await t.one({ type: 'deleteTaskType', nowMs: T0 + 4, taskType: 'report' }, 'taskType');
    expect(again.error?.code).toBe('TASK_TYPE_NOT_FOUND');
  });

  it('refuses bad configs naming the field, and changes nothing', async () => {
    t = await openTestFsm();
    const bad: [Partial<TaskTypeConfig>, string][] = [
      [{ taskType: '' }, 'config.task_type'],
      [{ taskType: 'has space' }, 'config.task_type'],
      [{ maxRunning: -1 }, 'config.max_running'],
      [{ maxRunning: 2_000_000 }, 'config.max_running'],
      [{ ratePerSecond: Number.NaN }, 'config.rate_per_second'],
      [{ ratePerSecond: -1 }, 'config.rate_per_second'],
      [{ ratePerSecond: 0.0001 }, 'config.rate_per_second'],
      [{ ratePerSecond: 1, burst: -2 }, 'config.burst'],
      [{ burst: 5 }, 'config.burst'],
    ];
    for (const [p, field] of bad) {
      const r = await t.one({ type: 'putTaskType', nowMs: T0, config: cfg(p) }, 'taskType');
      expect(r.error?.code, field).toMatch(/INVALID_ARGUMENT|INVALID_ID/);
      expect(r.error?.reason, JSON.stringify(p)).toBe(field);
      expect(r.error?.message).toContain(field);
    }
    expect(await t.fsm.listTaskTypes()).toEqual([]);
  });

  it('keeps an index of jobs with max_concurrent, following creates, edits and deletes', async () => {
    t = await openTestFsm();
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'a', spec: everySpec(60_000, { maxConcurrent: 2 }, T0), idempotencyKey: '' }, 'job');
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'b', spec: everySpec(60_000, {}, T0), idempotencyKey: '' }, 'job');
    expect([...(await t.fsm.limits()).jobs]).toEqual([['a', 2]]);
    await t.one({ type: 'updateJob', nowMs: T0 + 1, jobId: 'a', spec: everySpec(60_000, { maxConcurrent: 5 }, T0), expectedVersion: 0 }, 'job');
    await t.one({ type: 'updateJob', nowMs: T0 + 1, jobId: 'b', spec: everySpec(60_000, { maxConcurrent: 1 }, T0), expectedVersion: 0 }, 'job');
    expect([...(await t.fsm.limits()).jobs]).toEqual([['a', 5], ['b', 1]]);
    // Paused jobs keep their limit (their running runs still count).
    await t.one({ type: 'pauseJob', nowMs: T0 + 2, jobId: 'b', note: '' }, 'job');
    await t.one({ type: 'updateJob', nowMs: T0 + 3, jobId: 'a', spec: everySpec(60_000, { maxConcurrent: 0 }, T0), expectedVersion: 0 }, 'job');
    expect([...(await t.fsm.limits()).jobs]).toEqual([['b', 1]]);
    await t.one({ type: 'deleteJob', nowMs: T0 + 4, jobId: 'b', expectedVersion: 0 }, 'delete');
    expect((await t.fsm.limits()).jobs.size).toBe(0);
    const tooMany = await t.one({ type: 'putJob', nowMs: T0, jobId: 'c', spec: everySpec(60_000, { maxConcurrent: 10_001 }, T0), idempotencyKey: '' }, 'job');
    expect(tooMany.error?.message).toContain('spec.max_concurrent');
  });

  it('limitsVersion moves when a limit is written or deleted, not for unlimited jobs; a follower writing the effects follows', async () => {
    t = await openTestFsm();
    const follower = await openTestFsm();
    try {
      // Each step is applied by the leader, then by the follower from the leader's effects.
      const step = async (cmd: Parameters<TestFsm['applyCapturing']>[0]) => {
        const { effects } = await t.applyCapturing(cmd);
        if (effects) expect(await follower.fsm.applyEffects(effects)).toBe('applied');
        return { leader: t.fsm.limitsVersion, follower: follower.fsm.limitsVersion };
      };
      let last = { leader: t.fsm.limitsVersion, follower: follower.fsm.limitsVersion };
      const expectMoved = (now: typeof last, moved: boolean, what: string) => {
        expect(now.leader !== last.leader, `leader: ${what}`).toBe(moved);
        expect(now.follower !== last.follower, `follower: ${what}`).toBe(moved);
        last = now;
      };
      expectMoved(await step({ type: 'putJob', nowMs: T0, jobId: 'plain', spec: everySpec(60_000, {}, T0), idempotencyKey: '' }), false, 'an unlimited create');
      expectMoved(await step({ type: 'pauseJob', nowMs: T0 + 1, jobId: 'plain', note: '' }), false, 'pausing an unlimited job');
      expectMoved(await step({ type: 'putJob', nowMs: T0, jobId: 'a', spec: everySpec(60_000, { maxConcurrent: 2 }, T0), idempotencyKey: '' }), true, 'a limited create');
      expectMoved(await step({ type: 'pauseJob', nowMs: T0 + 2, jobId: 'a', note: '' }), false, 'pausing a limited job (its limit stays)');
      expectMoved(await step({ type: 'updateJob', nowMs: T0 + 3, jobId: 'a', spec: everySpec(60_000, { maxConcurrent: 5 }, T0), expectedVersion: 0 }), true, 'a new max_concurrent');
      expectMoved(await step({ type: 'deleteJob', nowMs: T0 + 4, jobId: 'a', expectedVersion: 0 }), true, 'deleting a limited job');
      expectMoved(await step({ type: 'putTaskType', nowMs: T0 + 5, config: cfg({ maxRunning: 1 }) }), true, 'a task type config');
      expectMoved(await step({ type: 'deleteTaskType', nowMs: T0 + 6, taskType: 'report' }), true, 'deleting a task type config');
      expectMoved(await step({ type: 'deleteJob', nowMs: T0 + 7, jobId: 'plain', expectedVersion: 0 }), false, 'deleting an unlimited job');
    } finally {
      await follower.close();
    }
  });

  it('commands and results round-trip through their codecs', () => {
    const put = { type: 'putTaskType' as const, nowMs: T0, config: cfg({ maxRunning: 7, ratePerSecond: 0.5, burst: 3 }) };
    expect(decodeCommand(encodeCommand(put))).toEqual(put);
    const del = { type: 'deleteTaskType' as const, nowMs: T0, taskType: 'x' };
    expect(decodeCommand(encodeCommand(del))).toEqual(del);
    const res = { type: 'taskType' as const, config: cfg({ maxRunning: 1, updatedUnixMs: T0 }) };
    expect(decodeResult(encodeResult(res))).toEqual(res);
    const err = { type: 'taskType' as const, error: { code: 'TASK_TYPE_NOT_FOUND' as const, message: 'm', reason: '' } };
    expect(decodeResult(encodeResult(err))).toEqual(err);
  });
});
