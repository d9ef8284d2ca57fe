// A failure while applying is either a rejection every replica computes alike, or this replica's
// own trouble, which must never become a result (issue 26 item 2; I5). An I/O error, a corrupt
// record or a bug makes apply throw with nothing of the call written, so the runtime stops the
// node and a restart applies again; a rejection thrown on purpose (bad input, not found, a
// conflict) rejects its entry alone, whole, on every replica.
import { rm } from 'node:fs/promises';
import { ClassicLevel } from 'classic-level';
import { describe, expect, it } from 'vitest';
import { decodeResult, encodeCommand, SchedulerStateMachine, type FsmCommand } from '../../src/fsm/index.js';
import { decodeJobRecord, encodeJobRecord } from '../../src/fsm/store/records.js';
import type { Entry } from '../../src/raft/types.js';
import { everySpec, freshFsmsPerTest, T0, type TestFsm } from './fsm-test-kit.js';

const { fresh, release } = freshFsmsPerTest();

const entriesAt = (from: number, ...cmds: FsmCommand[]): Entry[] => cmds.map((c, i) => ({ term: 1, index: from + i, type: 'normal', data: encodeCommand(c) }));

/** What a LevelDB I/O error looks like from classic-level (a ModuleError with a code). */
function ioError(what: string): Error {
  return Object.assign(new Error(`IO error: ${what}: Input/output error`), { code: 'LEVEL_IO_ERROR' });
}

type Store = {
  getMany: (...a: unknown[]) => Promise<unknown>;
  getSync: (...a: unknown[]) => unknown;
  batch: (...a: unknown[]) => { write: (o?: unknown) => Promise<void>; close: () => Promise<void> };
};
const storeOf = (fsm: SchedulerStateMachine): Store => (fsm as unknown as { store: Store }).store;

/** Makes the store's `n`-th read fail (counting from 1; a getMany or a getSync: store-reads.ts uses both), once. */
function failNthRead(fsm: SchedulerStateMachine, n: number): { calls: () => number } {
  const store = storeOf(fsm);
  const getMany = store.getMany.bind(store);
  const getSync = store.getSync.bind(store);
  let calls = 0;
  store.getMany = async (...a: unknown[]) => {
    if (++calls === n) throw ioError('read');
    return getMany(...a);
  };
  store.getSync = (...a: unknown[]) => {
    if (++calls === n) throw ioError('read');
    return getSync(...a);
  };
  return { calls: () => calls };
}

/** Batch writes fail from now on: before reaching the store, or (landed) after. */
function failWrites(fsm: SchedulerStateMachine, landed: boolean): () => void {
  const store = storeOf(fsm);
  const batch = store.batch.bind(store);
  store.batch = (...a: unknown[]) => {
    const b = batch(...a);
    const write = b.write.bind(b);
    b.write = async (o?: unknown) => {
      if (landed) await write(o);
      else await b.close();
      throw ioError('write');
    };
    return b;
  };
  return () => (store.batch = batch);
}

const creates: FsmCommand[] = [
  { type: 'putJobs', nowMs: T0, items: ['a', 'b', 'c'].map((id) => ({ jobId: id, spec: everySpec(1000, {}, T0), idempotencyKey: `k-${id}` })) },
];
const fireAndClaim: FsmCommand[] = [
  { type: 'fireRuns', nowMs: T0, misfireThresholdMs: 60_000, items: ['a', 'b', 'c'].map((jobId) => ({ jobId, slotMs: T0 })) },
  { type: 'claimRuns', nowMs: T0 + 10, items: [{ runId: `a@${T0}`, workerId: 'w', leaseDeadlineMs: T0 + 60_000 }] },
];

/** Two replicas without a record cache (every read reaches the store), after the same creates. */
async function twoReplicas(): Promise<[TestFsm, TestFsm]> {
  const a = await fresh({ recordCacheBytes: 0 });
  const b = await fresh({ recordCacheBytes: 0 });
  for (const t of [a, b]) await t.fsm.apply(entriesAt(1, ...creates));
  return [a, b];
}

describe('apply: an I/O error is never a result', () => {
  it('a read that fails while an entry applies makes apply throw, writes nothing, and a retry matches a replica that never failed', async () => {
    const [ok, faulty] = await twoReplicas();
    const before = await faulty.fsm.stateHash();
    // The fire's job reads come from inside its handler (apply-fire-runs prefetches them).
    const reads = failNthRead(faulty.fsm, 1);
    await expect(faulty.fsm.apply(entriesAt(2, ...fireAndClaim))).rejects.toMatchObject({ code: 'LEVEL_IO_ERROR' });
    expect(reads.calls()).toBe(1);
    expect(await faulty.fsm.appliedIndex()).toBe(1);
    expect(await faulty.fsm.stateHash()).toBe(before);
    expect(faulty.fsm.readyEntries({ limit: 10 })).toEqual([]);
    // The store recovered (a restart, in a real node): the same entries apply as on the healthy replica.
    const expected = await ok.fsm.apply(entriesAt(2, ...fireAndClaim));
    expect(await faulty.fsm.apply(entriesAt(2, ...fireAndClaim))).toEqual(expected);
    expect(expected.map((r) => decodeResult(r).type)).toEqual(['fire', 'claim']);
    expect(await faulty.fsm.stateHash()).toBe(await ok.fsm.stateHash());
  });

  it('applyCapturing (a leader with effects replication) throws too: no effects of a half-failed call leave it', async () => {
    const [, faulty] = await twoReplicas();
    failNthRead(faulty.fsm, 1);
    await expect(faulty.fsm.applyCapturing(entriesAt(2, ...fireAndClaim))).rejects.toMatchObject({ code: 'LEVEL_IO_ERROR' });
    expect(await faulty.fsm.appliedIndex()).toBe(1);
  });

  it('a batch write that fails before the store leaves applied index, counts and ready index as they were', async () => {
    const [ok, faulty] = await twoReplicas();
    const before = await faulty.fsm.stateHash();
    const restore = failWrites(faulty.fsm, false);
    await expect(faulty.fsm.apply(entriesAt(2, ...fireAndClaim))).rejects.toMatchObject({ code: 'LEVEL_IO_ERROR' });
    restore();
    expect(await faulty.fsm.appliedIndex()).toBe(1);
    expect(await faulty.fsm.stateHash()).toBe(before);
    expect(faulty.fsm.readyEntries({ limit: 10 })).toEqual([]);
    // Counts in memory still match the store: later applies write the same counters as the healthy replica's.
    const more = entriesAt(2, ...fireAndClaim, { type: 'finishRuns', nowMs: T0 + 20, items: [{ runId: `a@${T0}`, fencingToken: 3, succeeded: true, output: new Uint8Array(), errorType: '', errorMessage: '', retryable: false, timedOut: false }] });
    expect(await faulty.fsm.apply(more)).toEqual(await ok.fsm.apply(more));
    expect(await faulty.fsm.stateHash()).toBe(await ok.fsm.stateHash());
    expect(await faulty.fsm.runCounts()).toEqual(await ok.fsm.runCounts());
  });

  it('a batch write that reached the store but reported failure: the machine follows the store, never applying an entry twice', async () => {
    const [ok, faulty] = await twoReplicas();
    const restore = failWrites(faulty.fsm, true);
    await expect(faulty.fsm.apply(entriesAt(2, ...fireAndClaim))).rejects.toMatchObject({ code: 'LEVEL_IO_ERROR' });
    restore();
    // The store holds the call: so do the applied index and the ready index read back from it.
    expect(await faulty.fsm.appliedIndex()).toBe(3);
    await ok.fsm.apply(entriesAt(2, ...fireAndClaim));
    expect(faulty.fsm.readyEntries({ limit: 10 })).toEqual(ok.fsm.readyEntries({ limit: 10 }));
    // Offered again (the runtime retrying after a restart), the entries are already applied.
    const again = (await faulty.fsm.apply(entriesAt(2, ...fireAndClaim))).map(decodeResult);
    expect(again.map((r) => r.type)).toEqual(['empty', 'empty']);
    const finish = entriesAt(4, { type: 'finishRuns', nowMs: T0 + 20, items: [{ runId: `a@${T0}`, fencingToken: 3, succeeded: true, output: new Uint8Array(), errorType: '', errorMessage: '', retryable: false, timedOut: false }] });
    expect(await faulty.fsm.apply(finish)).toEqual(await ok.fsm.apply(finish));
    expect(await faulty.fsm.stateHash()).toBe(await ok.fsm.stateHash());
  });

  it('a follower writing effects: a store error throws (never skipped); malformed bytes are refused without writing', async () => {
    const leader = await fresh();
    const follower = await fresh();
    await leader.fsm.apply(entriesAt(1, ...creates));
    await follower.fsm.apply(entriesAt(1, ...creates));
    const { effects } = await leader.fsm.applyCapturing(entriesAt(2, ...fireAndClaim));
    const restore = failWrites(follower.fsm, false);
    await expect(follower.fsm.applyEffects(effects!)).rejects.toMatchObject({ code: 'LEVEL_IO_ERROR' });
    restore();
    expect(await follower.fsm.appliedIndex()).toBe(1);
    expect(await follower.fsm.applyEffects(effects!.subarray(0, effects!.length - 2))).toBe('malformed');
    expect(await follower.fsm.applyEffects(effects!)).toBe('applied');
    expect(await follower.fsm.stateHash()).toBe(await leader.fsm.stateHash());
  });
});

/** Rewrites a stored job record behind the machine's back (closed first; reopened after). */
async function tamperJob(t: TestFsm, jobId: string, change: (bytes: Uint8Array) => Uint8Array): Promise<SchedulerStateMachine> {
  await t.fsm.sync();
  await t.fsm.close();
  release(t);
  const db = new ClassicLevel<string, Uint8Array>(t.dir, { keyEncoding: 'utf8', valueEncoding: 'view' });
  const key = `j\0${jobId}`;
  await db.put(key, change((await db.get(key))!));
  await db.close();
  return SchedulerStateMachine.open(t.dir);
}

describe('apply: what a rejection is', () => {
  const pause = (nowMs: number): FsmCommand => ({ type: 'pauseJob', nowMs, jobId: 'good', note: 'after' });
  const fireBoth: FsmCommand = { type: 'fireRuns', nowMs: T0, misfireThresholdMs: 60_000, items: [{ jobId: 'good', slotMs: T0 }, { jobId: 'bad', slotMs: T0 }] };
  const setup = async (): Promise<TestFsm> => {
    const t = await fresh();
    await t.apply(
      { type: 'putJob', nowMs: T0, jobId: 'good', spec: everySpec(1000, {}, T0), idempotencyKey: '' },
      { type: 'putJob', nowMs: T0, jobId: 'bad', spec: everySpec(1000, {}, T0), idempotencyKey: '' },
    );
    return t;
  };

  it('a deterministic rejection thrown midway rejects its entry whole, with its own code; the neighbours apply', async () => {
    // A stored spec that apply refuses (interval 0): every replica holds it and refuses it alike.
    const t = await setup();
    const fsm = await tamperJob(t, 'bad', (bytes) => {
      const rec = decodeJobRecord(bytes);
      // A new spec object (a decoded one keeps its bytes for the next encode: spec-bytes.ts).
      rec.job.spec = everySpec(0, {}, T0);
      return encodeJobRecord(rec);
    });
    try {
      const res = (await fsm.apply(entriesAt(3, { type: 'triggerJob', nowMs: T0, jobId: 'good', idempotencyKey: '', ignoreOverlap: false }, fireBoth, pause(T0 - 1)))).map(decodeResult);
      expect(res[0]).toMatchObject({ type: 'trigger', created: true });
      // Fired 'good' first, then hit 'bad': none of the entry's changes remain.
      expect(res[1]).toMatchObject({ type: 'rejected', error: { code: 'INVALID_SPEC' } });
      expect(res[2]).toMatchObject({ type: 'job', job: { pauseNote: 'after' } });
      expect(await fsm.getRun(`good@${T0}`)).toBeUndefined();
      expect((await fsm.getJob('good'))?.lastSlotUnixMs).toBe(0);
      expect(await fsm.appliedIndex()).toBe(5);
    } finally {
      await fsm.close();
      await rm(t.dir, { recursive: true, force: true });
    }
  });

  it('a corrupt record is not a rejection: apply throws and nothing of the call is written', async () => {
    const t = await setup();
    const fsm = await tamperJob(t, 'bad', () => Uint8Array.of(1, 200, 200));
    try {
      const hashBefore = await fsm.stateHash();
      await expect(fsm.apply(entriesAt(3, { type: 'triggerJob', nowMs: T0, jobId: 'good', idempotencyKey: '', ignoreOverlap: false }, fireBoth, pause(T0 - 1)))).rejects.toThrow();
      expect(await fsm.appliedIndex()).toBe(2);
      expect(await fsm.stateHash()).toBe(hashBefore);
    } finally {
      await fsm.close();
      await rm(t.dir, { recursive: true, force: true });
    }
  });
});
