// Control-plane clients: a few concurrent loops doing creates, gets, updates (some conditional on
// the version last seen) and deletes on a small set of job ids, recorded as a history for the
// WGL checker. The jobs never fire (their schedule starts years from now and no worker runs
// their task type), so only clients change them. A job is represented by one label value.
//
// Outcome discipline: NOT_FOUND / ALREADY_EXISTS / FAILED_PRECONDITION are definite answers;
// every other error (UNAVAILABLE, deadline, ...) is an unknown outcome (return = Infinity): the
// write may or may not have happened.
import { status } from '@grpc/grpc-js';
import { randomUUID } from 'node:crypto';
import type { HeraldClient } from '../../src/client/herald-client.js';
import { HeraldClientError } from '../../src/client/errors.js';
import { every, jobSpec } from '../../src/client/job-spec-builders.js';
import type { Job, JobSpec } from '../../src/gen/herald/v1/job.js';
import type { DocInput, DocOperation, DocOutput } from '../../src/raft/linearizability/document-model.js';
import { Rng } from '../random.js';

export const CONTROL_TASK_TYPE = 'chaos-control-plane';

export interface ControlPlaneOptions {
  seed: number;
  clients: number;
  ids: number;
  /** Pause between a client's operations (ms). */
  thinkMs?: readonly [number, number];
  deadlineMs?: number;
  /**
   * With an SDK client that does not retry: repeat a call whose error proves it was not applied
   * (NOT_LEADER, NO_LEADER, ...), so the workload still follows leader changes; every other error
   * is an unknown outcome.
   */
  retryNotApplied?: boolean;
}

const NOT_APPLIED = new Set(['NOT_LEADER', 'NO_LEADER', 'SHUTTING_DOWN', 'NOT_READY']);

function spec(value: string): JobSpec {
  return jobSpec({
    taskType: CONTROL_TASK_TYPE,
    schedule: every('1h'),
    start: Date.now() + 10 * 365 * 24 * 3_600_000,
    labels: { v: value },
  });
}

function docOf(job: Job | undefined): string | undefined {
  return job?.spec?.labels?.v;
}

export class ControlPlaneWorkload {
  readonly history: DocOperation<string>[] = [];
  private stopping = false;
  private loops: Promise<void>[] = [];
  private readonly versions = new Map<string, number>();
  private seq = 0;
  readonly ids: string[];

  constructor(
    private readonly client: HeraldClient,
    private readonly o: ControlPlaneOptions,
  ) {
    this.ids = Array.from({ length: o.ids }, (_, i) => `cp-${o.seed}-${i}`);
  }

  get operations(): number {
    return this.history.length;
  }

  start(): void {
    const root = new Rng(this.o.seed).fork('control-plane');
    for (let c = 0; c < this.o.clients; c++) {
      const rng = root.fork(`client-${c}`);
      this.loops.push(this.loop(c, rng));
    }
  }

  /** Stops issuing; waits for operations in flight. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.loops);
  }

  /** One linearizable get of every id (the history's closing reads, after heal). */
  async finalReads(): Promise<void> {
    await Promise.all(this.ids.map((id) => this.op(-1, { kind: 'get', id })));
  }

  private async loop(clientId: number, rng: Rng): Promise<void> {
    const [lo, hi] = this.o.thinkMs ?? [20, 150];
    while (!this.stopping) {
      const id = rng.pick(this.ids);
      const r = rng.next();
      let input: DocInput<string>;
      if (r < 0.25) input = { kind: 'create', id, doc: `c${this.seq++}`, idempotencyKey: randomUUID() };
      else if (r < 0.6) input = { kind: 'get', id };
      else if (r < 0.9) {
        const v = this.versions.get(id);
        input = { kind: 'update', id, doc: `u${this.seq++}`, ...(v !== undefined && rng.chance(0.5) ? { expectedVersion: v } : {}) };
      } else input = { kind: 'delete', id };
      await this.op(clientId, input);
      await new Promise((res) => setTimeout(res, rng.int(lo, hi)));
    }
  }

  private async op(clientId: number, input: DocInput<string>): Promise<void> {
    const call = performance.now();
    const end = Date.now() + (this.o.deadlineMs ?? 4_000);
    let output: DocOutput<string> | undefined;
    for (;;) {
      const r = await this.attempt(input, Math.max(100, end - Date.now()));
      if (r.retry && this.o.retryNotApplied && Date.now() + 100 < end) {
        await new Promise((res) => setTimeout(res, 50));
        continue;
      }
      output = r.output;
      break;
    }
    this.history.push(
      output === undefined
        ? { clientId, input, call, return: Infinity }
        : { clientId, input, call, return: Math.max(call, performance.now()), output },
    );
  }

  private async attempt(input: DocInput<string>, deadlineMs: number): Promise<{ output: DocOutput<string> | undefined; retry: boolean }> {
    let output: DocOutput<string> | undefined;
    try {
      switch (input.kind) {
        case 'create': {
          const { job } = await this.client.createJob(spec(input.doc), { id: input.id, idempotencyKey: input.idempotencyKey, deadlineMs });
          output = { status: 'ok', version: job.version, doc: docOf(job) };
          break;
        }
        case 'get': {
          const job = await this.client.getJob(input.id, { deadlineMs });
          output = { status: 'ok', version: job.version, doc: docOf(job) };
          break;
        }
        case 'update': {
          const job = await this.client.updateJob(input.id, spec(input.doc as string), { deadlineMs, expectedVersion: input.expectedVersion });
          output = { status: 'ok', version: job.version };
          break;
        }
        case 'delete':
          await this.client.deleteJob(input.id, { deadlineMs });
          output = { status: 'ok' };
          break;
      }
      if (output.status === 'ok' && output.version !== undefined) this.versions.set(input.id, output.version);
    } catch (e) {
      const code = e instanceof HeraldClientError ? e.grpcCode : undefined;
      if (code === status.NOT_FOUND) output = { status: 'not_found' };
      else if (code === status.ALREADY_EXISTS) output = { status: 'already_exists' };
      else if (code === status.FAILED_PRECONDITION) output = { status: 'failed_precondition' };
      else {
        const herald = e instanceof HeraldClientError ? e.heraldCode : undefined;
        return { output: undefined, retry: herald !== undefined && NOT_APPLIED.has(herald) };
      }
    }
    return { output, retry: false };
  }
}
