// The chaos suite's negative controls must really break what they claim to break, and must be
// impossible to turn on by accident.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { finishSuccess, UNSAFE_ENV } from '../../src/fsm/index.js';
import { checkUnsafeSkipFsync } from '../../src/raft/storage/unsafe-durability.js';
import { everySpec, openTestFsm, T0, type TestFsm } from './fsm-test-kit.js';

let t: TestFsm | undefined;
afterEach(async () => {
  vi.unstubAllEnvs();
  await t?.close();
  t = undefined;
});

describe('unsafe switches', () => {
  it('are refused without the environment opt-in', async () => {
    vi.stubEnv(UNSAFE_ENV, '');
    await expect(openTestFsm({ unsafe: { skipSlotCheck: true } })).rejects.toThrow(UNSAFE_ENV);
    await expect(openTestFsm({ unsafe: { acceptStaleTokens: true } })).rejects.toThrow(/negative-control/);
    for (const k of ['forgetMissedOnPause', 'adoptWithoutTokenCheck', 'dropClaimLeaseOnFailover'] as const) {
      await expect(openTestFsm({ unsafe: { [k]: true } })).rejects.toThrow(UNSAFE_ENV);
    }
  });

  it('skipSlotCheck lets a slot fire twice (what the I1 checker must catch)', async () => {
    vi.stubEnv(UNSAFE_ENV, '1');
    t = await openTestFsm({ unsafe: { skipSlotCheck: true } });
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'a', spec: everySpec(60_000, {}, T0), idempotencyKey: '' });
    const fire = { type: 'fireRuns', nowMs: T0, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 }] } as const;
    await t.one(fire);
    const token = t.nextIndex();
    await t.one({ type: 'claimRuns', nowMs: T0 + 1, items: [{ runId: `a@${T0}`, workerId: 'w', leaseDeadlineMs: T0 + 30_000 }] });
    await t.one({ type: 'finishRuns', nowMs: T0 + 2, items: [finishSuccess(`a@${T0}`, token)] });
    const again = await t.one(fire, 'fire');
    expect(again.items[0]!.created).toEqual([`a@${T0}`]);
    expect((await t.fsm.getRun(`a@${T0}`))?.state).toBe(RunState.RUN_STATE_PENDING); // runs again
  });

  it('acceptStaleTokens accepts a report from a lease that was lost', async () => {
    vi.stubEnv(UNSAFE_ENV, '1');
    t = await openTestFsm({ unsafe: { acceptStaleTokens: true } });
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'a', spec: everySpec(60_000, {}, T0), idempotencyKey: '' });
    await t.one({ type: 'fireRuns', nowMs: T0, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 }] });
    const old = t.nextIndex();
    await t.one({ type: 'claimRuns', nowMs: T0 + 1, items: [{ runId: `a@${T0}`, workerId: 'w1', leaseDeadlineMs: T0 + 30_000 }] });
    await t.one({ type: 'expireLeases', nowMs: T0 + 40_000, items: [{ runId: `a@${T0}`, fencingToken: old }] });
    await t.one({ type: 'claimRuns', nowMs: T0 + 40_001, items: [{ runId: `a@${T0}`, workerId: 'w2', leaseDeadlineMs: T0 + 70_000 }] });
    const r = await t.one({ type: 'finishRuns', nowMs: T0 + 40_002, items: [finishSuccess(`a@${T0}`, old)] }, 'runItems');
    expect(r.items[0]).toEqual({ state: RunState.RUN_STATE_SUCCEEDED });
  });
});

describe('unsafe switches belong to one state machine (and its leader services), not the process', () => {
  it('are off by default; skip-fsync is refused without the opt-in too', async () => {
    vi.stubEnv(UNSAFE_ENV, '');
    t = await openTestFsm();
    expect(t.fsm.unsafe).toEqual({ acceptStaleTokens: false, skipSlotCheck: false, forgetMissedOnPause: false, adoptWithoutTokenCheck: false, dropClaimLeaseOnFailover: false });
    expect(checkUnsafeSkipFsync(false)).toBe(false);
    expect(() => checkUnsafeSkipFsync(true)).toThrow(UNSAFE_ENV);
  });

  it('two machines in one process apply with their own switches', async () => {
    vi.stubEnv(UNSAFE_ENV, '1');
    const broken = await openTestFsm({ unsafe: { acceptStaleTokens: true } });
    const safe = await openTestFsm();
    try {
      expect(broken.fsm.unsafe).toEqual({ ...{ acceptStaleTokens: false, skipSlotCheck: false, forgetMissedOnPause: false, adoptWithoutTokenCheck: false, dropClaimLeaseOnFailover: false }, acceptStaleTokens: true });
      expect(safe.fsm.unsafe).toEqual({ acceptStaleTokens: false, skipSlotCheck: false, forgetMissedOnPause: false, adoptWithoutTokenCheck: false, dropClaimLeaseOnFailover: false });
      const outcomes: RunState[] = [];
      for (const m of [broken, safe]) {
        await m.one({ type: 'putJob', nowMs: T0, jobId: 'a', spec: everySpec(60_000, {}, T0), idempotencyKey: '' });
        await m.one({ type: 'fireRuns', nowMs: T0, misfireThresholdMs: 60_000, items: [{ jobId: 'a', slotMs: T0 }] });
        const old = m.nextIndex();
        await m.one({ type: 'claimRuns', nowMs: T0 + 1, items: [{ runId: `a@${T0}`, workerId: 'w1', leaseDeadlineMs: T0 + 30_000 }] });
        await m.one({ type: 'expireLeases', nowMs: T0 + 40_000, items: [{ runId: `a@${T0}`, fencingToken: old }] });
        await m.one({ type: 'claimRuns', nowMs: T0 + 40_001, items: [{ runId: `a@${T0}`, workerId: 'w2', leaseDeadlineMs: T0 + 70_000 }] });
        await m.one({ type: 'finishRuns', nowMs: T0 + 40_002, items: [finishSuccess(`a@${T0}`, old)] });
        outcomes.push((await m.fsm.getRun(`a@${T0}`))!.state);
      }
      // The broken machine took the stale report; the safe one kept w2's claim.
      expect(outcomes).toEqual([RunState.RUN_STATE_SUCCEEDED, RunState.RUN_STATE_RUNNING]);
    } finally {
      await broken.close();
      await safe.close();
    }
  });
});
