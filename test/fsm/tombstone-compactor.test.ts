// Index ranges full of deleted keys are compacted in the background (store/tombstone-compactor.ts):
// which range a delete slows down, one compaction at a time once a range reached its threshold,
// and on a real store: the compaction drops the range's tombstones and changes nothing
// a replica could see (the same state hash as a replica that never compacted).
import { describe, expect, it } from 'vitest';
import { ClassicLevel } from 'classic-level';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TombstoneCompactor, tombstoneRangeOf } from '../../src/fsm/store/tombstone-compactor.js';
import { finishSuccess } from '../../src/fsm/index.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import { atSpec, freshFsmsPerTest, T0 } from './fsm-test-kit.js';

const { fresh } = freshFsmsPerTest();
const enc = new TextEncoder();

describe('tombstoneRangeOf', () => {
  it('names the index range a deleted key slows down: one state of s\\0, the due and trim indexes; nothing else', () => {
    expect(tombstoneRangeOf('s\x0003\x00job\x00000000000000001\x00')).toBe('s\x0003\x00');
    expect(tombstoneRangeOf(enc.encode('s\x0011\x00job\x00000000000000001\x00'))).toBe('s\x0011\x00');
    expect(tombstoneRangeOf('d\x00000000000000001\x00job')).toBe('d\x00');
    expect(tombstoneRangeOf(enc.encode('h\x00000000000000001\x00job'))).toBe('h\x00');
    for (const k of ['r\x00job\x00000000000000001\x00', 'j\x00job', 'i\x00c\x00key', 'sx', 's', '', 'd', 'dx']) expect(tombstoneRangeOf(k), JSON.stringify(k)).toBeUndefined();
  });
});

describe('TombstoneCompactor', () => {
  it('compacts a range once it gathered the threshold, the busiest first, one at a time, and forgets counts on reset', async () => {
    const calls: [string, string][] = [];
    let release: () => void = () => undefined;
    const store = {
      compactRange: (a: string, b: string) => {
        calls.push([a, b]);
        return new Promise<void>((r) => (release = r));
      },
    };
    const c = new TombstoneCompactor(store, 3);
    for (let i = 0; i < 2; i++) c.noteDelete(`d\0${i}`);
    c.maybeCompact();
    expect(calls).toEqual([]);
    for (let i = 0; i < 4; i++) c.noteDelete(`s\x0005\x00r${i}`);
    c.noteDelete(`d\x009`);
    c.maybeCompact();
    expect(calls).toEqual([['s\x0005\x00', 's\x0005\x01']]);
    c.maybeCompact(); // one at a time
    expect(calls).toHaveLength(1);
    release();
    await new Promise((r) => setTimeout(r, 0));
    // The next range that is due goes when the first one finished.
    expect(calls).toEqual([
      ['s\x0005\x00', 's\x0005\x01'],
      ['d\x00', 'd\x01'],
    ]);
    release();
    await new Promise((r) => setTimeout(r, 0));
    expect(c.compactions).toBe(2);
    for (let i = 0; i < 3; i++) c.noteDelete(`h\x00${i}`);
    c.reset();
    c.maybeCompact();
    expect(calls).toHaveLength(2);
    await c.close();
  });

  it('on LevelDB: the range of 200,000 deleted keys holds no bytes on disk after the compaction', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'herald-tombstones-'));
    const db = new ClassicLevel<string, Uint8Array>(dir, { keyEncoding: 'utf8', valueEncoding: 'view', writeBufferSize: 1 << 20 });
    try {
      await db.open();
      const key = (i: number) => `s\x0005\x00job-${String(i).padStart(7, '0')}\x00`;
      const c = new TombstoneCompactor(db, 200_000);
      for (let b = 0; b < 200_000; b += 20_000) {
        const put = db.batch();
        for (let i = b; i < b + 20_000; i++) put.put(key(i), new Uint8Array());
        await put.write();
      }
      for (let b = 0; b < 200_000; b += 20_000) {
        const del = db.batch();
        for (let i = b; i < b + 20_000; i++) {
          del.del(key(i));
          c.noteDelete(key(i));
        }
        await del.write();
      }
      // The keys and their tombstones sit in tables (1 MiB memtables flushed): a read of the range walks them all.
      const onDisk = () => db.approximateSize('s\x0005\x00', 's\x0005\x01');
      expect(await onDisk()).toBeGreaterThan(1 << 20);
      c.maybeCompact();
      await c.close();
      expect(c.compactions).toBe(1);
      expect(await onDisk()).toBe(0);
      expect(await db.keys({ gte: 's\x0005\x00', lt: 's\x0005\x01' }).all()).toEqual([]);
    } finally {
      await db.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the state machine compacts its index ranges as runs move through them', () => {
  it('with a low threshold: compactions happen, and the state matches a replica that never compacted', async () => {
    const compacting = await fresh({ tombstoneThreshold: 50 });
    const never = await fresh({ tombstoneThreshold: Number.MAX_SAFE_INTEGER });
    const jobs = Array.from({ length: 200 }, (_, i) => `job-${i}`);
    const slot = T0 + 1000;
    const steps = [
      { type: 'putJobs' as const, nowMs: T0, items: jobs.map((jobId) => ({ jobId, spec: atSpec(slot), idempotencyKey: '' })) },
      { type: 'fireRuns' as const, nowMs: slot, misfireThresholdMs: 60_000, items: jobs.map((jobId) => ({ jobId, slotMs: slot })) },
      { type: 'claimRuns' as const, nowMs: slot + 1, items: jobs.map((j) => ({ runId: `${j}@${slot}`, workerId: 'w', leaseDeadlineMs: slot + 30_000 })) },
    ];
    for (const cmd of steps) {
      await compacting.one(cmd);
      await never.one(cmd);
    }
    const token = compacting.nextIndex() - 1;
    const finish = { type: 'finishRuns' as const, nowMs: slot + 10, items: jobs.map((j) => finishSuccess(`${j}@${slot}`, token)) };
    await compacting.one(finish);
    await never.one(finish);
    // PENDING, RUNNING and the due index each lost 200 keys: over the threshold of 50.
    const machine = compacting.fsm as unknown as { tombstones: TombstoneCompactor };
    await machine.tombstones.close();
    expect(machine.tombstones.compactions).toBeGreaterThanOrEqual(3);
    expect((never.fsm as unknown as { tombstones: TombstoneCompactor }).tombstones.compactions).toBe(0);
    expect((await compacting.fsm.getRun(`job-7@${slot}`))?.state).toBe(RunState.RUN_STATE_SUCCEEDED);
    expect(await compacting.fsm.stateHash()).toBe(await never.fsm.stateHash());
  });
});
