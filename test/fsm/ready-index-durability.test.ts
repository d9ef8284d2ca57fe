// Schema 3 keeps the ready index in memory (ready-index.ts) instead of as q\0 / t\0 keys. It is
// derived from the run records, so it must come back whole whenever the store is opened or
// restored — a run left out would wait forever (a lost run) — and a schema-2 store or snapshot,
// which still carries the old keys, must end up as the same state without them.
import { rm } from 'node:fs/promises';
import { ClassicLevel } from 'classic-level';
import { describe, expect, it } from 'vitest';
import { OverlapPolicy } from '../../src/gen/herald/v1/job.js';
import { finishFailure, SchedulerStateMachine, type FsmCommand } from '../../src/fsm/index.js';
import { ByteWriter } from '../../src/fsm/commands/binary-codec.js';
import { everySpec, freshFsmsPerTest, T0 } from './fsm-test-kit.js';

const { fresh, release } = freshFsmsPerTest();

const fire = (nowMs: number, ...items: { jobId: string; slotMs: number }[]): FsmCommand => ({ type: 'fireRuns', nowMs, misfireThresholdMs: 600_000, items });

/**
 * Ready runs of every kind: pending at several priorities and task types, one FAILED awaiting its
 * retry, one held behind an active run (BUFFER_ONE: not ready), one running and one finished (not ready).
 */
const log: FsmCommand[] = [
  { type: 'putJob', nowMs: T0, jobId: 'a', spec: everySpec(1000, {}, T0), idempotencyKey: '' },
  { type: 'putJob', nowMs: T0, jobId: 'hi', spec: everySpec(1000, { priority: 9, taskType: 'email' }, T0), idempotencyKey: '' },
  { type: 'putJob', nowMs: T0, jobId: 'buf', spec: everySpec(1000, { overlapPolicy: OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE }, T0), idempotencyKey: '' },
  { type: 'putJob', nowMs: T0, jobId: 'retry', spec: everySpec(1000, { retry: { maxAttempts: 5, initialBackoffMs: 60_000 } }, T0), idempotencyKey: '' },
  fire(T0, { jobId: 'a', slotMs: T0 }, { jobId: 'hi', slotMs: T0 }, { jobId: 'buf', slotMs: T0 }, { jobId: 'retry', slotMs: T0 }),
  fire(T0 + 1000, { jobId: 'a', slotMs: T0 + 1000 }, { jobId: 'buf', slotMs: T0 + 1000 }, { jobId: 'a', slotMs: T0 + 2000 }),
  {
    type: 'claimRuns',
    nowMs: T0 + 1500,
    items: [
      { runId: `buf@${T0}`, workerId: 'w', leaseDeadlineMs: T0 + 60_000 },
      { runId: `retry@${T0}`, workerId: 'w', leaseDeadlineMs: T0 + 60_000 },
      { runId: `a@${T0}`, workerId: 'w', leaseDeadlineMs: T0 + 60_000 },
    ],
  },
  { type: 'finishRuns', nowMs: T0 + 1600, items: [finishFailure(`retry@${T0}`, 7, { type: 'E', message: 'again', retryable: true })] },
];

const allReady = (fsm: SchedulerStateMachine) => fsm.readyEntries({ limit: 1000 });

async function keysOf(dir: string): Promise<string[]> {
  const db = new ClassicLevel<string, Uint8Array>(dir, { keyEncoding: 'utf8', valueEncoding: 'view' });
  await db.open();
  try {
    return await db.keys().all();
  } finally {
    await db.close();
  }
}

/** The q\0 / t\0 keys schema 2 held for the ready runs of `fsm`, with schema 2 recorded. */
function schema2Extra(ready: ReturnType<typeof allReady>): string[] {
  const pad = (n: number, w: number) => String(n).padStart(w, '0');
  return ready.flatMap((e) => [
    `q\0${pad(1000 - e.priority, 4)}\0${pad(e.notBeforeMs, 15)}\0${e.runId}`,
    `t\0${e.taskType}\0${pad(1000 - e.priority, 4)}\0${pad(e.notBeforeMs, 15)}\0${e.runId}`,
  ]);
}

describe('ready index (schema 3)', () => {
  it('holds exactly the dispatchable runs, writes no ready keys, and is rebuilt whole when the store is opened again', async () => {
    const t = await fresh();
    const results = await t.apply(...log);
    expect(results.map((r) => r.type)).not.toContain('rejected');
    const before = allReady(t.fsm);
    // hi@T0 (priority 9) first; a@T0+1000 and a@T0+2000 pending (the latter not due yet at
    // T0+1600); retry@T0 failed, due after its backoff; buf@T0+1000 held, buf@T0 and a@T0
    // running: not ready.
    expect(before.map((e) => e.runId)).toEqual([`hi@${T0}`, `a@${T0 + 1000}`, `a@${T0 + 2000}`, `retry@${T0}`]);
    expect(before[3]!.notBeforeMs).toBeGreaterThan(T0 + 2000);
    expect((await t.fsm.readyRuns({ limit: 10, nowMs: T0 + 1600 })).map((r) => r.id)).toEqual([`hi@${T0}`, `a@${T0 + 1000}`]);
    await t.fsm.sync();
    await t.fsm.close();
    expect((await keysOf(t.dir)).filter((k) => k.startsWith('q\0') || k.startsWith('t\0'))).toEqual([]);
    const again = await SchedulerStateMachine.open(t.dir);
    try {
      expect(allReady(again)).toEqual(before);
      // And it keeps following apply after the rebuild: the held run is released when buf@T0 ends.
      const [fin] = await again.apply([
        { term: 1, index: log.length + 1, type: 'normal', data: (await import('../../src/fsm/index.js')).encodeCommand({ type: 'finishRuns', nowMs: T0 + 1700, items: [{ runId: `buf@${T0}`, fencingToken: 7, succeeded: true, output: new Uint8Array(), errorType: '', errorMessage: '', retryable: false, timedOut: false }] }) },
      ]);
      expect(fin).toBeDefined();
      expect(allReady(again).map((e) => e.runId)).toEqual([`hi@${T0}`, `a@${T0 + 1000}`, `buf@${T0 + 1000}`, `a@${T0 + 2000}`, `retry@${T0}`]);
    } finally {
      await again.close();
      release(t);
      await rm(t.dir, { recursive: true, force: true });
    }
  });

  it('a restored snapshot replaces the ready index with the snapshot\'s', async () => {
    const a = await fresh();
    await a.apply(...log);
    const b = await fresh();
    // b has ready runs of its own that the snapshot does not hold.
    await b.apply(log[0]!, fire(T0, { jobId: 'a', slotMs: T0 }), { type: 'putJob', nowMs: T0, jobId: 'other', spec: everySpec(1000, {}, T0), idempotencyKey: '' }, fire(T0, { jobId: 'other', slotMs: T0 }));
    expect(allReady(b.fsm).map((e) => e.runId)).toEqual([`a@${T0}`, `other@${T0}`]);
    const snap = await a.fsm.snapshot();
    try {
      await b.fsm.restore({ index: snap.appliedIndex, term: 1, conf: { voters: [] } }, snap.chunks());
    } finally {
      await snap.close();
    }
    expect(await b.fsm.stateHash()).toBe(await a.fsm.stateHash());
    expect(allReady(b.fsm)).toEqual(allReady(a.fsm));
  });

  it('opening a schema-2 store drops its ready keys and leaves the state and ready runs schema 3 would hold', async () => {
    const t = await fresh();
    await t.apply(...log);
    const ready = allReady(t.fsm);
    await t.fsm.sync();
    const hash = await t.fsm.stateHash();
    await t.fsm.close();
    const extra = schema2Extra(ready);
    const db = new ClassicLevel<string, Uint8Array>(t.dir, { keyEncoding: 'utf8', valueEncoding: 'view' });
    await db.open();
    await db.batch([
      { type: 'put', key: 'm\0schema', value: new TextEncoder().encode('2') },
      ...extra.map((key) => ({ type: 'put' as const, key, value: new Uint8Array() })),
    ]);
    await db.close();
    expect(await keysOf(t.dir)).toEqual(expect.arrayContaining(extra));
    const again = await SchedulerStateMachine.open(t.dir);
    try {
      expect(await again.stateHash()).toBe(hash);
      expect(allReady(again)).toEqual(ready);
    } finally {
      await again.close();
      release(t);
      await rm(t.dir, { recursive: true, force: true });
    }
  });

  it('restoring a schema-2 snapshot drops its ready keys', async () => {
    const a = await fresh();
    await a.apply(...log);
    const snap = await a.fsm.snapshot();
    const parts: Uint8Array[] = [];
    for await (const c of snap.chunks()) parts.push(c);
    await snap.close();
    const w = new ByteWriter();
    const enc = new TextEncoder();
    w.bytes(enc.encode('m\0schema')).bytes(enc.encode('2'));
    for (const k of schema2Extra(allReady(a.fsm))) w.bytes(enc.encode(k)).bytes(new Uint8Array());
    const b = await fresh();
    await b.fsm.restore({ index: snap.appliedIndex, term: 1, conf: { voters: [] } }, (async function* () {
      yield* parts;
      yield w.finish();
    })());
    expect(await b.fsm.stateHash()).toBe(await a.fsm.stateHash());
    expect(allReady(b.fsm)).toEqual(allReady(a.fsm));
  });

  it('after a batch write that failed with an unknown outcome, the index is read again from the store', async () => {
    const t = await fresh();
    await t.apply(log[0]!);
    // The write reaches the store, then reports failure (the outcome a caller cannot know).
    type Chained = { write: (o?: unknown) => Promise<void> };
    const store = (t.fsm as unknown as { store: { batch: () => Chained } }).store;
    const batch = store.batch.bind(store);
    store.batch = () => {
      const b = batch();
      const write = b.write.bind(b);
      b.write = async (o?: unknown) => {
        await write(o);
        throw new Error('disk said no');
      };
      return b;
    };
    await expect(t.apply(fire(T0, { jobId: 'a', slotMs: T0 }))).rejects.toThrow('disk said no');
    store.batch = batch;
    expect(allReady(t.fsm).map((e) => e.runId)).toEqual([`a@${T0}`]);
  });
});
