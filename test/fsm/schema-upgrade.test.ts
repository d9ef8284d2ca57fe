// Schema 2 dropped two derived indexes of schema 1 (a\0 active runs by job, l\0 leases by
// deadline). A schema-1 store, or a schema-1 snapshot from an older leader, loses exactly those
// keys and otherwise holds what schema 2 would have written.
import { ClassicLevel } from 'classic-level';
import { describe, expect, it } from 'vitest';
import { SchedulerStateMachine, type FsmCommand } from '../../src/fsm/index.js';
import { ByteWriter } from '../../src/fsm/commands/binary-codec.js';
import { everySpec, freshFsmsPerTest, T0 } from './fsm-test-kit.js';

const { fresh, release } = freshFsmsPerTest();

const log: FsmCommand[] = [
  { type: 'putJob', nowMs: T0, jobId: 'j', spec: everySpec(1000, {}, T0), idempotencyKey: '' },
  { type: 'fireRuns', nowMs: T0, misfireThresholdMs: 60_000, items: [{ jobId: 'j', slotMs: T0 }] },
  { type: 'fireRuns', nowMs: T0 + 1000, misfireThresholdMs: 60_000, items: [{ jobId: 'j', slotMs: T0 + 1000 }] },
  { type: 'claimRuns', nowMs: T0 + 1001, items: [{ runId: `j@${T0}`, workerId: 'w', leaseDeadlineMs: T0 + 30_000 }] },
];
/** What schema 1 kept besides schema 2's keys for that log. */
const schema1Extra = [`a\0j\0j@${T0}`, `a\0j\0j@${T0 + 1000}`, `l\0${String(T0 + 30_000).padStart(15, '0')}\0j@${T0}`];

async function keysOf(dir: string): Promise<string[]> {
  const db = new ClassicLevel<string, Uint8Array>(dir, { keyEncoding: 'utf8', valueEncoding: 'view' });
  await db.open();
  try {
    return await db.keys().all();
  } finally {
    await db.close();
  }
}

/** Turns a store into what schema 1 would have held. */
async function downgrade(dir: string): Promise<void> {
  const db = new ClassicLevel<string, Uint8Array>(dir, { keyEncoding: 'utf8', valueEncoding: 'view' });
  await db.open();
  await db.batch([
    { type: 'put', key: 'm\0schema', value: new TextEncoder().encode('1') },
    ...schema1Extra.map((key) => ({ type: 'put' as const, key, value: new Uint8Array() })),
  ]);
  await db.close();
}

describe('schema 1 → 2', () => {
  it('writes no active-run or lease index keys; delete still finds the active runs', async () => {
    const t = await fresh();
    await t.apply(...log);
    await t.fsm.sync();
    const hash = await t.fsm.stateHash();
    await t.fsm.close();
    const keys = await keysOf(t.dir);
    expect(keys.filter((k) => k.startsWith('a\0') || k.startsWith('l\0'))).toEqual([]);
    const again = await SchedulerStateMachine.open(t.dir);
    expect(await again.stateHash()).toBe(hash);
    expect((await again.runningRuns()).map((r) => r.id)).toEqual([`j@${T0}`]);
    expect((await again.expiringLeases(T0 + 30_001, 10)).map((r) => r.id)).toEqual([`j@${T0}`]);
    await again.close();
    release(t);
    const { rm } = await import('node:fs/promises');
    await rm(t.dir, { recursive: true, force: true });
  });

  it('opening a schema-1 store drops its extra indexes and leaves the state schema 2 would hold', async () => {
    const t = await fresh();
    await t.apply(...log);
    await t.fsm.sync();
    const hash = await t.fsm.stateHash();
    await t.fsm.close();
    await downgrade(t.dir);
    expect(await keysOf(t.dir)).toEqual(expect.arrayContaining(schema1Extra));
    const again = await SchedulerStateMachine.open(t.dir);
    try {
      expect(await again.stateHash()).toBe(hash);
      const [del] = (await again.apply([{ term: 1, index: 5, type: 'normal', data: (await import('../../src/fsm/index.js')).encodeCommand({ type: 'deleteJob', nowMs: T0 + 2000, jobId: 'j', expectedVersion: 0 }) }])).map(
        (await import('../../src/fsm/index.js')).decodeResult,
      );
      expect(del).toMatchObject({ type: 'delete', cancelledRuns: 2, signals: [{ runId: `j@${T0}`, workerId: 'w' }] });
    } finally {
      await again.close();
      release(t);
      const { rm } = await import('node:fs/promises');
      await rm(t.dir, { recursive: true, force: true });
    }
  });

  it('restoring a schema-1 snapshot drops the extra indexes', async () => {
    const a = await fresh();
    await a.apply(...log);
    const hash = await a.fsm.stateHash();
    const snap = await a.fsm.snapshot();
    const parts: Uint8Array[] = [];
    for await (const c of snap.chunks()) parts.push(c);
    await snap.close();
    // The same snapshot as a schema-1 leader sends it: schema 1 and the extra index keys.
    const w = new ByteWriter();
    const enc = new TextEncoder();
    w.bytes(enc.encode('m\0schema')).bytes(enc.encode('1'));
    for (const k of schema1Extra) w.bytes(enc.encode(k)).bytes(new Uint8Array());
    const b = await fresh();
    await b.fsm.restore({ index: snap.appliedIndex, term: 1, conf: { voters: [] } }, (async function* () {
      yield* parts;
      yield w.finish();
    })());
    expect(await b.fsm.stateHash()).toBe(hash);
  });
});
