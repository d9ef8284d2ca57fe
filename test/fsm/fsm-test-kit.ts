// Shared helpers for FSM tests: a fresh store per test, a tiny log that stamps Raft indexes,
// and spec builders.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { decodeResult, encodeCommand, SchedulerStateMachine, type FsmCommand, type FsmResult, type SchedulerFsmOptions } from '../../src/fsm/index.js';
import type { Entry } from '../../src/raft/types.js';

export interface TestFsm {
  readonly fsm: SchedulerStateMachine;
  readonly dir: string;
  /** Applies commands as consecutive log entries (one apply call) and decodes the results. */
  apply(...cmds: FsmCommand[]): Promise<FsmResult[]>;
  /** apply, capturing the call's effects (SchedulerStateMachine.applyCapturing). */
  applyCapturing(...cmds: FsmCommand[]): Promise<{ results: FsmResult[]; effects: Uint8Array | undefined; entries: Entry[] }>;
  /** Applies one command and returns its decoded result. */
  one<T extends FsmResult['type']>(cmd: FsmCommand, type?: T): Promise<Extract<FsmResult, { type: T }>>;
  /** Appends a raw entry (noop/config/garbage). */
  raw(entry: Omit<Entry, 'index' | 'term'>): Promise<FsmResult>;
  nextIndex(): number;
  close(): Promise<void>;
}

/**
 * Fresh stores for the tests of one file, each closed after its test (call once, at the top of
 * the file). `release` hands one back to a test that closes it itself (to reopen its directory).
 */
export function freshFsmsPerTest(): { fresh(opts?: SchedulerFsmOptions): Promise<TestFsm>; release(t: TestFsm): void } {
  const open: TestFsm[] = [];
  afterEach(async () => {
    for (const t of open.splice(0)) await t.close();
  });
  return {
    async fresh(opts = {}) {
      const t = await openTestFsm(opts);
      open.push(t);
      return t;
    },
    release(t) {
      open.splice(open.indexOf(t), 1);
    },
  };
}

export async function openTestFsm(opts: SchedulerFsmOptions = {}, dir?: string): Promise<TestFsm> {
  const d = dir ?? (await mkdtemp(join(tmpdir(), 'herald-fsm-')));
  let fsm: SchedulerStateMachine;
  try {
    fsm = await SchedulerStateMachine.open(d, opts);
  } catch (e) {
    // A store that refuses to open (tests of refused options) leaves no directory of ours behind.
    if (dir === undefined) await rm(d, { recursive: true, force: true });
    throw e;
  }
  let index = await fsm.appliedIndex();
  const t: TestFsm = {
    fsm,
    dir: d,
    async apply(...cmds) {
      const entries: Entry[] = cmds.map((c) => ({ term: 1, index: ++index, type: 'normal', data: encodeCommand(c) }));
      return (await fsm.apply(entries)).map(decodeResult);
    },
    async applyCapturing(...cmds) {
      const entries: Entry[] = cmds.map((c) => ({ term: 1, index: ++index, type: 'normal', data: encodeCommand(c) }));
      const { results, effects } = await fsm.applyCapturing(entries);
      return { results: results.map(decodeResult), effects, entries };
    },
    async one(cmd, type) {
      const [r] = await t.apply(cmd);
      if (type && r!.type !== type) throw new Error(`expected ${type} result, got ${JSON.stringify(r)}`);
      return r as never;
    },
    async raw(e) {
      const [r] = await fsm.apply([{ ...e, term: 1, index: ++index }]);
      return decodeResult(r!);
    },
    nextIndex: () => index + 1,
    async close() {
      await fsm.close();
      await rm(d, { recursive: true, force: true });
    },
  };
  return t;
}

/** Loose partial of a JobSpec (ts-proto's DeepPartial is not exported). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type SpecInput = Record<string, any>;

export function spec(p: SpecInput = {}): JobSpec {
  return JobSpec.fromPartial({ taskType: 'demo', schedule: { kind: { $case: 'every', every: { intervalMs: 60_000 } } }, ...p } as never);
}

export function everySpec(intervalMs: number, p: SpecInput = {}, anchorUnixMs = 0): JobSpec {
  return spec({ ...p, schedule: { kind: { $case: 'every', every: { intervalMs, anchorUnixMs } } } });
}

export function atSpec(atUnixMs: number, p: SpecInput = {}): JobSpec {
  return spec({ ...p, schedule: { kind: { $case: 'at', at: { atUnixMs } } } });
}

/** A round instant far from the epoch, so every-minute anchors line up with it. */
export const T0 = Date.UTC(2030, 0, 1, 0, 0, 0);
