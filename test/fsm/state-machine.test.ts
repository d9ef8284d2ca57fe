// The StateMachine contract: applied index, atomic batches, determinism, snapshot/restore.
import { describe, expect, it } from 'vitest';
import { encodeCommand, SchedulerStateMachine, type FsmCommand } from '../../src/fsm/index.js';
import { ByteWriter } from '../../src/fsm/commands/binary-codec.js';
import type { Entry } from '../../src/raft/types.js';
import { everySpec, freshFsmsPerTest, T0 } from './fsm-test-kit.js';

const { fresh, release } = freshFsmsPerTest();

/** A small but varied log: jobs, fires, claims, finishes, cancels, trims. */
function sampleLog(): FsmCommand[] {
  const cmds: FsmCommand[] = [];
  for (let j = 0; j < 20; j++) {
    cmds.push({ type: 'putJob', nowMs: T0, jobId: `j${j}`, spec: everySpec(1000 * (1 + (j % 3)), { jitterMs: j * 10, overlapPolicy: j % 5, priority: j - 10 }, T0), idempotencyKey: `k${j}` });
  }
  for (let k = 0; k < 10; k++) {
    cmds.push({ type: 'fireRuns', nowMs: T0 + k * 1000, misfireThresholdMs: 60_000, items: Array.from({ length: 20 }, (_, j) => ({ jobId: `j${j}`, slotMs: T0 + k * 1000 })) });
  }
  cmds.push({ type: 'claimRuns', nowMs: T0 + 20_000, items: Array.from({ length: 10 }, (_, j) => ({ runId: `j${j}@${T0}`, workerId: 'w', leaseDeadlineMs: T0 + 50_000 })) });
  cmds.push({ type: 'cancelRuns', nowMs: T0 + 20_001, items: [{ runId: `j1@${T0}`, reason: 'x' }] });
  cmds.push({ type: 'trimHistory', nowMs: T0 + 20_002, jobIds: ['j0', 'j3'], maxIdempotencyKeys: 10 });
  cmds.push({ type: 'pauseJob', nowMs: T0 + 20_003, jobId: 'j4', note: 'n' });
  cmds.push({ type: 'deleteJob', nowMs: T0 + 20_004, jobId: 'j5', expectedVersion: 0 });
  return cmds;
}

describe('SchedulerStateMachine contract', () => {
  it('no-op and config entries give empty results and advance the applied index', async () => {
    const t = await fresh();
    const before = await t.fsm.stateHash();
    const res = await t.fsm.apply([
      { term: 1, index: 1, type: 'normal', data: new Uint8Array() },
      { term: 1, index: 2, type: 'config', data: Uint8Array.of(1, 2, 3) },
    ]);
    expect(res.map((r) => r.length)).toEqual([0, 0]);
    expect(await t.fsm.appliedIndex()).toBe(2);
    expect(await t.fsm.stateHash()).not.toBe(before); // the applied index is state too
  });

  it('persists the applied index with the changes and skips replayed entries after reopen', async () => {
    const t = await fresh();
    await t.apply({ type: 'putJob', nowMs: T0, jobId: 'a', spec: everySpec(1000), idempotencyKey: '' });
    await t.fsm.sync();
    await t.fsm.close();
    const again = await SchedulerStateMachine.open(t.dir);
    try {
      expect(await again.appliedIndex()).toBe(1);
      const replay = await again.apply([{ term: 1, index: 1, type: 'normal', data: encodeCommand({ type: 'deleteJob', nowMs: T0, jobId: 'a', expectedVersion: 0 }) }]);
      expect(replay[0]!.length).toBe(0);
      expect(await again.getJob('a')).toBeDefined();
    } finally {
      await again.close();
      release(t);
      const { rm } = await import('node:fs/promises');
      await rm(t.dir, { recursive: true, force: true });
    }
  });

  it('bad commands are rejected per entry and the other entries apply; an obsolete tag is rejected alike', async () => {
    const t = await fresh();
    const entries: Entry[] = [
      { term: 1, index: 1, type: 'normal', data: new ByteWriter().u8(1).u8(17).int(T0).finish() },
      { term: 1, index: 2, type: 'normal', data: encodeCommand({ type: 'putJob', nowMs: T0, jobId: 'ok', spec: everySpec(1000), idempotencyKey: '' }) },
      { term: 1, index: 3, type: 'normal', data: new ByteWriter().u8(1).u8(1).int(-5).str('x').bytes(new Uint8Array()).str('').finish() },
    ];
    const { decodeResult } = await import('../../src/fsm/index.js');
    const res = (await t.fsm.apply(entries)).map(decodeResult);
    expect(res[0]).toMatchObject({ type: 'rejected', error: { code: 'INVALID_ARGUMENT' } });
    expect(res[1]).toMatchObject({ type: 'job', created: true });
    expect(res[2]).toMatchObject({ type: 'rejected' });
    expect(await t.fsm.appliedIndex()).toBe(3);
    expect((await t.fsm.listJobs()).items.map((j) => j.id)).toEqual(['ok']);
  });

  it('determinism: two FSMs applying the same log in different batchings hold identical state (I5)', async () => {
    const a = await fresh();
    const b = await fresh();
    const log = sampleLog();
    await a.apply(...log);
    for (const c of log) await b.apply(c);
    expect(await a.fsm.appliedIndex()).toBe(log.length);
    expect(await a.fsm.stateHash()).toBe(await b.fsm.stateHash());
  });

  it('snapshot → restore reproduces the exact state, in small chunks, while apply goes on', async () => {
    const a = await fresh({ snapshotChunkBytes: 512 });
    await a.apply(...sampleLog());
    const hash = await a.fsm.stateHash();
    const snap = await a.fsm.snapshot();
    // Changes after the snapshot is taken do not leak into it.
    await a.apply({ type: 'putJob', nowMs: T0, jobId: 'later', spec: everySpec(1000), idempotencyKey: '' });
    const chunks: Uint8Array[] = [];
    for await (const c of snap.chunks()) chunks.push(c);
    await snap.close();
    expect(chunks.length).toBeGreaterThan(5);
    const b = await fresh();
    await b.apply({ type: 'putJob', nowMs: T0, jobId: 'to-be-replaced', spec: everySpec(1000), idempotencyKey: '' });
    await b.fsm.restore({ index: snap.appliedIndex, term: 1, conf: { voters: [] } }, (async function* () { yield* chunks; })());
    expect(await b.fsm.appliedIndex()).toBe(snap.appliedIndex);
    expect(await b.fsm.stateHash()).toBe(hash);
    expect(await b.fsm.getJob('to-be-replaced')).toBeUndefined();
  });

  it('restores from the same bytes however the transport re-chunks them', async () => {
    const a = await fresh({ snapshotChunkBytes: 700 });
    await a.apply(...sampleLog());
    const hash = await a.fsm.stateHash();
    const snap = await a.fsm.snapshot();
    const parts: Uint8Array[] = [];
    for await (const c of snap.chunks()) parts.push(c);
    await snap.close();
    const all = Buffer.concat(parts);
    // Boundaries that cut through the header, varints and records: 1, 2, 3, 5, 8, 13, ... bytes.
    for (const sizes of [[1], [1, 2, 3, 5, 8, 13, 21], [4096], [all.length]]) {
      const pieces: Uint8Array[] = [];
      for (let pos = 0, i = 0; pos < all.length; i++) {
        const n = sizes[i % sizes.length]!;
        pieces.push(all.subarray(pos, pos + n));
        pos += n;
      }
      const b = await fresh();
      await b.fsm.restore({ index: snap.appliedIndex, term: 1, conf: { voters: [] } }, (async function* () { yield* pieces; })());
      expect(await b.fsm.stateHash()).toBe(hash);
    }
    // A stream that stops inside a record is refused, not half-restored silently.
    const c = await fresh();
    await expect(
      c.fsm.restore({ index: snap.appliedIndex, term: 1, conf: { voters: [] } }, (async function* () { yield all.subarray(0, all.length - 3); })()),
    ).rejects.toThrow(/ends inside a record/);
  });

  it('a restore cut short leaves an empty store on reopen, not a mix', async () => {
    const a = await fresh({ snapshotChunkBytes: 256 });
    await a.apply(...sampleLog());
    const snap = await a.fsm.snapshot();
    const chunks: Uint8Array[] = [];
    for await (const c of snap.chunks()) chunks.push(c);
    await snap.close();
    expect(chunks.length).toBeGreaterThan(3);
    const b = await fresh();
    await b.apply({ type: 'putJob', nowMs: T0, jobId: 'old-state', spec: everySpec(1000), idempotencyKey: '' });
    await expect(
      b.fsm.restore({ index: snap.appliedIndex, term: 1, conf: { voters: [] } }, (async function* () {
        yield* chunks.slice(0, 3); // header + two data chunks: a partial state reaches the store
        throw new Error('connection lost');
      })()),
    ).rejects.toThrow('connection lost');
    expect(await b.fsm.appliedIndex()).toBe(0);
    await b.fsm.close();
    const reopened = await SchedulerStateMachine.open(b.dir);
    expect(await reopened.appliedIndex()).toBe(0);
    expect((await reopened.listJobs()).items).toEqual([]);
    await reopened.close();
    release(b);
    const { rm } = await import('node:fs/promises');
    await rm(b.dir, { recursive: true, force: true });
  });
});
