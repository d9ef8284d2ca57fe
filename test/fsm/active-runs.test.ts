// Schema 4 keeps a job's active-run count in memory (active-runs.ts), not in its record: ending a
// run does not rewrite the job, every read and every overlap decision still sees the exact count,
// and the count comes back whole when the store is opened again or a snapshot is restored —
// including a schema-3 store or snapshot, whose job records carried the count.
import { rm } from 'node:fs/promises';
import { ClassicLevel } from 'classic-level';
import { describe, expect, it } from 'vitest';
import { OverlapPolicy } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { encodeCommand, finishSuccess, SchedulerStateMachine, type FsmCommand } from '../../src/fsm/index.js';
import { ByteReader, ByteWriter } from '../../src/fsm/binary-codec.js';
import { writeJob } from '../../src/fsm/job-record-codec.js';
import { decodeJobRecord } from '../../src/fsm/records.js';
import { everySpec, freshFsmsPerTest, T0, type TestFsm } from './fsm-test-kit.js';

const { fresh, release } = freshFsmsPerTest();

const fire = (nowMs: number, ...items: { jobId: string; slotMs: number }[]): FsmCommand => ({ type: 'fireRuns', nowMs, misfireThresholdMs: 600_000, items });
const claim = (nowMs: number, ...runIds: string[]): FsmCommand => ({ type: 'claimRuns', nowMs, items: runIds.map((runId) => ({ runId, workerId: 'w', leaseDeadlineMs: nowMs + 60_000 })) });

/** Jobs with 0, 1, 2 and 3 active runs (one of them FORBID, with a run still going). */
const log: FsmCommand[] = [
  { type: 'putJob', nowMs: T0, jobId: 'none', spec: everySpec(1000, {}, T0), idempotencyKey: '' },
  { type: 'putJob', nowMs: T0, jobId: 'one', spec: everySpec(1000, {}, T0), idempotencyKey: '' },
  { type: 'putJob', nowMs: T0, jobId: 'two', spec: everySpec(1000, {}, T0), idempotencyKey: '' },
  { type: 'putJob', nowMs: T0, jobId: 'forbid', spec: everySpec(1000, { overlapPolicy: OverlapPolicy.OVERLAP_POLICY_FORBID }, T0), idempotencyKey: '' },
  fire(T0, { jobId: 'none', slotMs: T0 }, { jobId: 'one', slotMs: T0 }, { jobId: 'two', slotMs: T0 }, { jobId: 'forbid', slotMs: T0 }),
  fire(T0 + 1000, { jobId: 'one', slotMs: T0 + 1000 }, { jobId: 'two', slotMs: T0 + 1000 }, { jobId: 'two', slotMs: T0 + 2000 }),
  claim(T0 + 2000, `none@${T0}`, `one@${T0}`, `two@${T0}`, `forbid@${T0}`),
];
// Claims are entry 7: their fencing token.
const ends: FsmCommand[] = [{ type: 'finishRuns', nowMs: T0 + 2100, items: [finishSuccess(`none@${T0}`, 7), finishSuccess(`one@${T0}`, 7)] }];
const expected = { none: 0, one: 1, two: 3, forbid: 1 };

async function activeOf(fsm: SchedulerStateMachine): Promise<Record<string, number>> {
  const jobs = (await fsm.listJobs({ pageSize: 100 })).items;
  const viaGet = await Promise.all(jobs.map(async (j) => [j.id, (await fsm.getJob(j.id))!.activeRuns] as const));
  const viaMany = await fsm.getJobs(jobs.map((j) => j.id));
  // The three read paths agree.
  for (const [id, n] of viaGet) expect(viaMany.get(id)!.activeRuns, id).toBe(n);
  expect(Object.fromEntries(jobs.map((j) => [j.id, j.activeRuns]))).toEqual(Object.fromEntries(viaGet));
  return Object.fromEntries(viaGet);
}

async function rawJob(dir: string, jobId: string): Promise<Uint8Array | undefined> {
  const db = new ClassicLevel<string, Uint8Array>(dir, { keyEncoding: 'utf8', valueEncoding: 'view' });
  await db.open();
  try {
    return await db.get(`j\0${jobId}`);
  } finally {
    await db.close();
  }
}

/** The store as schema 3 held it: the schema version, and every job record carrying its count. */
async function toSchema3(dir: string, counts: Record<string, number>): Promise<void> {
  const db = new ClassicLevel<string, Uint8Array>(dir, { keyEncoding: 'utf8', valueEncoding: 'view' });
  await db.open();
  try {
    const ops: { type: 'put'; key: string; value: Uint8Array }[] = [{ type: 'put', key: 'm\0schema', value: new TextEncoder().encode('3') }];
    for (const [key, value] of await db.iterator({ gte: 'j\0', lt: 'j\x01' }).all()) {
      ops.push({ type: 'put', key, value: schema3Record(value, counts[key.slice(2)]!) });
    }
    await db.batch(ops);
  } finally {
    await db.close();
  }
}

function schema3Record(bytes: Uint8Array, activeRuns: number): Uint8Array {
  const rec = decodeJobRecord(bytes);
  const w = new ByteWriter().u8(2).uint(rec.manualSeq).str(rec.heldRunId);
  writeJob(w, rec.job, activeRuns);
  return w.finish();
}

async function reopen(t: TestFsm): Promise<SchedulerStateMachine> {
  await t.fsm.sync();
  await t.fsm.close();
  release(t);
  return SchedulerStateMachine.open(t.dir);
}

describe('active runs per job (schema 4)', () => {
  it('are exact on every read, and ending a run does not rewrite its job record', async () => {
    const t = await fresh();
    expect((await t.apply(...log)).map((r) => r.type)).not.toContain('rejected');
    expect(await activeOf(t.fsm)).toEqual({ none: 1, one: 2, two: 3, forbid: 1 });
    // Keys the finish's batch writes.
    type Chained = { put: (k: string, v: Uint8Array) => unknown };
    const store = (t.fsm as unknown as { store: { batch: () => Chained; get: (k: string) => Promise<Uint8Array | undefined> } }).store;
    const batch = store.batch.bind(store);
    const written: string[] = [];
    store.batch = () => {
      const b = batch();
      const put = b.put.bind(b);
      b.put = (k, v) => (written.push(k), put(k, v));
      return b;
    };
    await t.apply(...ends);
    store.batch = batch;
    expect(written.filter((k) => k.startsWith('r\0'))).toEqual([`r\0none\0${String(T0).padStart(15, '0')}\0`, `r\0one\0${String(T0).padStart(15, '0')}\0`]);
    expect(written.filter((k) => k.startsWith('j\0'))).toEqual([]);
    expect(decodeJobRecord((await store.get('j\0one'))!).job.activeRuns).toBe(0); // the record does not keep it
    expect(await activeOf(t.fsm)).toEqual(expected);
  });

  it('come back whole when the store is opened again, and keep deciding overlap', async () => {
    const t = await fresh();
    await t.apply(...log, ...ends);
    const hash = await t.fsm.stateHash();
    const again = await reopen(t);
    try {
      expect(await again.stateHash()).toBe(hash);
      expect(await activeOf(again)).toEqual(expected);
      // forbid's run is still RUNNING: its next slot is skipped, as before the restart.
      const index = (await again.appliedIndex()) + 1;
      await again.apply([{ term: 1, index, type: 'normal', data: encodeCommand(fire(T0 + 1000, { jobId: 'forbid', slotMs: T0 + 1000 })) }]);
      expect((await again.getRun(`forbid@${T0 + 1000}`))?.state).toBe(RunState.RUN_STATE_SKIPPED);
      expect(await activeOf(again)).toEqual(expected);
    } finally {
      await again.close();
      await rm(t.dir, { recursive: true, force: true });
    }
  });

  it('a restored snapshot replaces them with the snapshot\'s', async () => {
    const a = await fresh();
    await a.apply(...log, ...ends);
    const b = await fresh();
    // b has active runs of its own, of a job the snapshot also holds and one it does not.
    await b.apply(log[0]!, { type: 'putJob', nowMs: T0, jobId: 'other', spec: everySpec(1000, {}, T0), idempotencyKey: '' }, fire(T0, { jobId: 'none', slotMs: T0 }, { jobId: 'other', slotMs: T0 }));
    expect(await activeOf(b.fsm)).toEqual({ none: 1, other: 1 });
    const snap = await a.fsm.snapshot();
    try {
      await b.fsm.restore({ index: snap.appliedIndex, term: 1, conf: { voters: [] } }, snap.chunks());
    } finally {
      await snap.close();
    }
    expect(await b.fsm.stateHash()).toBe(await a.fsm.stateHash());
    expect(await activeOf(b.fsm)).toEqual(expected);
  });

  it('opening a schema-3 store rewrites its job records without the counts and keeps the counts exact', async () => {
    const t = await fresh();
    await t.apply(...log, ...ends);
    const hash = await t.fsm.stateHash();
    await t.fsm.sync();
    await t.fsm.close();
    release(t);
    await toSchema3(t.dir, expected);
    expect(decodeJobRecord((await rawJob(t.dir, 'two'))!).job.activeRuns).toBe(3);
    const again = await SchedulerStateMachine.open(t.dir);
    try {
      expect(await again.stateHash()).toBe(hash);
      expect(await activeOf(again)).toEqual(expected);
    } finally {
      await again.close();
      await rm(t.dir, { recursive: true, force: true });
    }
  });

  it('restoring a schema-3 snapshot rewrites its job records without the counts', async () => {
    const a = await fresh();
    await a.apply(...log, ...ends);
    const snap = await a.fsm.snapshot();
    const parts: Uint8Array[] = [];
    for await (const c of snap.chunks()) parts.push(c);
    await snap.close();
    // The same snapshot as a schema-3 leader sends it: job records with their counts, schema 3.
    const enc = new TextEncoder();
    const dec = new TextDecoder();
    const w = new ByteWriter();
    const r = new ByteReader(Uint8Array.from(parts.slice(1).flatMap((p) => [...p])));
    while (!r.done()) {
      const key = dec.decode(r.bytes());
      let value = r.bytes();
      if (key.startsWith('j\0')) value = schema3Record(value, expected[key.slice(2) as keyof typeof expected]);
      if (key === 'm\0schema') value = enc.encode('3');
      w.bytes(enc.encode(key)).bytes(value);
    }
    const b = await fresh();
    await b.fsm.restore({ index: snap.appliedIndex, term: 1, conf: { voters: [] } }, (async function* () {
      yield parts[0]!;
      yield w.finish();
    })());
    expect(await b.fsm.stateHash()).toBe(await a.fsm.stateHash());
    expect(await activeOf(b.fsm)).toEqual(expected);
  });
});
