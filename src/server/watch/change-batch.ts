// One apply call's changes as watch events. The stored records are decoded, and each event
// encoded, once — the first time any watcher reaches the batch; every watcher then sends the same
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
  /** The batch's region of the change arena, until it is decoded. */
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

  runs(): readonly RunChange[] {
    if (!this.runList) this.decode();
    return this.runList!;
  }

  jobs(): readonly JobChange[] {
    if (!this.jobList) this.decode();
    return this.jobList!;
  }

  private decode(): void {
    const runs: RunChange[] = [];
    const jobs: JobChange[] = [];
    readRegion(this.raw!, (bytes) => {
      let run;
      try {
        run = decodeRunRecord(bytes).run;
      } catch {
        return; // a record this build cannot read is not an event it can describe
      }
      const body = RunEvent.encode({ index: this.index, run }).finish();
      runs.push({ jobId: run.jobId, taskType: run.taskType, state: run.state, frame: frameOf(body) });
    }, (jobId, value) => {
      if (value === null) {
        const body = JobEvent.encode({ index: this.index, jobId, job: undefined, deleted: true }).finish();
        jobs.push({ jobId, taskType: '', labels: undefined, deleted: true, frame: frameOf(body) });
        return;
      }
      let job;
      try {
        job = decodeJobRecord(value).job;
      } catch {
        return;
      }
      const body = JobEvent.encode({ index: this.index, jobId, job, deleted: false }).finish();
      jobs.push({ jobId, taskType: job.spec?.taskType ?? '', labels: job.spec?.labels, deleted: false, frame: frameOf(body) });
    });
    this.raw = undefined;
    this.runList = runs;
    this.jobList = jobs;
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
