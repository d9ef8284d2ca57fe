import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KvStateMachine } from '../../src/raft/kv/kv-state-machine.js';
import { decodeKvResult, encodeKvCommand, type KvCommand } from '../../src/raft/kv/kv-command.js';
import type { Entry } from '../../src/raft/types.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'herald-kv-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

let idx = 0;
const e = (c: KvCommand): Entry => ({ index: ++idx, term: 1, type: 'normal', data: encodeKvCommand(c) });
const v = (s: string) => Buffer.from(s);

describe('KvStateMachine', () => {
  it('applies put/get/cas/delete in order within one batch and records the applied index', async () => {
    idx = 0;
    const sm = await KvStateMachine.open(join(dir, 'a'));
    const res = (
      await sm.apply([
        e({ op: 'put', key: 'a', value: v('1') }),
        e({ op: 'get', key: 'a' }),
        e({ op: 'cas', key: 'a', expected: v('2'), value: v('3') }),
        e({ op: 'cas', key: 'a', expected: v('1'), value: v('3') }),
        e({ op: 'get', key: 'a' }),
        e({ op: 'delete', key: 'a' }),
        e({ op: 'get', key: 'a' }),
        { index: ++idx, term: 1, type: 'normal', data: new Uint8Array(0) },
      ])
    ).map((r) => (r.length ? decodeKvResult(r) : null));
    expect(res[1]).toEqual({ ok: true, value: v('1') });
    expect(res[2]!.ok).toBe(false);
    expect(res[3]!.ok).toBe(true);
    expect(Buffer.from(res[4]!.value!).toString()).toBe('3');
    expect(res[5]!.ok).toBe(true);
    expect(res[6]!.ok).toBe(false);
    expect(res[7]).toBeNull();
    expect(await sm.appliedIndex()).toBe(8);
    await sm.close();
    const again = await KvStateMachine.open(join(dir, 'a'));
    expect(await again.appliedIndex()).toBe(8);
    await again.close();
  });

  it('snapshots a point in time and restores it elsewhere with the same hash', async () => {
    idx = 0;
    const a = await KvStateMachine.open(join(dir, 'a'));
    const big = Buffer.alloc(3000, 7);
    await a.apply(Array.from({ length: 300 }, (_, i) => e({ op: 'put', key: `k${i}`, value: big })));
    const src = await a.snapshot();
    const hashAtSnap = await a.stateHash();
    // Applies after the snapshot was opened must not leak into it.
    await a.apply([e({ op: 'put', key: 'late', value: v('x') })]);
    expect(src.appliedIndex).toBe(300);
    const b = await KvStateMachine.open(join(dir, 'b'));
    await b.apply([{ index: 1, term: 1, type: 'normal', data: encodeKvCommand({ op: 'put', key: 'junk', value: v('j') }) }]);
    await b.restore({ index: 300, term: 1, conf: { voters: ['n1'] } }, src.chunks());
    await src.close();
    expect(await b.stateHash()).toBe(hashAtSnap);
    expect(await b.appliedIndex()).toBe(300);
    expect(await b.getLocal('junk')).toBeUndefined();
    expect(await a.stateHash()).not.toBe(hashAtSnap);
    await a.close();
    await b.close();
  });

  it('a malformed command is a no-op result on every replica; a read that fails is no result at all: apply throws', async () => {
    idx = 0;
    const sm = await KvStateMachine.open(join(dir, 'a'));
    await sm.apply([e({ op: 'put', key: 'a', value: v('1') })]);
    await sm.sync();
    const [bad] = await sm.apply([{ index: ++idx, term: 1, type: 'normal', data: Uint8Array.of(9) }]);
    expect(decodeKvResult(bad!)).toEqual({ ok: false, value: null });
    // The store fails the cas's read (an I/O error): answering "no match" would make this
    // replica's result and state differ from the others'.
    const db = (sm as unknown as { db: { get: (...a: unknown[]) => Promise<unknown> } }).db;
    const get = db.get.bind(db);
    db.get = async () => {
      throw Object.assign(new Error('IO error: read'), { code: 'LEVEL_IO_ERROR' });
    };
    await expect(sm.apply([e({ op: 'cas', key: 'a', expected: v('1'), value: v('2') })])).rejects.toMatchObject({ code: 'LEVEL_IO_ERROR' });
    expect(await sm.appliedIndex()).toBe(2);
    db.get = get;
    await sm.close();
  });
});
