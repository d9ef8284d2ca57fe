// One apply call's changes as watch events. The stored records are decoded, and each event
// encoded, once — the first time any watcher reaches the batch; every watcher then sends the same
// bytes (a length-delimited `events` field, ready to concatenate into a stream message).
import { decodeJobRecord, decodeRunRecord, type JobWrite } from '../../fsm/index.js';
import { JobEvent, RunEvent } from '../../gen/herald/v1/watch_service.js';
import type { RunState } from '../../gen/herald/v1/run.js';
import { BinaryWriter } from '@bufbuild/protobuf/wire';

export interface RunChange {
  readonly jobId: string;
  readonly taskType: string;
  readonly state: RunState;
  /** `events` field (1) of WatchRunsResponse holding this RunEvent. */
  readonly frame: Uint8Array;
}

export interface JobChange {
  readonly jobId: string;
  /** Empty for a deleted job (its spec is gone). */
  readonly taskType: string;
  readonly labels: Readonly<Record<string, string>> | undefined;
  readonly deleted: boolean;
  readonly frame: Uint8Array;
}

export class ChangeBatch {
  private rawRuns: readonly Uint8Array[] | undefined;
  private rawJobs: readonly JobWrite[] | undefined;
  private runList: RunChange[] | undefined;
  private jobList: JobChange[] | undefined;
  readonly size: number;

  constructor(
    /** The applied index the batch left the store at. */
    readonly index: number,
    /** Cumulative change count through this batch. */
    readonly endSeq: number,
    runs: readonly Uint8Array[],
    jobs: readonly JobWrite[],
  ) {
    this.rawRuns = runs;
    this.rawJobs = jobs;
    this.size = runs.length + jobs.length;
  }

  runs(): readonly RunChange[] {
    if (this.runList) return this.runList;
    const raw = this.rawRuns ?? [];
    const out: RunChange[] = [];
    for (const bytes of raw) {
      let run;
      try {
        run = decodeRunRecord(bytes).run;
      } catch {
        continue; // a record this build cannot read is not an event it can describe
      }
      const body = RunEvent.encode({ index: this.index, run }).finish();
      out.push({ jobId: run.jobId, taskType: run.taskType, state: run.state, frame: frameOf(body) });
    }
    this.rawRuns = undefined;
    return (this.runList = out);
  }

  jobs(): readonly JobChange[] {
    if (this.jobList) return this.jobList;
    const raw = this.rawJobs ?? [];
    const out: JobChange[] = [];
    for (const w of raw) {
      if (w.value === null) {
        const body = JobEvent.encode({ index: this.index, jobId: w.jobId, job: undefined, deleted: true }).finish();
        out.push({ jobId: w.jobId, taskType: '', labels: undefined, deleted: true, frame: frameOf(body) });
        continue;
      }
      let job;
      try {
        job = decodeJobRecord(w.value).job;
      } catch {
        continue;
      }
      const body = JobEvent.encode({ index: this.index, jobId: w.jobId, job, deleted: false }).finish();
      out.push({ jobId: w.jobId, taskType: job.spec?.taskType ?? '', labels: job.spec?.labels, deleted: false, frame: frameOf(body) });
    }
    this.rawJobs = undefined;
    return (this.jobList = out);
  }
}

/** Field 1, length-delimited: the bytes of one element of a response's `events`. */
function frameOf(body: Uint8Array): Uint8Array {
  const w = new BinaryWriter();
  w.uint32(10).bytes(body);
  return w.finish();
}

/** Field 2 (progress_index, varint) of a response. */
export function progressField(index: number): Uint8Array {
  const w = new BinaryWriter();
  w.uint32(16).uint64(index);
  return w.finish();
}
