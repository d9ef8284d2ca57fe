// Index values (feature level 5): classic-level 3 leaks a native allocation for every empty value
// it is given, and index keys were all written with one (several per run, per created job, on every
// replica: the leader's native memory grew ~1.5 MB a minute in the retention bench). From level 5
// every key without a value is stored with one byte; below it apply writes exactly what it did.
// A call never spans a change of level, so the bytes do not depend on how entries are grouped.
import type { ClassicLevel } from 'classic-level';
import { describe, expect, it } from 'vitest';
import { finishSuccess, type FsmCommand } from '../../src/fsm/index.js';
import { FEATURE_LEVEL } from '../../src/fsm/commands/feature-levels.js';
import { everySpec, freshFsmsPerTest, T0, type TestFsm } from './fsm-test-kit.js';

const { fresh } = freshFsmsPerTest();
const MIN = 60_000;

function store(t: TestFsm): ClassicLevel<string, Uint8Array> {
  return (t.fsm as unknown as { store: ClassicLevel<string, Uint8Array> }).store;
}

/** Every stored key whose value is empty, and the values of the index keys (due "d\0", state "s\0"). */
async function scan(t: TestFsm): Promise<{ empty: string[]; indexValues: Set<string>; indexKeys: number }> {
  const empty: string[] = [];
  const indexValues = new Set<string>();
  let indexKeys = 0;
  for await (const [k, v] of store(t).iterator()) {
    if (v.length === 0) empty.push(k);
    if (k.startsWith('d\0') || k.startsWith('s\0')) {
      indexKeys++;
      indexValues.add(Buffer.from(v).toString('hex'));
    }
  }
  return { empty, indexValues, indexKeys };
}

/** Jobs created with idempotency keys (expiry index keys), fired, claimed, run and trimmed. */
async function workload(t: TestFsm, prefix: string, nowMs: number): Promise<void> {
  const ids = [0, 1, 2].map((i) => `${prefix}-${i}`);
  await t.one({ type: 'putJobs', nowMs, items: ids.map((jobId) => ({ jobId, spec: everySpec(MIN, { retention: { maxRuns: 1 } }, T0), idempotencyKey: `idem-${jobId}` })) }, 'jobs');
  for (const k of [1, 2]) {
    const slotMs = T0 + k * MIN;
    await t.one({ type: 'fireRuns', nowMs: Math.max(nowMs, slotMs), misfireThresholdMs: 10 * MIN, items: ids.map((jobId) => ({ jobId, slotMs })) }, 'fire');
    for (const jobId of ids) {
      const runId = `${jobId}@${slotMs}`;
      const claim = await t.one({ type: 'claimRuns', nowMs: slotMs + 10, items: [{ runId, workerId: 'w', leaseDeadlineMs: slotMs + 30_000 }] }, 'claim');
      expect(claim.items[0]!.error).toBeUndefined();
      await t.one({ type: 'finishRuns', nowMs: slotMs + 20, items: [finishSuccess(runId, claim.items[0]!.run!.fencingToken)] }, 'runItems');
    }
  }
  await t.one({ type: 'trimHistory', nowMs: T0 + 3 * MIN, jobIds: ids, maxIdempotencyKeys: 0 }, 'trim');
}

describe('index values (feature level 5)', () => {
  it('from level 5 no stored value is empty; the index keys hold one byte', async () => {
    const t = await fresh();
    await t.one({ type: 'setFeatureLevel', nowMs: T0, level: FEATURE_LEVEL.INDEX_VALUES });
    await workload(t, 'j', T0);
    const s = await scan(t);
    expect(s.indexKeys).toBeGreaterThan(3);
    expect(s.empty).toEqual([]);
    expect([...s.indexValues]).toEqual(['00']);
  });

  it('below level 5 apply writes the empty values it always did (an older replica writes the same bytes)', async () => {
    const t = await fresh();
    await t.one({ type: 'setFeatureLevel', nowMs: T0, level: FEATURE_LEVEL.TRIM_HORIZON });
    await workload(t, 'j', T0);
    const s = await scan(t);
    expect([...s.indexValues]).toEqual(['']);
    expect(s.empty.length).toBeGreaterThanOrEqual(s.indexKeys);
  });

  it('the level raised between two creates in one apply call: the same bytes as applied one by one', async () => {
    const cmds: FsmCommand[] = [
      { type: 'setFeatureLevel', nowMs: T0, level: FEATURE_LEVEL.TRIM_HORIZON },
      { type: 'putJob', nowMs: T0, jobId: 'before', spec: everySpec(MIN, {}, T0), idempotencyKey: 'k-before' },
      { type: 'setFeatureLevel', nowMs: T0 + 1, level: FEATURE_LEVEL.INDEX_VALUES },
      { type: 'putJob', nowMs: T0 + 2, jobId: 'after', spec: everySpec(MIN, {}, T0), idempotencyKey: 'k-after' },
    ];
    const together = await fresh();
    const results = await together.apply(...cmds);
    expect(results.map((r) => r.type)).toEqual(['empty', 'job', 'empty', 'job']);
    const oneByOne = await fresh();
    for (const c of cmds) await oneByOne.apply(c);
    expect(await together.fsm.stateHash()).toBe(await oneByOne.fsm.stateHash());
    const dueValue = async (t: TestFsm, jobId: string) => {
      for await (const [k, v] of store(t).iterator({ gte: 'd\0', lt: 'd\x01' })) if (k.endsWith(`\0${jobId}`)) return Buffer.from(v).toString('hex');
      return undefined;
    };
    expect(await dueValue(together, 'before')).toBe('');
    expect(await dueValue(together, 'after')).toBe('00');
  });

  it('a call that raises the level midway captures no effects: a follower evaluates it and holds the same state', async () => {
    const leader = await fresh();
    const follower = await fresh();
    const cmds: FsmCommand[] = [
      { type: 'setFeatureLevel', nowMs: T0, level: FEATURE_LEVEL.TRIM_HORIZON },
      { type: 'putJob', nowMs: T0, jobId: 'a', spec: everySpec(MIN, {}, T0), idempotencyKey: '' },
      { type: 'setFeatureLevel', nowMs: T0 + 1, level: FEATURE_LEVEL.INDEX_VALUES },
      { type: 'putJob', nowMs: T0 + 2, jobId: 'b', spec: everySpec(MIN, {}, T0), idempotencyKey: '' },
    ];
    const captured = await leader.applyCapturing(...cmds);
    expect(captured.effects).toBeUndefined();
    await follower.fsm.apply(captured.entries);
    expect(await follower.fsm.stateHash()).toBe(await leader.fsm.stateHash());
    // A call inside one level captures effects as before, and they reproduce the leader's bytes.
    const next = await leader.applyCapturing({ type: 'putJob', nowMs: T0 + 3, jobId: 'c', spec: everySpec(MIN, {}, T0), idempotencyKey: 'k-c' });
    expect(next.effects).toBeDefined();
    expect(await follower.fsm.applyEffects(next.effects!)).toBe('applied');
    expect(await follower.fsm.stateHash()).toBe(await leader.fsm.stateHash());
    expect((await scan(follower)).empty.filter((k) => k.includes('k-c') || k.endsWith('\0c'))).toEqual([]);
  });
});
