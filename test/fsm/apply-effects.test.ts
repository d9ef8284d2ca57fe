// A replica that writes the effects another one's apply computed, instead of evaluating the
// same entries: it must end in the same bytes, take effects only where they fit, and never
// half-write a malformed record. (model.property.test.ts checks the same on random sequences.)
import { describe, expect, it } from 'vitest';
import { decodeApplyEffects, EffectsRecorder } from '../../src/fsm/machine/effects-codec.js';
import { META_APPLIED } from '../../src/fsm/store/key-layout.js';
import { encodeCommand, finishSuccess, type FsmCommand } from '../../src/fsm/index.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import type { Entry } from '../../src/raft/types.js';
import { atSpec, everySpec, freshFsmsPerTest, T0, type TestFsm } from './fsm-test-kit.js';

const { fresh } = freshFsmsPerTest();

/** Log entries at explicit indexes, so two replicas can apply the very same ones. */
function entriesAt(first: number, ...cmds: FsmCommand[]): Entry[] {
  return cmds.map((c, i) => ({ term: 1, index: first + i, type: 'normal', data: encodeCommand(c) }));
}

const jobs = ['a', 'b', 'c'];
const create: FsmCommand = {
  type: 'putJobs',
  nowMs: T0,
  items: jobs.map((jobId) => ({ jobId, spec: everySpec(60_000, {}, T0 + 60_000), idempotencyKey: `k-${jobId}` })),
};
const fire = (slot: number): FsmCommand => ({ type: 'fireRuns', nowMs: slot, misfireThresholdMs: 60_000, items: jobs.map((jobId) => ({ jobId, slotMs: slot })) });
const claim = (slot: number): FsmCommand => ({ type: 'claimRuns', nowMs: slot + 5, items: jobs.map((j) => ({ runId: `${j}@${slot}`, workerId: 'w1', leaseDeadlineMs: slot + 30_000 })) });

async function sameState(a: TestFsm, b: TestFsm): Promise<void> {
  expect(await b.fsm.stateHash()).toBe(await a.fsm.stateHash());
  expect(await b.fsm.appliedIndex()).toBe(await a.fsm.appliedIndex());
  expect(await b.fsm.runCounts()).toEqual(await a.fsm.runCounts());
  expect(b.fsm.readyEntries({ limit: 1000 })).toEqual(a.fsm.readyEntries({ limit: 1000 }));
}

describe('apply effects', () => {
  it('a replica writing the leader’s effects ends byte-identical, and evaluates on from there like it', async () => {
    const leader = await fresh();
    const follower = await fresh();
    const s1 = T0 + 60_000;
    const calls: Entry[][] = [entriesAt(1, create), entriesAt(2, fire(s1), claim(s1)), entriesAt(4, { type: 'finishRuns', nowMs: s1 + 10, items: [finishSuccess(`a@${s1}`, 3)] })];
    for (const call of calls) {
      const { effects } = await leader.fsm.applyCapturing(call);
      expect(effects).toBeDefined();
      expect(await follower.fsm.applyEffects(effects!)).toBe('applied');
      await sameState(leader, follower);
    }
    expect((await follower.fsm.runCounts()).get(RunState.RUN_STATE_RUNNING)).toBe(2);
    expect((await follower.fsm.getRun(`a@${s1}`))?.state).toBe(RunState.RUN_STATE_SUCCEEDED);
    // Both evaluate the next call: same results, same bytes (counts and caches carried on right).
    const s2 = s1 + 60_000;
    const next = entriesAt(5, { type: 'finishRuns', nowMs: s1 + 20, items: [finishSuccess(`b@${s1}`, 3), finishSuccess(`c@${s1}`, 3)] }, fire(s2));
    expect(await follower.fsm.apply(next)).toEqual(await leader.fsm.apply(next));
    await sameState(leader, follower);
  });

  it('fits only the applied index it starts from: stale effects and a gap change nothing', async () => {
    const leader = await fresh();
    const follower = await fresh();
    const first = (await leader.fsm.applyCapturing(entriesAt(1, create))).effects!;
    const second = (await leader.fsm.applyCapturing(entriesAt(2, fire(T0 + 60_000)))).effects!;
    expect(await follower.fsm.applyEffects(second)).toBe('gap');
    expect(await follower.fsm.appliedIndex()).toBe(0);
    expect(await follower.fsm.getJob('a')).toBeUndefined();
    // The follower evaluated the first entry itself: the leader's effects of it are stale.
    await follower.fsm.apply(entriesAt(1, create));
    const before = await follower.fsm.stateHash();
    expect(await follower.fsm.applyEffects(first)).toBe('stale');
    expect(await follower.fsm.stateHash()).toBe(before);
    expect(await follower.fsm.applyEffects(second)).toBe('applied');
    await sameState(leader, follower);
  });

  it('a call that wrote nothing (entries already applied) has no effects', async () => {
    const leader = await fresh();
    await leader.fsm.apply(entriesAt(1, create));
    expect((await leader.fsm.applyCapturing(entriesAt(1, create))).effects).toBeUndefined();
  });

  it('refuses malformed effects without writing anything, and keeps serving', async () => {
    const leader = await fresh();
    const follower = await fresh();
    const fx = (await leader.fsm.applyCapturing(entriesAt(1, create))).effects!;
    const before = await follower.fsm.stateHash();
    const bad: Uint8Array[] = [fx.subarray(0, fx.length - 3), Uint8Array.of(9, 0, 1), new Uint8Array(0), Uint8Array.of(1, 5, 5)];
    // An op code no writer makes, in the middle of the write block.
    const badOp = Uint8Array.from(fx);
    badOp[badOp.indexOf(1, 5)] = 7;
    bad.push(badOp);
    // Records a leader could not have made: one writing the applied index itself, and one whose
    // key is not UTF-8 (no utf8 key of the store has those bytes).
    const made = (key: string): Uint8Array => {
      const r = new EffectsRecorder({ put: () => undefined, del: () => undefined });
      r.put(key, Uint8Array.of(1));
      return r.finish(0, 1, [], new Map());
    };
    bad.push(made(META_APPLIED));
    const notUtf8 = made('j\0zzzz');
    notUtf8.set([0xff, 0xfe], notUtf8.indexOf(0x7a));
    bad.push(notUtf8);
    for (const b of bad) {
      // Bytes from a peer, not the store's trouble: nothing written, the entries are evaluated.
      expect(await follower.fsm.applyEffects(b)).toBe('malformed');
      expect(await follower.fsm.stateHash()).toBe(before);
      expect(await follower.fsm.appliedIndex()).toBe(0);
    }
    expect(await follower.fsm.applyEffects(fx)).toBe('applied');
    await sameState(leader, follower);
  });

  it('drops what the record cache held of the keys it wrote, so a later evaluation reads the new bytes', async () => {
    const leader = await fresh();
    const follower = await fresh();
    const s1 = T0 + 60_000;
    // Both evaluate create + fire: the follower's cache now holds the jobs and pending runs.
    for (const call of [entriesAt(1, create), entriesAt(2, fire(s1))]) {
      await leader.fsm.apply(call);
      await follower.fsm.apply(call);
    }
    expect(follower.fsm.recordCache!.size).toBeGreaterThan(0);
    // The claim arrives as effects; then both evaluate a finish, which reads the claimed run.
    const { effects } = await leader.fsm.applyCapturing(entriesAt(3, claim(s1)));
    expect(await follower.fsm.applyEffects(effects!)).toBe('applied');
    const finish = entriesAt(4, { type: 'finishRuns', nowMs: s1 + 10, items: jobs.map((j) => finishSuccess(`${j}@${s1}`, 3)) });
    const [a, b] = [await leader.fsm.apply(finish), await follower.fsm.apply(finish)];
    expect(b).toEqual(a);
    expect((await follower.fsm.getRun(`b@${s1}`))?.state).toBe(RunState.RUN_STATE_SUCCEEDED);
    await sameState(leader, follower);
  });

  it('carries every write of the batch, the ready-index changes and the counts', async () => {
    const leader = await fresh();
    await leader.fsm.apply(entriesAt(1, { type: 'putJob', nowMs: T0, jobId: 'once', spec: atSpec(T0 + 1000), idempotencyKey: '' }));
    const fx = decodeApplyEffects((await leader.fsm.applyCapturing(entriesAt(2, { type: 'fireRuns', nowMs: T0 + 1000, misfireThresholdMs: 60_000, items: [{ jobId: 'once', slotMs: T0 + 1000 }] }))).effects!);
    expect(fx.fromApplied).toBe(1);
    expect(fx.toApplied).toBe(2);
    const keys = fx.ops.map((o) => o.key);
    expect(keys).toContain('j\0once');
    expect(keys.some((k) => k.startsWith('r\0once\0'))).toBe(true);
    expect(fx.ready.map((c) => [c.before?.runId, c.after?.runId])).toEqual([[undefined, `once@${T0 + 1000}`]]);
    expect(fx.counts).toEqual([[RunState.RUN_STATE_PENDING, 1]]);
  });
});
