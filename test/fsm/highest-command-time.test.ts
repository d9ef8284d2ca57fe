// The state machine's highest applied command time (the floor of a new leader's cluster time,
// node/leader-time-floor.ts): the maximum of every applied command's stamp, store state like the
// rest (effects, snapshot → restore, reopen), never lowered by a command stamped below it.
import { describe, expect, it } from 'vitest';
import { everySpec, freshFsmsPerTest, openTestFsm, T0 } from './fsm-test-kit.js';

const { fresh, release } = freshFsmsPerTest();
const spec = everySpec(60_000);

describe('highest command time', () => {
  it('is the largest stamp applied, whatever the order and the results', async () => {
    const t = await fresh();
    expect(t.fsm.highestCommandTimeMs).toBe(0);
    await t.apply({ type: 'putJob', nowMs: T0 + 5_000, jobId: 'j', spec, idempotencyKey: '' }, { type: 'pauseJob', nowMs: T0 + 2_000, jobId: 'j', note: '' });
    expect(t.fsm.highestCommandTimeMs).toBe(T0 + 5_000);
    // A command on a missing job (an item error) was stamped too.
    await t.one({ type: 'resumeJob', nowMs: T0 + 9_000, jobId: 'nope' });
    expect(t.fsm.highestCommandTimeMs).toBe(T0 + 9_000);
    await t.one({ type: 'resumeJob', nowMs: T0 + 1_000, jobId: 'j' });
    expect(t.fsm.highestCommandTimeMs).toBe(T0 + 9_000);
  });

  it('reaches a replica through effects, a snapshot and a reopen', async () => {
    const a = await fresh();
    const b = await fresh();
    const { effects } = await a.applyCapturing({ type: 'putJob', nowMs: T0 + 7_000, jobId: 'j', spec, idempotencyKey: '' });
    expect(await b.fsm.applyEffects(effects!)).toBe('applied');
    expect(b.fsm.highestCommandTimeMs).toBe(T0 + 7_000);
    expect(await b.fsm.stateHash()).toBe(await a.fsm.stateHash());

    await a.one({ type: 'pauseJob', nowMs: T0 + 8_000, jobId: 'j', note: '' });
    const c = await fresh();
    const snap = await a.fsm.snapshot();
    const chunks: Uint8Array[] = [];
    for await (const x of snap.chunks()) chunks.push(x);
    await snap.close();
    await c.fsm.restore({ index: snap.appliedIndex, term: 1, conf: { voters: [] } }, (async function* () {
      yield* chunks;
    })());
    expect(c.fsm.highestCommandTimeMs).toBe(T0 + 8_000);

    release(a);
    await a.fsm.close();
    const reopened = await openTestFsm({}, a.dir);
    try {
      expect(reopened.fsm.highestCommandTimeMs).toBe(T0 + 8_000);
    } finally {
      await reopened.close();
    }
  });
});
