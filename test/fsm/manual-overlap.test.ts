// Manual and backfill runs follow the job's overlap policy unless the command says ignoreOverlap
// (issue 30, item 5).
import { afterEach, describe, expect, it } from 'vitest';
import { MisfirePolicy, OverlapPolicy } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { decodeCommand, encodeCommand } from '../../src/fsm/index.js';
import { ByteWriter } from '../../src/fsm/commands/binary-codec.js';
import { decodeSignals, encodeResult } from '../../src/fsm/commands/result-codec.js';
import { everySpec, openTestFsm, T0, type SpecInput, type TestFsm } from './fsm-test-kit.js';

let t: TestFsm;
afterEach(async () => t?.close());

const MIN = 60_000;
const create = (jobId: string, p: SpecInput = {}, nowMs = T0) =>
  t.one({ type: 'putJob', nowMs, jobId, spec: everySpec(MIN, p, T0), idempotencyKey: '' }, 'job');
const fire = (jobId: string, slotMs: number, nowMs = slotMs) =>
  t.one({ type: 'fireRuns', nowMs, misfireThresholdMs: MIN, items: [{ jobId, slotMs }] }, 'fire');
const trigger = (jobId: string, nowMs: number, ignoreOverlap = false, idempotencyKey = '') =>
  t.one({ type: 'triggerJob', nowMs, jobId, idempotencyKey, ignoreOverlap }, 'trigger');
const claim = async (runId: string, nowMs: number) => {
  const token = t.nextIndex();
  const r = await t.one({ type: 'claimRuns', nowMs, items: [{ runId, workerId: 'w', leaseDeadlineMs: nowMs + 30_000 }] }, 'claim');
  expect(r.items[0]!.error).toBeUndefined();
  return token;
};
const succeed = (runId: string, fencingToken: number, nowMs: number) =>
  t.one({ type: 'finishRuns', nowMs, items: [{ runId, fencingToken, succeeded: true, output: new Uint8Array(), errorType: '', errorMessage: '', retryable: false, timedOut: false }] }, 'runItems');
const ready = async (nowMs: number) => (await t.fsm.readyRuns({ limit: 100, nowMs })).map((r) => r.id);

const FORBID = { overlapPolicy: OverlapPolicy.OVERLAP_POLICY_FORBID };
const BUFFER_ONE = { overlapPolicy: OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE };

describe('triggerJob and the overlap policy', () => {
  it('FORBID: refused with INVALID_STATE naming the active run while one is active; ignore_overlap runs anyway', async () => {
    t = await openTestFsm();
    await create('f', FORBID);
    await fire('f', T0);
    const refused = await trigger('f', T0 + 5, false, 'k');
    expect(refused.created).toBe(false);
    expect(refused.error).toMatchObject({ code: 'INVALID_STATE', reason: 'OVERLAP' });
    expect(refused.error?.message).toContain(`run f@${T0} is still active`);
    expect(refused.error?.message).toContain('ignore_overlap');
    // Nothing was recorded: the same key may run once the active run is gone.
    expect((await t.fsm.listRuns({ jobId: 'f' })).items.map((r) => r.id)).toEqual([`f@${T0}`]);
    const forced = await trigger('f', T0 + 6, true);
    expect(forced.run).toMatchObject({ id: `f@${T0 + 6}~m0`, state: RunState.RUN_STATE_PENDING });
    expect(await ready(T0 + 6)).toContain(`f@${T0 + 6}~m0`);
    // Once both runs ended, the keyed trigger runs.
    await succeed(`f@${T0}`, await claim(`f@${T0}`, T0 + 7), T0 + 8);
    await succeed(`f@${T0 + 6}~m0`, await claim(`f@${T0 + 6}~m0`, T0 + 9), T0 + 10);
    expect((await trigger('f', T0 + 11, false, 'k')).run?.id).toBe(`f@${T0 + 11}~m1`);
  });

  it('FORBID on an idle job runs at once; a scheduled slot behind the manual run is SKIPPED', async () => {
    t = await openTestFsm();
    await create('f', FORBID);
    expect((await trigger('f', T0 - 10)).run?.id).toBe(`f@${T0 - 10}~m0`);
    await fire('f', T0);
    expect((await t.fsm.getRun(`f@${T0}`))?.state).toBe(RunState.RUN_STATE_SKIPPED);
  });

  it('BUFFER_ONE: the trigger waits behind the active run, a second one is refused naming both', async () => {
    t = await openTestFsm();
    await create('b', BUFFER_ONE);
    await fire('b', T0);
    const token = await claim(`b@${T0}`, T0 + 1);
    const buffered = await trigger('b', T0 + 2);
    expect(buffered.created).toBe(true);
    expect(await ready(T0 + 3)).toEqual([]);
    const second = await trigger('b', T0 + 3);
    expect(second.error?.code).toBe('INVALID_STATE');
    expect(second.error?.message).toContain(`run b@${T0 + 2}~m0 is already buffered behind run b@${T0}`);
    // A slot while one run is buffered is SKIPPED, as before.
    await fire('b', T0 + MIN);
    expect((await t.fsm.getRun(`b@${T0 + MIN}`))?.state).toBe(RunState.RUN_STATE_SKIPPED);
    await succeed(`b@${T0}`, token, T0 + MIN + 1);
    expect(await ready(T0 + MIN + 2)).toEqual([`b@${T0 + 2}~m0`]);
  });

  it('REPLACE: the trigger cancels the active run and its result carries the signal for the worker', async () => {
    t = await openTestFsm();
    await create('r', { overlapPolicy: OverlapPolicy.OVERLAP_POLICY_REPLACE });
    await fire('r', T0);
    const token = await claim(`r@${T0}`, T0 + 1);
    const r = await trigger('r', T0 + 2);
    expect(r.created).toBe(true);
    expect(r.signals).toEqual([{ runId: `r@${T0}`, workerId: 'w', fencingToken: token }]);
    expect(decodeSignals(encodeResult(r))).toEqual(r.signals);
    const old = await t.fsm.getRun(`r@${T0}`);
    expect(old?.state).toBe(RunState.RUN_STATE_CANCELLED);
    expect(old?.reason).toContain(`replaced by run r@${T0 + 2}~m0`);
    expect((await t.fsm.getJob('r'))?.activeRuns).toBe(1);
  });

  it('ALLOW: triggers run alongside the active run', async () => {
    t = await openTestFsm();
    await create('a');
    await fire('a', T0);
    expect((await trigger('a', T0 + 1)).created).toBe(true);
    expect((await ready(T0 + 2)).length).toBe(2);
  });
});

describe('backfillJob and the overlap policy', () => {
  async function backfilled(p: SpecInput, ignoreOverlap = false): Promise<string[]> {
    await t.one({ type: 'putJob', nowMs: T0 - 10 * MIN, jobId: 'j', spec: everySpec(MIN, { misfirePolicy: MisfirePolicy.MISFIRE_POLICY_SKIP, ...p }, T0 - 10 * MIN), idempotencyKey: '' }, 'job');
    await t.one({ type: 'fireRuns', nowMs: T0, misfireThresholdMs: MIN, items: [{ jobId: 'j', slotMs: T0 }] }, 'fire');
    // T0-10..T0-2 misfired (MISSED by SKIP), T0-1 is active; T0 is SKIPPED (FORBID) or buffered (BUFFER_ONE).
    const r = await t.one({ type: 'backfillJob', nowMs: T0 + 5, jobId: 'j', fromMs: T0 - 5 * MIN, toMs: T0 - 2 * MIN, maxRuns: 100, ignoreOverlap }, 'backfill');
    expect(r.error).toBeUndefined();
    return [...r.runIds];
  }

  const FIRST = `j@${T0 - MIN}`;

  /** Runs whatever is dispatchable, one at a time, checking no two are ever dispatchable together. */
  async function drain(from: number, rounds: number): Promise<string[]> {
    let now = from;
    const order: string[] = [];
    for (let i = 0; i < rounds; i++) {
      const r = await ready(now);
      expect(r.length).toBe(1);
      order.push(r[0]!);
      await succeed(r[0]!, await claim(r[0]!, now + 1), now + 2);
      now += 10;
    }
    expect(await ready(now)).toEqual([]);
    return order;
  }

  for (const [name, p, buffered] of [['FORBID', FORBID, []], ['BUFFER_ONE', BUFFER_ONE, [`j@${T0}`]]] as const) {
    it(`${name}: backfill runs queue behind the active run and each other, oldest slot first`, async () => {
      t = await openTestFsm();
      const ids = await backfilled(p);
      expect(ids).toEqual([-5, -4, -3].map((k) => `j@${T0 + k * MIN}~b`));
      expect(await ready(T0 + 6)).toEqual([FIRST]);
      // The active run, the slot BUFFER_ONE buffered, then the queue: one at a time.
      expect(await drain(T0 + 10, 4 + buffered.length)).toEqual([FIRST, ...buffered, ...ids]);
      expect((await t.fsm.getJob('j'))?.activeRuns).toBe(0);
    });
  }

  it('a queued backfill run cancelled before its turn leaves the queue; the rest still run one by one', async () => {
    t = await openTestFsm();
    const ids = await backfilled(FORBID);
    await t.one({ type: 'cancelRuns', nowMs: T0 + 6, items: [{ runId: ids[0]!, reason: 'not this one' }] }, 'cancel');
    expect(await drain(T0 + 10, 3)).toEqual([FIRST, ids[1], ids[2]]);
    expect((await t.fsm.getJob('j'))?.activeRuns).toBe(0);
  });

  it('ignore_overlap starts the backfill runs together', async () => {
    t = await openTestFsm();
    const ids = await backfilled(FORBID, true);
    expect((await ready(T0 + 6)).sort()).toEqual([FIRST, ...ids].sort());
  });

  it('a trigger or backfill entry written before the overlap rule decodes as ignoring it (replay keeps its result)', () => {
    const old = new ByteWriter().u8(1).u8(6).int(T0).str('j').str('k').finish();
    expect(decodeCommand(old)).toEqual({ type: 'triggerJob', nowMs: T0, jobId: 'j', idempotencyKey: 'k', ignoreOverlap: true });
    const oldBackfill = new ByteWriter().u8(1).u8(7).int(T0).str('j').int(1).int(2).uint(3).finish();
    expect(decodeCommand(oldBackfill)).toMatchObject({ type: 'backfillJob', ignoreOverlap: true });
    const now = encodeCommand({ type: 'triggerJob', nowMs: T0, jobId: 'j', idempotencyKey: 'k', ignoreOverlap: false });
    expect(decodeCommand(now)).toMatchObject({ ignoreOverlap: false });
  });
});
