// One apply call's changes as watch events. The stored records are decoded, and each event
// encoded, once — the first time a watcher that needs that kind of change reaches the batch; every watcher then sends the same
// bytes (a length-delimited `events` field, ready to concatenate into a stream message).
import { decodeJobRecord, decodeRunRecord } from '../../fsm/index.js';
import { readRegion } from './change-arena.js';
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
  /** The batch's region of the change arena, until both kinds of change are decoded. */
  private raw: Buffer | undefined;
  private runList: RunChange[] | undefined;
  private jobList: JobChange[] | undefined;

  constructor(
    /** The applied index the batch left the store at. */
    readonly index: number,
    /** Cumulative change count through this batch. */
    readonly endSeq: number,
    /** Its changes as recorded (change-arena.ts). */
    region: Buffer,
    /** The number of changes in it. */
    readonly size: number,
  ) {
    this.raw = region;
  }

  // Runs and jobs decode separately: run watchers without a labels filter never need the job
  // records (a herd rewrites a job per run, and its spec is the costliest record to decode).
  runs(): readonly RunChange[] {
    if (!this.runList) {
      const runs: RunChange[] = [];
      readRegion(this.raw!, (bytes) => {
        let run;
        try {
          run = decodeRunRecord(bytes).run;
        } catch {
          return; // a record this build cannot read is not an event it can describe
        }
        runs.push({ jobId: run.jobId, taskType: run.taskType, state: run.state, frame: RunEvent.encode({ index: this.index, run }, frameWriter()).join().finish() });
      });
      this.runList = runs;
      this.release();
    }
    return this.runList;
  }

  jobs(): readonly JobChange[] {
    if (!this.jobList) {
      const jobs: JobChange[] = [];
      readRegion(this.raw!, undefined, (jobId, value) => {
        if (value === null) {
          const frame = JobEvent.encode({ index: this.index, jobId, job: undefined, deleted: true }, frameWriter()).join().finish();
          jobs.push({ jobId, taskType: '', labels: undefined, deleted: true, frame });
          return;
        }
        let job;
        try {
          job = decodeJobRecord(value).job;
        } catch {
          return;
        }
        const frame = JobEvent.encode({ index: this.index, jobId, job, deleted: false }, frameWriter()).join().finish();
        jobs.push({ jobId, taskType: job.spec?.taskType ?? '', labels: job.spec?.labels, deleted: false, frame });
      });
      this.jobList = jobs;
      this.release();
    }
    return this.jobList;
  }

  private release(): void {
    if (this.runList && this.jobList) this.raw = undefined;
  }
}

/** A writer positioned inside field 1 (length-delimited) of a response: `join()` closes the event's frame. */
function frameWriter(): BinaryWriter {
  return new BinaryWriter().uint32(10).fork();
}

/** Field 2 (progress_index, varint) of a response. */
export function progressField(index: number): Uint8Array {
  const w = new BinaryWriter();
  w.uint32(16).uint64(index);
  return w.finish();
}
