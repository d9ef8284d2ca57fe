// What apply records for watchers (store-changes.ts into the change log's arena): the same
// changes, in the same order, whether a replica evaluates the commands or writes the leader's
// effects — across arena chunks, job deletes included — and nothing of a call that never reached
// the store.
import { describe, expect, it } from 'vitest';
import { encodeCommand, finishSuccess, type FsmCommand } from '../../src/fsm/index.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import type { Entry } from '../../src/raft/types.js';
import { ChangeLog } from '../../src/server/watch/change-log.js';
import { everySpec, freshFsmsPerTest, T0 } from '../fsm/fsm-test-kit.js';

const { fresh } = freshFsmsPerTest();

function entriesAt(first: number, ...cmds: FsmCommand[]): Entry[] {
  return cmds.map((c, i) => ({ term: 1, index: first + i, type: 'normal', data: encodeCommand(c) }));
}

/** Every change in the log, decoded: [index, kind, id, state or deleted]. */
function changesOf(log: ChangeLog): unknown[] {
  const out: unknown[] = [];
  for (let no = log.startBatchNo; no < log.endBatchNo; no++) {
    const b = log.batch(no)!;
    for (const r of b.runs()) out.push([b.index, 'run', r.jobId, r.state]);
    for (const j of b.jobs()) out.push([b.index, 'job', j.jobId, j.deleted]);
  }
  return out;
}

const jobs = Array.from({ length: 40 }, (_, i) => `job-with-a-longish-id-${i}`);
const S1 = T0 + 60_000;
const calls: FsmCommand[][] = [
  [{ type: 'putJobs', nowMs: T0, items: jobs.map((jobId) => ({ jobId, spec: everySpec(60_000, {}, S1), idempotencyKey: `k-${jobId}` })) }],
  [
    { type: 'fireRuns', nowMs: S1, misfireThresholdMs: 60_000, items: jobs.map((jobId) => ({ jobId, slotMs: S1 })) },
    { type: 'claimRuns', nowMs: S1 + 5, items: jobs.map((j) => ({ runId: `${j}@${S1}`, workerId: 'w1', leaseDeadlineMs: S1 + 30_000 })) },
  ],
  [{ type: 'finishRuns', nowMs: S1 + 10, items: jobs.map((j) => finishSuccess(`${j}@${S1}`, 3)) }],
  [{ type: 'deleteJob', nowMs: S1 + 20, jobId: jobs[0]!, expectedVersion: 0 }],
];

describe('change recording', () => {
  it('records the same changes on a replica evaluating and one writing the leader’s effects, across arena chunks', async () => {
    const leader = await fresh();
    const evaluating = await fresh();
    const writing = await fresh();
    // 1 KiB chunks: most calls span several (a call's region moves to a new chunk whole).
    const logs = [leader, evaluating, writing].map((t) => {
      const log = new ChangeLog(0, { maxEvents: 100_000, arenaChunkBytes: 1024 });
      t.fsm.setChangeListener(log);
      return log;
    });
    let index = 1;
    for (const cmds of calls) {
      const entries = entriesAt(index, ...cmds);
      index += cmds.length;
      const { effects } = await leader.fsm.applyCapturing(entries);
      await evaluating.fsm.apply(entries);
      expect(await writing.fsm.applyEffects(effects!)).toBe('applied');
    }
    const seen = changesOf(logs[0]!);
    expect(changesOf(logs[1]!)).toEqual(seen);
    expect(changesOf(logs[2]!)).toEqual(seen);
    // Each run: PENDING at its fire, RUNNING at its claim (one batch: the state it left), SUCCEEDED.
    const runStates = (id: string) => seen.filter((c) => (c as unknown[])[1] === 'run' && (c as unknown[])[2] === id).map((c) => (c as unknown[])[3]);
    for (const j of jobs) expect(runStates(j)).toEqual([RunState.RUN_STATE_RUNNING, RunState.RUN_STATE_SUCCEEDED]);
    expect(seen.at(-1)).toEqual([5, 'job', jobs[0], true]);
    expect(seen.filter((c) => (c as unknown[])[1] === 'job' && (c as unknown[])[0] === 1).length).toBe(jobs.length);
    expect(logs.map((l) => l.lastIndex)).toEqual([5, 5, 5]);
  });

  it('keeps nothing of a call that failed to reach the store', async () => {
    const t = await fresh();
    const log = new ChangeLog(0, { maxEvents: 100_000, arenaChunkBytes: 256 });
    t.fsm.setChangeListener(log);
    await t.fsm.apply(entriesAt(1, ...calls[0]!));
    const before = changesOf(log);
    // A recording begun and discarded (as apply does when its batch write throws) leaves no trace,
    // and the next call's region starts where the discarded one did.
    const rec = log.begin();
    rec.run(new Uint8Array(300));
    log.discarded();
    await t.fsm.apply(entriesAt(2, ...calls[1]!));
    expect(changesOf(log).slice(0, before.length)).toEqual(before);
    expect(changesOf(log).length).toBe(before.length + 2 * jobs.length);
  });
});
