// Retention for every terminal outcome, from replicated state: the transaction keeps each job's
// count of terminal runs and its trim index entry (h\0) as runs end, whatever ended them; trims
// act on it; the entries are the same however entries are grouped into apply calls; a store from
// before the index derives it when opened. And the bounded backlog: slots beyond
// max_pending_runs are recorded MISSED "backlog full (N pending)".
import { rm } from 'node:fs/promises';
import { ClassicLevel } from 'classic-level';
import { describe, expect, it } from 'vitest';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { SchedulerStateMachine, jobIdOfTrimKey, type FsmCommand } from '../../src/fsm/index.js';
import { decodeJobRecord } from '../../src/fsm/store/records.js';
import { ByteWriter } from '../../src/fsm/commands/binary-codec.js';
import { writeJob } from '../../src/fsm/commands/job-record-codec.js';
import { TRIM_DUE_NOW } from '../../src/fsm/store/retention.js';
import { everySpec, freshFsmsPerTest, openTestFsm, T0, type TestFsm } from './fsm-test-kit.js';

const { fresh, release } = freshFsmsPerTest();
const NEVER = 999_999_999_999_999;
const DAY = 86_400_000;

function fires(jobId: string, from: number, n: number): FsmCommand[] {
  return Array.from({ length: n }, (_, k) => ({ type: 'fireRuns', nowMs: T0 + (from + k) * 1000, misfireThresholdMs: 60_000, items: [{ jobId, slotMs: T0 + (from + k) * 1000 }] }) as FsmCommand);
}

async function dueJobs(t: TestFsm, nowMs: number): Promise<string[]> {
  return (await t.fsm.trimDueKeys(nowMs, 100)).map(jobIdOfTrimKey);
}

async function terminalRunsOf(t: TestFsm, jobId: string): Promise<{ terminalRuns: number; trimDueMs: number }> {
  const { terminalRuns, trimDueMs } = decodeJobRecord((await (t.fsm as unknown as { store: ClassicLevel<string, Uint8Array> }).store.get(`j\0${jobId}`))!);
  return { terminalRuns, trimDueMs };
}

async function runStates(t: TestFsm, jobId: string): Promise<RunState[]> {
  return (await t.fsm.listRuns({ jobId, pageSize: 1000 })).items.map((r) => r.state);
}

describe('trim index', () => {
  it('MISSED runs (starting deadline, no worker) make a job due once over max_runs by the slack; a trim keeps max_runs and sets the age due time', async () => {
    const t = await fresh();
    // A 1 s job whose slots are always past their deadline at the fire: every run ends MISSED.
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'm', spec: everySpec(1000, { startingDeadlineMs: 1, retention: { maxRuns: 10, maxAgeMs: DAY } }, T0), idempotencyKey: '' });
    for (const c of fires('m', 0, 10)) await t.one({ ...c, nowMs: (c as { nowMs: number }).nowMs + 500 } as FsmCommand);
    expect(new Set(await runStates(t, 'm'))).toEqual(new Set([RunState.RUN_STATE_MISSED]));
    // Ten terminal runs, max_runs 10: due only by age (a day after the first finished).
    expect(await terminalRunsOf(t, 'm')).toEqual({ terminalRuns: 10, trimDueMs: T0 + 500 + DAY + 1 });
    expect(await dueJobs(t, T0 + 20_000)).toEqual([]);
    for (const c of fires('m', 10, 1)) await t.one({ ...c, nowMs: (c as { nowMs: number }).nowMs + 500 } as FsmCommand);
    expect(await terminalRunsOf(t, 'm')).toEqual({ terminalRuns: 11, trimDueMs: TRIM_DUE_NOW });
    expect(await dueJobs(t, T0 + 20_000)).toEqual(['m']);
    const r = await t.one({ type: 'trimHistory', nowMs: T0 + 20_000, jobIds: ['m'], maxIdempotencyKeys: 0 }, 'trim');
    expect(r.runsTrimmed).toBe(1);
    expect(await runStates(t, 'm')).toHaveLength(10);
    // Next due: the age of the oldest run kept (slot 1, finished at T0 + 1500).
    expect(await terminalRunsOf(t, 'm')).toEqual({ terminalRuns: 10, trimDueMs: T0 + 1500 + DAY + 1 });
    expect(await dueJobs(t, T0 + 20_000)).toEqual([]);
  });

  it('counts SKIPPED, CANCELLED and DEAD runs alike', async () => {
    const t = await fresh();
    await t.one({ type: 'putJob', nowMs: T0, jobId: 's', spec: everySpec(1000, { overlapPolicy: 2, retention: { maxRuns: 3 } }, T0), idempotencyKey: '' });
    // FORBID behind the first (never claimed) run: every later slot is SKIPPED.
    for (const c of fires('s', 0, 5)) await t.one(c);
    expect(await terminalRunsOf(t, 's')).toMatchObject({ terminalRuns: 4, trimDueMs: TRIM_DUE_NOW });
    await t.one({ type: 'cancelRuns', nowMs: T0 + 5000, items: [{ runId: `s@${T0}`, reason: 'not needed' }] }, 'cancel');
    expect((await terminalRunsOf(t, 's')).terminalRuns).toBe(5);
    // DEAD: a claimed run whose lease expires with no retries left.
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'd', spec: everySpec(1000, { retry: { maxAttempts: 1 }, retention: { maxRuns: 1 } }, T0), idempotencyKey: '' });
    await t.apply(...fires('d', 0, 2));
    const claim = await t.one({ type: 'claimRuns', nowMs: T0 + 1500, items: [{ runId: `d@${T0}`, workerId: 'w', leaseDeadlineMs: T0 + 2000 }, { runId: `d@${T0 + 1000}`, workerId: 'w', leaseDeadlineMs: T0 + 2000 }] }, 'claim');
    const tokens = claim.items.map((i) => i.run!.fencingToken);
    await t.one({ type: 'expireLeases', nowMs: T0 + 3000, items: [{ runId: `d@${T0}`, fencingToken: tokens[0]! }, { runId: `d@${T0 + 1000}`, fencingToken: tokens[1]! }] } as FsmCommand);
    expect(new Set(await runStates(t, 'd'))).toEqual(new Set([RunState.RUN_STATE_DEAD]));
    expect(await terminalRunsOf(t, 'd')).toEqual({ terminalRuns: 2, trimDueMs: TRIM_DUE_NOW });
    expect((await dueJobs(t, T0 + 5000)).sort()).toEqual(['d', 's']);
    const r = await t.one({ type: 'trimHistory', nowMs: T0 + 5000, jobIds: ['s', 'd'], maxIdempotencyKeys: 0 }, 'trim');
    expect(r.runsTrimmed).toBe(2 + 1);
    expect(await runStates(t, 's')).toHaveLength(3);
    expect(await runStates(t, 'd')).toHaveLength(1);
  });

  it('a paused job is trimmed by age: its entry comes due max_age after its oldest kept run finished', async () => {
    const t = await fresh();
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'p', spec: everySpec(1000, { startingDeadlineMs: 1, retention: { maxAgeMs: 60_000 } }, T0), idempotencyKey: '' });
    for (const c of fires('p', 0, 3)) await t.one({ ...c, nowMs: (c as { nowMs: number }).nowMs + 500 } as FsmCommand);
    // The pause records the slot due at its instant MISSED too (finished at T0 + 3000).
    await t.one({ type: 'pauseJob', nowMs: T0 + 3000, jobId: 'p', note: '' });
    expect(await dueJobs(t, T0 + 60_500)).toEqual([]);
    expect(await dueJobs(t, T0 + 60_501)).toEqual(['p']);
    const r = await t.one({ type: 'trimHistory', nowMs: T0 + 62_000, jobIds: ['p'], maxIdempotencyKeys: 0 }, 'trim');
    expect(r.runsTrimmed).toBe(2);
    expect(await dueJobs(t, T0 + 62_501)).toEqual(['p']);
    await t.one({ type: 'trimHistory', nowMs: T0 + 63_001, jobIds: ['p'], maxIdempotencyKeys: 0 }, 'trim');
    expect(await runStates(t, 'p')).toEqual([]);
    // No terminal run left: out of the index.
    expect(await terminalRunsOf(t, 'p')).toEqual({ terminalRuns: 0, trimDueMs: 0 });
    expect(await dueJobs(t, NEVER - 1)).toEqual([]);
  });

  it('the store is the same whether entries are applied one by one or in one call', async () => {
    const log: FsmCommand[] = [
      { type: 'putJob', nowMs: T0, jobId: 'x', spec: everySpec(1000, { overlapPolicy: 2, retention: { maxRuns: 2 } }, T0), idempotencyKey: '' },
      ...fires('x', 0, 6),
      { type: 'trimHistory', nowMs: T0 + 6000, jobIds: ['x'], maxIdempotencyKeys: 0 },
      ...fires('x', 6, 3),
      { type: 'cancelRuns', nowMs: T0 + 9000, items: [{ runId: `x@${T0}`, reason: '' }] },
    ];
    const a = await fresh();
    for (const c of log) await a.one(c);
    const b = await fresh();
    await b.apply(...log);
    expect(await b.fsm.stateHash()).toBe(await a.fsm.stateHash());
  });
});

describe('schema 3 → 4', () => {
  it('a store written before the trim index gets it derived at open, and its trims work', async () => {
    const t = await fresh();
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'old', spec: everySpec(1000, { overlapPolicy: 2, retention: { maxRuns: 2 } }, T0), idempotencyKey: '' });
    for (const c of fires('old', 0, 7)) await t.one(c); // 6 SKIPPED: within the hard bound (2 + hardRunSlack)
    await t.fsm.sync();
    const dir = t.dir;
    await t.fsm.close();
    release(t);
    // What schema 3 held: format-2 job records and no h\0 keys.
    const db = new ClassicLevel<string, Uint8Array>(dir, { keyEncoding: 'utf8', valueEncoding: 'view' });
    await db.open();
    const rec = decodeJobRecord((await db.get('j\0old'))!);
    const w = new ByteWriter().u8(2).uint(rec.manualSeq).str(rec.heldRunId);
    writeJob(w, rec.job);
    await db.put('j\0old', w.finish());
    await db.clear({ gte: 'h\0', lt: 'h\x01' });
    await db.put('m\0schema', new TextEncoder().encode('3'));
    await db.close();

    const again = await openTestFsm({}, dir);
    try {
      expect(await terminalRunsOf(again, 'old')).toEqual({ terminalRuns: 6, trimDueMs: TRIM_DUE_NOW });
      expect(await dueJobs(again, T0 + 10_000)).toEqual(['old']);
      const r = await again.one({ type: 'trimHistory', nowMs: T0 + 10_000, jobIds: ['old'], maxIdempotencyKeys: 0 }, 'trim');
      expect(r.runsTrimmed).toBe(4);
      expect(await runStates(again, 'old')).toHaveLength(3); // the PENDING one and 2 SKIPPED
      expect((await terminalRunsOf(again, 'old')).terminalRuns).toBe(2);
    } finally {
      await again.close();
    }
    expect(SchedulerStateMachine).toBeDefined();
  });

  it('a snapshot sent by a schema-3 leader gets the trim index derived on restore, and its trims work', async () => {
    const a = await fresh();
    await a.one({ type: 'putJob', nowMs: T0, jobId: 'old', spec: everySpec(1000, { overlapPolicy: 2, retention: { maxRuns: 2 } }, T0), idempotencyKey: '' });
    for (const c of fires('old', 0, 7)) await a.one(c); // as above
    await a.fsm.sync();
    const dir = a.dir;
    await a.fsm.close();
    release(a);
    // The stream a schema-3 leader sends: its whole key space, with format-2 job records, no h\0 keys.
    const db = new ClassicLevel<string, Uint8Array>(dir, { keyEncoding: 'utf8', valueEncoding: 'view' });
    await db.open();
    const appliedIndex = Number(new TextDecoder().decode((await db.get('m\0applied'))!));
    const w = new ByteWriter();
    const enc = new TextEncoder();
    let oldRecords = 0;
    for await (const [k, v] of db.iterator()) {
      if (k.startsWith('h\0')) continue;
      let value = v;
      if (k === 'm\0schema') value = enc.encode('3');
      else if (k.startsWith('j\0')) {
        const rec = decodeJobRecord(v);
        const old = new ByteWriter().u8(2).uint(rec.manualSeq).str(rec.heldRunId);
        writeJob(old, rec.job);
        value = old.finish();
        oldRecords += 1;
      }
      w.bytes(enc.encode(k)).bytes(value);
    }
    await db.close();
    await rm(dir, { recursive: true, force: true }); // released from the kit: this test removes it
    expect(oldRecords).toBe(1);
    const header = new ByteWriter().u8(1).uint(appliedIndex).finish();
    const body = w.finish();

    const b = await fresh();
    await b.fsm.restore({ index: appliedIndex, term: 1, conf: { voters: [] } }, (async function* () {
      yield header;
      yield body;
    })());
    expect(await b.fsm.appliedIndex()).toBe(appliedIndex);
    // Reopened, so the kit's next entry follows the snapshot's index.
    const bdir = b.dir;
    await b.fsm.close();
    release(b);
    const again = await openTestFsm({}, bdir);
    try {
      expect(await terminalRunsOf(again, 'old')).toEqual({ terminalRuns: 6, trimDueMs: TRIM_DUE_NOW });
      expect(await dueJobs(again, T0 + 10_000)).toEqual(['old']);
      const r = await again.one({ type: 'trimHistory', nowMs: T0 + 10_000, jobIds: ['old'], maxIdempotencyKeys: 0 }, 'trim');
      expect(r.runsTrimmed).toBe(4);
      expect(await runStates(again, 'old')).toHaveLength(3);
      expect((await terminalRunsOf(again, 'old')).terminalRuns).toBe(2);
    } finally {
      await again.close();
    }
  });
});

describe('bounded backlog', () => {
  it('slots beyond max_pending_runs are recorded MISSED "backlog full (N pending)"', async () => {
    const t = await fresh();
    await t.one({ type: 'putJob', nowMs: T0, jobId: 'b', spec: everySpec(1000, { maxPendingRuns: 3 }, T0), idempotencyKey: '' });
    const results = [];
    for (const c of fires('b', 0, 5)) results.push(await t.one(c, 'fire'));
    expect(results.map((r) => r.items[0]!.created.length)).toEqual([1, 1, 1, 0, 0]);
    expect(results.map((r) => r.items[0]!.backlogFull ?? 0)).toEqual([0, 0, 0, 1, 1]);
    const missed = await t.fsm.getRun(`b@${T0 + 3000}`);
    expect(missed).toMatchObject({ state: RunState.RUN_STATE_MISSED, reason: 'backlog full (3 pending)' });
    expect((await t.fsm.getJob('b'))?.activeRuns).toBe(3);
  });

  it('refuses max_pending_runs above the server-wide cap with a precise message', async () => {
    const t = await fresh();
    const r = await t.one({ type: 'putJob', nowMs: T0, jobId: 'c', spec: everySpec(1000, { maxPendingRuns: 10_001 }, T0), idempotencyKey: '' }, 'job');
    expect(r.error?.message).toMatch(/max_pending_runs/);
  });
});
