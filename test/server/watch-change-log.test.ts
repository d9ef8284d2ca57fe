// The node's change log and one watcher over it (src/server/watch/): filtering, batching into
// messages with a progress index, the shared event bytes, and the statuses a watcher is cut with.
import { describe, expect, it } from 'vitest';
import { encodeJobRecord, encodeRunRecord } from '../../src/fsm/store/records.js';
import { Job, JobSpec } from '../../src/gen/herald/v1/job.js';
import { WatchJobsResponse } from '../../src/gen/herald/v1/watch_service.js';
import { jobSelector } from '../../src/server/watch/watch-filters.js';
import { Run, RunState } from '../../src/gen/herald/v1/run.js';
import { WatchRunsResponse } from '../../src/gen/herald/v1/watch_service.js';
import { isHeraldError, type HeraldError } from '../../src/herald-error.js';
import { ChangeLog } from '../../src/server/watch/change-log.js';
import { runSelector } from '../../src/server/watch/watch-filters.js';
import { Watcher, type WatchSink } from '../../src/server/watch/watcher.js';

const run = (id: string, state: RunState, jobId = 'j1') => encodeRunRecord({ run: Run.fromPartial({ id, jobId, taskType: 'report', state, attempt: 1 }), held: false });

class FakeSink implements WatchSink {
  readonly messages: WatchRunsResponse[] = [];
  accept = true;
  failed: HeraldError | undefined;
  private drain: (() => void) | undefined;
  write(message: Buffer): boolean {
    this.messages.push(WatchRunsResponse.decode(message));
    return this.accept;
  }
  once(_event: 'drain', fn: () => void): void {
    this.drain = fn;
  }
  fail(err: HeraldError): void {
    this.failed = err;
  }
  release(): void {
    this.accept = true;
    const d = this.drain;
    this.drain = undefined;
    d?.();
  }
}

const LIMITS = { maxBacklog: 100, messageBytes: 1 << 20 };
const watcher = (log: ChangeLog, sink: FakeSink, from: number, filter: Partial<Parameters<typeof runSelector>[0]> = {}, limits = LIMITS) =>
  new Watcher(log, sink, runSelector({ jobId: '', taskType: '', states: [], fromIndex: from, labels: {}, ...filter }), limits, from, () => 0);

describe('change log and watcher', () => {
  it('sends matching changes after the resume index in log order, whole batches per message, with progress', () => {
    const log = new ChangeLog(3);
    log.append(5, [run('j1@1', RunState.RUN_STATE_RUNNING), run('j2@1', RunState.RUN_STATE_RUNNING, 'j2')], []);
    log.append(6, [], []); // a no-op apply still moves progress
    log.append(8, [run('j1@1', RunState.RUN_STATE_SUCCEEDED)], []);
    const sink = new FakeSink();
    watcher(log, sink, 3, { jobId: 'j1' }).start();
    expect(sink.messages[0]).toEqual({ events: [], progressIndex: 3 });
    const events = sink.messages.slice(1).flatMap((m) => m.events.map((e) => [e.index, e.run!.id, e.run!.state]));
    expect(events).toEqual([
      [5, 'j1@1', RunState.RUN_STATE_RUNNING],
      [8, 'j1@1', RunState.RUN_STATE_SUCCEEDED],
    ]);
    expect(sink.messages.length).toBe(2); // both batches in one message
    expect(sink.messages.at(-1)!.progressIndex).toBe(8);

    // Resuming from 5 skips batch 5; a state filter drops the rest.
    const s2 = new FakeSink();
    watcher(log, s2, 5, { states: [RunState.RUN_STATE_RUNNING] }).start();
    expect(s2.messages.flatMap((m) => m.events)).toEqual([]);
    // Each change is decoded and encoded once, whatever the number of watchers.
    expect(log.batch(log.startBatchNo)!.runs()).toBe(log.batch(log.startBatchNo)!.runs());
  });

  it('waits for drain when the stream refuses a write, and cuts a watcher whose backlog passes its bound', () => {
    const log = new ChangeLog(0);
    const sink = new FakeSink();
    const w = watcher(log, sink, 0, {}, { maxBacklog: 2, messageBytes: 1 });
    w.start();
    sink.accept = false;
    log.append(1, [run('j1@1', RunState.RUN_STATE_RUNNING)], []);
    w.pump();
    log.append(2, [run('j1@2', RunState.RUN_STATE_RUNNING)], []);
    w.pump();
    expect(sink.messages.flatMap((m) => m.events).length).toBe(1); // held back since the refused write
    sink.release();
    expect(sink.messages.flatMap((m) => m.events).map((e) => e.index)).toEqual([1, 2]);

    sink.accept = false;
    log.append(3, [run('j1@3', RunState.RUN_STATE_RUNNING)], []);
    w.pump();
    log.append(4, [run('j1@4', RunState.RUN_STATE_RUNNING), run('j1@5', RunState.RUN_STATE_RUNNING)], []);
    log.append(5, [run('j1@6', RunState.RUN_STATE_RUNNING)], []);
    w.pump();
    expect(isHeraldError(sink.failed, 'WATCHER_TOO_SLOW')).toBe(true);
    expect(sink.failed!.message).toBe('watcher fell behind by 3 events; resume from index 3');
    expect(w.isClosed).toBe(true);
  });

  it('drops the oldest batches past its size: the floor rises, and a watcher whose changes were dropped is cut', () => {
    const log = new ChangeLog(10, { maxEvents: 1 });
    const sink = new FakeSink();
    const w = watcher(log, sink, 10);
    w.start();
    sink.accept = false;
    for (let i = 11; i <= 13; i++) {
      log.append(i, [run(`j1@${i}`, RunState.RUN_STATE_PENDING)], []);
      w.pump();
    }
    // Batch 11 went out (the refused write still queues its message); 12 was dropped unsent.
    expect(log.floor).toBe(12);
    expect(log.batchAfter(12)).toBe(log.startBatchNo);
    sink.release();
    expect(isHeraldError(sink.failed, 'WATCHER_TOO_SLOW')).toBe(true);
    expect(sink.failed!.message).toMatch(/dropped changes .* resume from index 11/);

    // A snapshot install replaces the store: history before it is unknown.
    log.reset(50);
    expect([log.floor, log.lastIndex]).toEqual([50, 50]);
  });

  it('sends job changes matching task type and labels, and deletes to every watcher its job id filter admits', () => {
    const job = (id: string, team: string) =>
      encodeJobRecord({ job: Job.fromPartial({ id, version: 1, spec: JobSpec.fromPartial({ taskType: 'report', labels: { team } }) }), manualSeq: 0, heldRunId: '', terminalRuns: 0, trimDueMs: 0 });
    const log = new ChangeLog(0);
    log.append(2, [], [{ jobId: 'a', value: job('a', 'finance') }, { jobId: 'b', value: job('b', 'ops') }]);
    log.append(3, [], [{ jobId: 'b', value: null }]);
    const frames: Uint8Array[] = [];
    const select = jobSelector({ jobId: '', taskType: 'report', labels: { team: 'finance' }, fromIndex: 0 });
    for (let no = log.startBatchNo; no < log.endBatchNo; no++) select(log.batch(no)!, frames);
    const events = WatchJobsResponse.decode(Buffer.concat(frames)).events.map((e) => [e.index, e.jobId, e.deleted, e.job?.spec?.labels.team]);
    expect(events).toEqual([
      [2, 'a', false, 'finance'],
      [3, 'b', true, undefined],
    ]);
  });


  it('decodes a mixed batch\'s runs and jobs separately, in either order, to the same events', () => {
    const job = (id: string) =>
      encodeJobRecord({ job: Job.fromPartial({ id, version: 2, spec: JobSpec.fromPartial({ taskType: 'report' }) }), manualSeq: 0, heldRunId: '', terminalRuns: 0, trimDueMs: 0 });
    const fill = (log: ChangeLog) =>
      log.append(4, [run('a@1', RunState.RUN_STATE_RUNNING, 'a'), run('b@1', RunState.RUN_STATE_PENDING, 'b')], [{ jobId: 'a', value: job('a') }, { jobId: 'c', value: null }]);
    const runsOf = (log: ChangeLog) => WatchRunsResponse.decode(Buffer.concat(log.batch(log.startBatchNo)!.runs().map((r) => r.frame))).events.map((e) => [e.index, e.run!.id, e.run!.state]);
    const jobsOf = (log: ChangeLog) => WatchJobsResponse.decode(Buffer.concat(log.batch(log.startBatchNo)!.jobs().map((j) => j.frame))).events.map((e) => [e.index, e.jobId, e.deleted, e.job?.version]);
    const wantRuns = [
      [4, 'a@1', RunState.RUN_STATE_RUNNING],
      [4, 'b@1', RunState.RUN_STATE_PENDING],
    ];
    const wantJobs = [
      [4, 'a', false, 2],
      [4, 'c', true, undefined],
    ];
    const runsFirst = new ChangeLog(0);
    fill(runsFirst);
    expect(runsOf(runsFirst)).toEqual(wantRuns);
    expect(jobsOf(runsFirst)).toEqual(wantJobs);
    expect(runsOf(runsFirst)).toEqual(wantRuns); // decoded once, read again
    const jobsFirst = new ChangeLog(0);
    fill(jobsFirst);
    expect(jobsOf(jobsFirst)).toEqual(wantJobs);
    expect(runsOf(jobsFirst)).toEqual(wantRuns);
  });
  it('rejects a bad filter with a precise error', () => {
    expect(() => runSelector({ jobId: '', taskType: '', states: [99 as RunState], fromIndex: 0, labels: {} })).toThrow(/states: 99 is not a run state/);
    const labels = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v']));
    expect(() => runSelector({ jobId: '', taskType: '', states: [], fromIndex: 0, labels }, [])).toThrow(/labels: at most 32/);
    expect(() => runSelector({ jobId: 'bad id with spaces/', taskType: '', states: [], fromIndex: 0, labels: {} })).toThrow(/job_id/);
  });
});
