// The cluster feature level (rolling upgrades, feature-levels.ts): setFeatureLevel only raises,
// the level is store state (snapshots, the state hash), level-1 command bytes stay as they were,
// and an entry this build cannot decode stops apply instead of becoming a 'rejected' result.
import { describe, expect, it } from 'vitest';
import { ByteWriter } from '../../src/fsm/commands/binary-codec.js';
import { FEATURE_LEVEL, FsmUnsupportedError, SUPPORTED_FEATURE_LEVEL, commandFeatureLevel } from '../../src/fsm/commands/feature-levels.js';
import { decodeCommand, encodeCommand } from '../../src/fsm/index.js';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { everySpec, freshFsmsPerTest, T0 } from './fsm-test-kit.js';

const { fresh } = freshFsmsPerTest();
const spec = everySpec(60_000);

describe('cluster feature level', () => {
  it('a fresh store is at level 1; setFeatureLevel raises, never lowers, and is a no-op at or below the level', async () => {
    const t = await fresh();
    expect(await t.fsm.featureLevel()).toBe(FEATURE_LEVEL.BASE);
    expect(await t.one({ type: 'setFeatureLevel', nowMs: T0, level: 1 })).toEqual({ type: 'empty' });
    expect(await t.fsm.featureLevel()).toBe(1);
    await t.one({ type: 'setFeatureLevel', nowMs: T0, level: 2 });
    expect(await t.fsm.featureLevel()).toBe(2);
    await t.one({ type: 'setFeatureLevel', nowMs: T0, level: 1 });
    expect(await t.fsm.featureLevel()).toBe(2);
    await t.one({ type: 'setFeatureLevel', nowMs: T0, level: 2 });
    expect(await t.fsm.featureLevel()).toBe(2);
    expect(await t.one({ type: 'setFeatureLevel', nowMs: T0, level: 0 })).toMatchObject({ type: 'rejected' });
    expect(await t.fsm.featureLevel()).toBe(2);
  });

  it('a replica writing the leader’s effects takes the raised level from them (it reads the level back only then)', async () => {
    const leader = await fresh();
    const follower = await fresh();
    const create = await leader.applyCapturing({ type: 'putJob', nowMs: T0, jobId: 'j', spec, idempotencyKey: '' });
    expect(await follower.fsm.applyEffects(create.effects!)).toBe('applied');
    expect(follower.fsm.appliedFeatureLevel).toBe(FEATURE_LEVEL.BASE);
    const raise = await leader.applyCapturing({ type: 'setFeatureLevel', nowMs: T0 + 1, level: SUPPORTED_FEATURE_LEVEL });
    expect(await follower.fsm.applyEffects(raise.effects!)).toBe('applied');
    expect(follower.fsm.appliedFeatureLevel).toBe(SUPPORTED_FEATURE_LEVEL);
    expect(leader.fsm.appliedFeatureLevel).toBe(SUPPORTED_FEATURE_LEVEL);
  });

  it('is in the state hash and survives snapshot → restore', async () => {
    const a = await fresh();
    const b = await fresh();
    await a.apply({ type: 'putJob', nowMs: T0, jobId: 'j', spec, idempotencyKey: '' }, { type: 'setFeatureLevel', nowMs: T0, level: 2 });
    await b.apply({ type: 'putJob', nowMs: T0, jobId: 'j', spec, idempotencyKey: '' }, { type: 'setFeatureLevel', nowMs: T0, level: 1 });
    expect(await a.fsm.stateHash()).not.toBe(await b.fsm.stateHash());
    const snap = await a.fsm.snapshot();
    const chunks: Uint8Array[] = [];
    for await (const c of snap.chunks()) chunks.push(c);
    await snap.close();
    await b.fsm.restore({ index: snap.appliedIndex, term: 1, conf: { voters: [] } }, (async function* () { yield* chunks; })());
    expect(await b.fsm.featureLevel()).toBe(2);
    expect(await b.fsm.stateHash()).toBe(await a.fsm.stateHash());
  });

  it('level-1 job commands keep their bytes; only a principal (level 2) adds any', () => {
    const put = encodeCommand({ type: 'putJob', nowMs: T0, jobId: 'j', spec, idempotencyKey: 'k' });
    const level1 = new ByteWriter().u8(1).u8(1).int(T0).str('j').bytes(JobSpec.encode(spec).finish()).str('k').finish();
    expect(Buffer.from(put).equals(Buffer.from(level1))).toBe(true);
    expect(commandFeatureLevel(decodeCommand(put))).toBe(1);
    const withPrincipal = encodeCommand({ type: 'putJob', nowMs: T0, jobId: 'j', spec, idempotencyKey: 'k', principal: 'alice' });
    expect(commandFeatureLevel(decodeCommand(withPrincipal))).toBe(2);
    expect(commandFeatureLevel({ type: 'setFeatureLevel', nowMs: T0, level: 2 })).toBe(2);
    expect(commandFeatureLevel({ type: 'pauseJob', nowMs: T0, jobId: 'j', note: '' })).toBe(1);
  });

  it('an entry of an unknown tag stops apply (nothing of the call written) instead of a rejected result', async () => {
    const t = await fresh();
    await t.apply({ type: 'putJob', nowMs: T0, jobId: 'before', spec, idempotencyKey: '' });
    const hash = await t.fsm.stateHash();
    const entries = [
      { term: 1, index: 2, type: 'normal' as const, data: encodeCommand({ type: 'putJob', nowMs: T0, jobId: 'same-call', spec, idempotencyKey: '' }) },
      { term: 1, index: 3, type: 'normal' as const, data: new ByteWriter().u8(1).u8(99).int(T0).finish() },
    ];
    const err = await t.fsm.apply(entries).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(FsmUnsupportedError);
    expect((err as Error).message).toContain(`entry 3 needs feature level ${SUPPORTED_FEATURE_LEVEL + 1} or higher; this node supports ${SUPPORTED_FEATURE_LEVEL}: upgrade this node`);
    expect(await t.fsm.appliedIndex()).toBe(1);
    expect(await t.fsm.stateHash()).toBe(hash);
    // Still stopped on a retry (the runtime restarts the node: the same entry halts it again).
    await expect(t.fsm.apply(entries)).rejects.toBeInstanceOf(FsmUnsupportedError);
  });

  it('a setFeatureLevel above this build, a newer format version and bytes past a known command all stop apply', async () => {
    const t = await fresh();
    const cases: [Uint8Array, string][] = [
      [encodeCommand({ type: 'setFeatureLevel', nowMs: T0, level: SUPPORTED_FEATURE_LEVEL + 1 }), `entry 1 needs feature level ${SUPPORTED_FEATURE_LEVEL + 1}; this node supports ${SUPPORTED_FEATURE_LEVEL}`],
      [new ByteWriter().u8(2).u8(1).int(T0).finish(), 'entry 1 needs feature level'],
      [new ByteWriter().u8(1).u8(5).int(T0).str('j').str('alice').u8(7).finish(), 'entry 1 needs feature level'],
    ];
    for (const [data, msg] of cases) {
      const err = await t.fsm.apply([{ term: 1, index: 1, type: 'normal', data }]).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(FsmUnsupportedError);
      expect((err as Error).message).toContain(msg);
      expect(await t.fsm.appliedIndex()).toBe(0);
    }
  });

  it('a store at a level above this build is not applied to', async () => {
    const a = await fresh();
    await a.apply({ type: 'putJob', nowMs: T0, jobId: 'j', spec, idempotencyKey: '' });
    const snap = await a.fsm.snapshot();
    const chunks: Uint8Array[] = [];
    for await (const c of snap.chunks()) chunks.push(c);
    await snap.close();
    // The snapshot of a cluster already at a level this build does not know.
    chunks.push(new ByteWriter().bytes(new TextEncoder().encode('m\0feature_level')).bytes(new TextEncoder().encode(String(SUPPORTED_FEATURE_LEVEL + 1))).finish());
    const b = await fresh();
    await b.fsm.restore({ index: snap.appliedIndex, term: 1, conf: { voters: [] } }, (async function* () { yield* chunks; })());
    await expect(b.fsm.apply([{ term: 1, index: snap.appliedIndex + 1, type: 'normal', data: encodeCommand({ type: 'resumeJob', nowMs: T0, jobId: 'j' }) }])).rejects.toThrow(/feature level/);
  });
});
