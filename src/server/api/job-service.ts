import { stampedAtAppend } from '../node/stamped-proposal.js';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { JobServiceClient, type JobServiceServer } from '../../gen/herald/v1/job_service.js';
import {
  ReadConsistency,
  type CreateJobRequest,
  type CreateJobResponse,
  type CreateJobsRequest,
  type CreateJobsResponse,
  type CreateJobsResult,
  type GetRunResponse,
  type ListRunsResponse,
  type UpcomingFire,
} from '../../gen/herald/v1/job_service.js';
import { JobState, type JobSpec } from '../../gen/herald/v1/job.js';
import { RunState, type Run } from '../../gen/herald/v1/run.js';
import {
  DEFAULT_BACKFILL_MAX_RUNS,
  MAX_BACKFILL_RUNS,
  decodeResult,
  encodeCommand,
  requireRunId,
  validateId,
  validateIdPrefix,
  validateUserJobId,
  validateIdempotencyKey,
  validateJobSpec,
  validateNote,
  type FsmCommand,
  type FsmResult,
  type ItemError,
  type SchedulerStateMachine,
} from '../../fsm/index.js';
import { firstSlotFrom, MAX_UPCOMING_FIRES, ScheduleCaches, upcomingFires } from '../../fsm/schedule/index.js';
import { HeraldError } from '../../herald-error.js';
import type { HeraldNode } from '../node/herald-node.js';
import { grpcStatusOf } from '../grpc/grpc-status-map.js';
import { LeaderRoute } from './leader-route.js';
import { recordedName } from '../auth/principal.js';
import { atFeatureLevel } from '../../fsm/commands/feature-levels.js';
import { withResolvedFold } from './resolved-fold.js';
import type { NodeMetrics } from '../node/metrics.js';
import { unary, type CallContext } from './unary-handler.js';
import { createJobsStreams } from './create-jobs-stream.js';
import { createItemBytes } from './create-item-bytes.js';
import { createRedriveHandlers } from './redrive-handlers.js';
import { expectType, itemError } from './fsm-result.js';
import { status } from '@grpc/grpc-js';

/** The most items one CreateJobs call may carry. */
const MAX_CREATE_JOBS_ITEMS = 10_000;
/**
 * One putJobs entry carries at most this many jobs and about this many bytes of specs: large
 * enough that the per-entry cost of the log vanishes, small enough to stay far below the
 * proposal limit (4 MiB by default) and to keep one apply call short on every node.
 */
const CREATE_CHUNK_ITEMS = 1000;
const CREATE_CHUNK_BYTES = 1 << 20;
/** putJobs proposals of one CreateJobs call in flight at once. */
const CREATE_CHUNKS_IN_FLIGHT = 3;

export interface JobServiceContext {
  node: Pick<HeraldNode, 'propose' | 'readIndex' | 'leader' | 'clusterClock' | 'driver' | 'events'> & Partial<Pick<HeraldNode, 'forwardingCredentials'>>;
  fsm: SchedulerStateMachine;
  logger: Logger;
  metrics?: NodeMetrics;
  /** Where audit lines go (auth/audit-line.ts); none when absent. */
  audit?: Logger;
  maxPayloadBytes: number;
  /** Upper bound for one proposal when the caller set no (shorter) deadline. */
  proposalTimeoutMs: number;
  /**
   * Why a due PENDING run is held back by a dispatch limit ('' when none): the leader's dispatch
   * gate while this node leads. Run.waiting_for is filled from it on reads, never written.
   */
  waitingFor?: (run: Run) => string;
}

export interface JobServiceHandle {
  implementation: JobServiceServer;
  close(): void;
}

export function createJobService(ctx: JobServiceContext): JobServiceHandle {
  const route = new LeaderRoute(ctx.node, JobServiceClient);
  const deps = { logger: ctx.logger, metrics: ctx.metrics, audit: ctx.audit };
  // Validation and fold resolution parse the same few expressions and zones over and over.
  const schedule = new ScheduleCaches();

  function timeoutFor(call: CallContext): number {
    const left = call.remainingMs() - 50; // leave room for the answer to travel back
    if (left <= 0) throw new HeraldError('PROPOSAL_TIMEOUT', 'the call deadline passed before the write could be proposed');
    return Math.min(ctx.proposalTimeoutMs, left);
  }

  /** Runs a write on the leader, forwarding the whole call once from a follower (leader-route.ts). */
  function onLeader<Req, Res>(method: string, request: Req, call: CallContext, run: (nowMs: number) => Promise<Res>): Promise<Res> {
    return route.onLeader(method, request, call, timeoutFor(call), run);
  }

  async function propose(command: FsmCommand, call: CallContext): Promise<FsmResult> {
    // Job principals are feature level 2, request ids and run callers 3: written only once every
    // voter reads them (feature-levels.ts).
    const level = ctx.fsm.appliedFeatureLevel;
    // Stamped as it is appended: its time never below a command before it in the log.
    const data = stampedAtAppend(withCaller(command, call), ctx.node.clusterClock, (c) => encodeCommand(atFeatureLevel(c, level)));
    // A create answers with its result alone (the job as applied, or the one its key found), so
    // it need not wait for the state machine's write: reads that must see it wait for the
    // applied index instead (RaftDriver.propose).
    const answerOnceEvaluated = command.type === 'putJobs' || command.type === 'putJob';
    const outcome = await ctx.node.propose(data, { forward: false, timeoutMs: timeoutFor(call), answerOnceEvaluated });
    const result = decodeResult(outcome.result);
    if (result.type === 'rejected') throw itemError(result.error);
    return result;
  }

  async function read<T>(consistency: ReadConsistency, call: CallContext, fn: () => Promise<T>): Promise<T> {
    if (consistency !== ReadConsistency.READ_CONSISTENCY_STALE) await ctx.node.readIndex({ timeoutMs: timeoutFor(call) });
    return fn();
  }

  const isDuePending = (r: Run, now: number): boolean => r.state === RunState.RUN_STATE_PENDING && r.notBeforeUnixMs <= now;

  /**
   * Run.waiting_for is the leader's dispatcher state, which a follower does not have: a follower
   * whose (non-stale) answer holds due PENDING runs has the leader answer the same read (after the
   * leader's own barrier, so no older than its own). undefined — the follower answers itself, with
   * waiting_for empty — when there is nothing to ask, the read is stale, the call was forwarded
   * already, no leader is known or the leader cannot answer in time: the reason is advisory, the
   * read is not.
   */
  async function leaderAnswer<Req, Res>(method: 'listRuns' | 'getRun', request: Req, runs: readonly Run[], consistency: ReadConsistency, call: CallContext): Promise<Res | undefined> {
    if (ctx.node.driver.isLeader() || call.forwarded || consistency === ReadConsistency.READ_CONSISTENCY_STALE) return undefined;
    const now = ctx.node.clusterClock.nowMs() ?? Date.now();
    if (!runs.some((r) => isDuePending(r, now))) return undefined;
    const leader = ctx.node.leader();
    if (!leader.leaderAddress) return undefined;
    try {
      return await route.forwardRead<Req, Res>(leader.leaderAddress, method, request, call, timeoutFor(call));
    } catch (err) {
      ctx.logger.debug({ err, method }, 'the leader did not answer a read for waiting_for; answering without it');
      return undefined;
    }
  }

  /** Run.waiting_for of the due PENDING runs among `runs` (in place; they are this call's copies). */
  function withWaiting<T extends Run>(runs: T[]): T[] {
    const reason = ctx.waitingFor;
    if (!reason) return runs;
    const now = ctx.node.clusterClock.nowMs() ?? Date.now();
    for (const r of runs) if (isDuePending(r, now)) r.waitingFor = reason(r);
    return runs;
  }

  async function createOne(item: CreateJobRequest, nowMs: number, call: CallContext): Promise<CreateJobResponse> {
    const result = await propose(
      { type: 'putJob', nowMs, jobId: item.jobId, spec: withResolvedFold(item.spec!, nowMs, schedule), idempotencyKey: item.idempotencyKey, principal: recordedName(call.principal) },
      call,
    );
    const r = expectType(result, 'job');
    if (r.error) throw itemError(r.error);
    return { job: r.job, created: r.created };
  }

  function validateCreate(item: CreateJobRequest, prefix: string): CreateJobRequest {
    if (item.jobId !== '') validateUserJobId(item.jobId, `${prefix}job_id`);
    validateJobSpec(item.spec, schedule, { maxPayloadBytes: ctx.maxPayloadBytes });
    if (item.idempotencyKey !== '') validateIdempotencyKey(item.idempotencyKey, `${prefix}idempotency_key`);
    // The id is chosen before the command is proposed: apply must not draw randomness (I5).
    return item.jobId !== '' ? item : { ...item, jobId: `job-${randomUUID()}` };
  }

  /** A CreateJobs call (or one batch of a CreateJobsStream): each item validated and answered on its own. */
  async function createMany(req: CreateJobsRequest, call: CallContext): Promise<CreateJobsResponse> {
    if (req.items.length === 0) throw new HeraldError('INVALID_ARGUMENT', 'items: at least one job is required', { field: 'items' });
    if (req.items.length > MAX_CREATE_JOBS_ITEMS) {
      throw new HeraldError('LIMIT_EXCEEDED', `items: at most ${MAX_CREATE_JOBS_ITEMS} jobs per call (got ${req.items.length}); split the batch`, { field: 'items' });
    }
    const prepared = req.items.map((item, i) => {
      try {
        return { item: validateCreate(item, `items[${i}].`) };
      } catch (e) {
        return { error: e };
      }
    });
    const forwardable = { items: prepared.map((p, i) => p.item ?? req.items[i]!) };
    return onLeader('createJobs', forwardable, call, async (nowMs) => {
      const results: CreateJobsResult[] = new Array(prepared.length);
      const failed = (i: number, e: unknown): void => {
        const he = e instanceof HeraldError ? e : new HeraldError('INTERNAL', 'internal error');
        results[i] = { job: undefined, code: grpcStatusOf[he.code], message: he.message, created: false };
      };
      const valid: number[] = [];
      prepared.forEach((p, i) => (p.error !== undefined ? failed(i, p.error) : valid.push(i)));
      // A few chunks in flight: they share fsyncs and replication rounds, while each waits
      // only for the applies of the few ahead of it (all at once, the last ones of a large call
      // queued behind every other's apply and ran out of proposal time on a loaded node).
      const chunks = createChunks(valid, (i) => prepared[i]!.item!);
      let nextChunk = 0;
      const proposeChunks = async (): Promise<void> => {
        while (nextChunk < chunks.length) {
          const chunk = chunks[nextChunk++]!;
          try {
            const items = chunk.map((i) => {
              const it = prepared[i]!.item!;
              return { jobId: it.jobId, spec: withResolvedFold(it.spec!, nowMs, schedule), idempotencyKey: it.idempotencyKey };
            });
            const r = expectType(await propose({ type: 'putJobs', nowMs, items, principal: recordedName(call.principal) }, call), 'jobs');
            if (r.items.length !== chunk.length) throw new HeraldError('INTERNAL', `putJobs answered ${r.items.length} items for ${chunk.length}`);
            chunk.forEach((i, k) => {
              const item = r.items[k]!;
              if (item.error) failed(i, itemError(item.error));
              else results[i] = { job: item.job, code: status.OK, message: '', created: item.created };
            });
          } catch (e) {
            for (const i of chunk) failed(i, e);
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(CREATE_CHUNKS_IN_FLIGHT, chunks.length) }, proposeChunks));
      return { results };
    });
  }

  const streams = createJobsStreams({
    ...deps,
    createMany,
    leaderAddress: () => (ctx.node.driver.isLeader() ? '' : ctx.node.leader().leaderAddress),
  });

  const implementation: JobServiceServer = {
    createJob: unary('CreateJob', deps, async (req, call) => {
      const item = validateCreate(req, '');
      return onLeader('createJob', item, call, (nowMs) => createOne(item, nowMs, call));
    }),

    createJobs: unary('CreateJobs', deps, createMany),

    createJobsStream: streams.handler,

    getJob: unary('GetJob', deps, async (req, call) => {
      validateId(req.jobId, 'job_id');
      const n = upcomingCount(req.upcomingFires, 0);
      const job = await read(req.consistency, call, () => ctx.fsm.getJob(req.jobId));
      if (!job) throw jobNotFound(req.jobId);
      // What the timing wheel fires next: from the job's cursor, while it is active.
      const first = job.state === JobState.JOB_STATE_ACTIVE && job.spec ? job.nextFireUnixMs : 0;
      return { job, upcomingFires: n > 0 && job.spec ? fires(job.id, job.spec, first, job.createdUnixMs, n) : [] };
    }),

    validateJob: unary('ValidateJob', deps, async (req, call) => {
      const n = upcomingCount(req.upcomingFires, DEFAULT_VALIDATE_FIRES);
      // CreateJob's checks, in its order: the same errors for the same request.
      const item = validateCreate({ jobId: req.jobId, spec: req.spec, idempotencyKey: '' }, '');
      return onLeader('validateJob', req, call, async (nowMs) => {
        if (req.jobId !== '') {
          await ctx.node.readIndex({ timeoutMs: timeoutFor(call) });
          if (await ctx.fsm.getJob(req.jobId)) throw new HeraldError('ALREADY_EXISTS', `job "${req.jobId}" already exists`);
        }
        const spec = withResolvedFold(item.spec!, nowMs, schedule);
        // The jitter of a slot depends on the job id: without one, the fires are shown unjittered.
        const shown = req.jobId !== '' || spec.jitterMs <= 0 ? spec : { ...spec, jitterMs: 0 };
        const first = firstSlotFrom(shown, nowMs, nowMs, 0, schedule) ?? 0;
        return { spec, upcomingFires: fires(req.jobId, shown, first, nowMs, n) };
      });
    }),

    listJobs: unary('ListJobs', deps, async (req, call) => {
      validateEnum(req.state, JobState, 'state');
      if (req.taskType !== '') validateId(req.taskType, 'task_type');
      validateIdPrefix(req.idPrefix, 'id_prefix');
      const page = await read(req.consistency, call, () =>
        ctx.fsm.listJobs({
          pageSize: req.pageSize,
          pageToken: req.pageToken,
          state: req.state || undefined,
          labelSelector: req.labelSelector,
          taskType: req.taskType || undefined,
          idPrefix: req.idPrefix || undefined,
        }),
      );
      return { jobs: page.items, nextPageToken: page.nextPageToken };
    }),

    updateJob: unary('UpdateJob', deps, async (req, call) => {
      validateUserJobId(req.jobId, 'job_id');
      validateJobSpec(req.spec, schedule, { maxPayloadBytes: ctx.maxPayloadBytes });
      return onLeader('updateJob', req, call, async (nowMs) => {
        const r = expectType(await propose({ type: 'updateJob', nowMs, jobId: req.jobId, spec: withResolvedFold(req.spec!, nowMs, schedule), expectedVersion: req.expectedVersion, principal: recordedName(call.principal) }, call), 'job');
        if (r.error) throw itemError(r.error);
        return { job: r.job };
      });
    }),

    deleteJob: unary('DeleteJob', deps, async (req, call) => {
      validateUserJobId(req.jobId, 'job_id');
      return onLeader('deleteJob', req, call, async (nowMs) => {
        const r = expectType(await propose({ type: 'deleteJob', nowMs, jobId: req.jobId, expectedVersion: req.expectedVersion, principal: recordedName(call.principal) }, call), 'delete');
        if (r.error) throw itemError(r.error);
        return { cancelledRuns: r.cancelledRuns };
      });
    }),

    pauseJob: unary('PauseJob', deps, async (req, call) => {
      validateUserJobId(req.jobId, 'job_id');
      validateNote(req.note, 'note');
      return onLeader('pauseJob', req, call, async (nowMs) => {
        const r = expectType(await propose({ type: 'pauseJob', nowMs, jobId: req.jobId, note: req.note, principal: recordedName(call.principal) }, call), 'job');
        if (r.error) throw itemError(r.error);
        return { job: r.job };
      });
    }),

    resumeJob: unary('ResumeJob', deps, async (req, call) => {
      validateUserJobId(req.jobId, 'job_id');
      return onLeader('resumeJob', req, call, async (nowMs) => {
        const r = expectType(await propose({ type: 'resumeJob', nowMs, jobId: req.jobId, principal: recordedName(call.principal) }, call), 'job');
        if (r.error) throw itemError(r.error);
        return { job: r.job };
      });
    }),

    triggerJob: unary('TriggerJob', deps, async (req, call) => {
      validateUserJobId(req.jobId, 'job_id');
      if (req.idempotencyKey !== '') validateIdempotencyKey(req.idempotencyKey);
      return onLeader('triggerJob', req, call, async (nowMs) => {
        const r = expectType(await propose({ type: 'triggerJob', nowMs, jobId: req.jobId, idempotencyKey: req.idempotencyKey, ignoreOverlap: req.ignoreOverlap }, call), 'trigger');
        if (r.error) throw itemError(r.error);
        return { run: r.run };
      });
    }),

    backfillJob: unary('BackfillJob', deps, async (req, call) => {
      validateUserJobId(req.jobId, 'job_id');
      if (!Number.isSafeInteger(req.fromUnixMs) || req.fromUnixMs <= 0) {
        throw new HeraldError('INVALID_ARGUMENT', 'from_unix_ms: required, a positive instant in ms', { field: 'from_unix_ms' });
      }
      if (!Number.isSafeInteger(req.toUnixMs) || req.toUnixMs <= req.fromUnixMs) {
        throw new HeraldError('INVALID_ARGUMENT', 'to_unix_ms: required, after from_unix_ms', { field: 'to_unix_ms' });
      }
      if (!Number.isInteger(req.maxRuns) || req.maxRuns < 0 || req.maxRuns > MAX_BACKFILL_RUNS) {
        throw new HeraldError('INVALID_ARGUMENT', `max_runs: between 1 and ${MAX_BACKFILL_RUNS} (0 means ${DEFAULT_BACKFILL_MAX_RUNS})`, { field: 'max_runs' });
      }
      return onLeader('backfillJob', req, call, async (nowMs) => {
        if (req.toUnixMs > nowMs) {
          throw new HeraldError('INVALID_ARGUMENT', `to_unix_ms: a backfill covers the past; ${req.toUnixMs} is after the cluster time ${nowMs}`, { field: 'to_unix_ms' });
        }
        const cmd: FsmCommand = {
          type: 'backfillJob',
          nowMs,
          jobId: req.jobId,
          fromMs: req.fromUnixMs,
          toMs: req.toUnixMs,
          maxRuns: req.maxRuns || DEFAULT_BACKFILL_MAX_RUNS,
          ignoreOverlap: req.ignoreOverlap,
        };
        const r = expectType(await propose(cmd, call), 'backfill');
        if (r.error) throw itemError(r.error);
        return { runIds: [...r.runIds] };
      });
    }),

    listRuns: unary('ListRuns', deps, async (req, call) => {
      if (req.jobId !== '') validateId(req.jobId, 'job_id');
      validateEnum(req.state, RunState, 'state');
      const page = await read(req.consistency, call, () =>
        ctx.fsm.listRuns({ jobId: req.jobId || undefined, state: req.state || undefined, pageSize: req.pageSize, pageToken: req.pageToken }),
      );
      const fromLeader = await leaderAnswer<typeof req, ListRunsResponse>('listRuns', req, page.items, req.consistency, call);
      return fromLeader ?? { runs: withWaiting(page.items), nextPageToken: page.nextPageToken };
    }),

    getRun: unary('GetRun', deps, async (req, call) => {
      requireRunId(req.runId);
      const run = await read(req.consistency, call, () => ctx.fsm.getRun(req.runId));
      if (!run) throw new HeraldError('RUN_NOT_FOUND', `run ${req.runId} does not exist (it may have been trimmed by the job's history retention)`);
      const fromLeader = await leaderAnswer<typeof req, GetRunResponse>('getRun', req, [run], req.consistency, call);
      return fromLeader ?? { run: withWaiting([run])[0] };
    }),

    cancelRun: unary('CancelRun', deps, async (req, call) => {
      requireRunId(req.runId);
      validateNote(req.reason, 'reason');
      return onLeader('cancelRun', req, call, async (nowMs) => {
        const r = expectType(await propose({ type: 'cancelRuns', nowMs, items: [{ runId: req.runId, reason: req.reason || 'cancelled by request' }] }, call), 'cancel');
        const item = r.items[0];
        if (!item) throw new HeraldError('INTERNAL', 'cancel returned no item result');
        if (item.error) throw itemError(item.error);
        return { run: item.run };
      });
    }),

    countRuns: unary('CountRuns', deps, async (req, call) => {
      if (!Number.isSafeInteger(req.sinceUnixMs) || req.sinceUnixMs < 0) {
        throw new HeraldError('INVALID_ARGUMENT', 'since_unix_ms: an instant in ms since the epoch (0: the last 24 hours)', { field: 'since_unix_ms' });
      }
      const { fromMs, counts } = await read(req.consistency, call, () => ctx.fsm.countRuns(req.sinceUnixMs));
      const n = (s: RunState): number => counts.get(s) ?? 0;
      return {
        fromUnixMs: fromMs,
        succeeded: n(RunState.RUN_STATE_SUCCEEDED),
        failed: n(RunState.RUN_STATE_FAILED),
        dead: n(RunState.RUN_STATE_DEAD),
        cancelled: n(RunState.RUN_STATE_CANCELLED),
        skipped: n(RunState.RUN_STATE_SKIPPED),
        missed: n(RunState.RUN_STATE_MISSED),
      };
    }),

    ...createRedriveHandlers({ deps, onLeader, propose, timeoutFor, node: ctx.node, fsm: ctx.fsm }),
  };

  function fires(jobId: string, spec: JobSpec, firstSlotMs: number, createdMs: number, n: number): UpcomingFire[] {
    return upcomingFires(jobId, spec, firstSlotMs, createdMs, n, schedule).map((f) => ({ slotUnixMs: f.slotMs, scheduledUnixMs: f.scheduledMs }));
  }

  return {
    implementation,
    close: () => {
      streams.close();
      route.close();
    },
  };
}

/** ValidateJob's number of fires when the request asks for none. */
const DEFAULT_VALIDATE_FIRES = 10;

function upcomingCount(n: number, dflt: number): number {
  if (!Number.isInteger(n) || n < 0 || n > MAX_UPCOMING_FIRES) {
    throw new HeraldError('INVALID_ARGUMENT', `upcoming_fires: between 0 and ${MAX_UPCOMING_FIRES} (got ${n})`, { field: 'upcoming_fires' });
  }
  return n === 0 ? dflt : n;
}

/** Splits item indexes into putJobs chunks, in order, by count and estimated bytes. */
function createChunks(indexes: readonly number[], itemOf: (i: number) => CreateJobRequest): number[][] {
  const chunks: number[][] = [];
  let cur: number[] = [];
  let bytes = 0;
  for (const i of indexes) {
    const b = createItemBytes(itemOf(i));
    if (cur.length > 0 && (cur.length >= CREATE_CHUNK_ITEMS || bytes + b > CREATE_CHUNK_BYTES)) {
      chunks.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(i);
    bytes += b;
  }
  if (cur.length > 0) chunks.push(cur);
  return chunks;
}

function jobNotFound(jobId: string): HeraldError {
  return new HeraldError('JOB_NOT_FOUND', `job ${jobId} does not exist`);
}

function validateEnum(value: number, enumObject: Record<string, string | number>, field: string): void {
  if (value < 0 || !Object.values(enumObject).includes(value)) {
    throw new HeraldError('INVALID_ARGUMENT', `${field}: ${value} is not a valid value`, { field });
  }
}

/** Commands a caller makes that record who (principal) and which call (request id) made them. */
const CALLER_COMMANDS: ReadonlySet<FsmCommand['type']> = new Set(['putJob', 'putJobs', 'updateJob', 'deleteJob', 'pauseJob', 'resumeJob', 'triggerJob', 'backfillJob', 'retryRuns', 'cancelRuns']);

/** `command` with the call's request id, and its principal where the handler did not set one. */
function withCaller(command: FsmCommand, call: CallContext): FsmCommand {
  if (!CALLER_COMMANDS.has(command.type)) return command;
  const given = 'principal' in command ? command.principal : undefined;
  const principal = given ?? recordedName(call.principal);
  return { ...command, ...(principal ? { principal } : {}), requestId: call.requestId } as FsmCommand;
}
