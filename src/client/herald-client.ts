// HeraldClient: the SDK entry point over JobService and ClusterService. It finds the leader,
// follows redirects, retries what is safe to retry within one per-call deadline, and turns
// failures into typed errors. Every write that creates something carries an idempotency key
// (generated when the caller gives none), so the SDK's own retries never create twice.
import { randomUUID } from 'node:crypto';
import { Metadata, status, type CallOptions as GrpcCallOptions, type ClientUnaryCall, type ServiceError } from '@grpc/grpc-js';
import type { ClusterServiceClient, GetStatusResponse, Member } from '../gen/herald/v1/cluster_service.js';
import type { TaskTypeConfig, TaskTypeServiceClient } from '../gen/herald/v1/task_type_service.js';
import { Role, type AuthServiceClient, type TokenInfo } from '../gen/herald/v1/auth_service.js';

const ROLE_BY_NAME: Record<string, Role> = { admin: Role.ROLE_ADMIN, operator: Role.ROLE_OPERATOR, viewer: Role.ROLE_VIEWER, worker: Role.ROLE_WORKER };
import { JobState, type Job } from '../gen/herald/v1/job.js';
import {
  type CountRunsResponse,
  type CreateJobRequest,
  type JobServiceClient,
  type ListJobsResponse,
  type ListRunsResponse,
  type RetryRunsResponse,
  type UpcomingFire,
  type ValidateJobResponse,
} from '../gen/herald/v1/job_service.js';
import { RunState, type Run } from '../gen/herald/v1/run.js';
import { ConnectionPool } from './connection-pool.js';
import { CreateBatcher } from './create-batcher.js';
import { CreateStream } from './create-stream.js';
import { clientError, fromServiceError, HeraldClientError, InvalidSpecError, isServiceError } from './errors.js';
import type { Instant } from './job-spec-builders.js';
import { LeaderRouter } from './leader-router.js';
import { silentLogger, type ClientLogger } from './logger.js';
import { watchJobs, watchRuns, type JobChange, type WatchItem, type WatchJobsFilter, type WatchOptions, type WatchRunsFilter } from './watch-stream.js';
import { instant, JOB_STATES, named, RUN_STATES, type ListJobsFilter, type ListRunsFilter, type Page, type RetryRunsFilter, type RunStateName, type TaskTypeLimits, taskTypeConfigOf } from './request-filters.js';
export type { JobStateName, ListJobsFilter, ListRunsFilter, Page, RetryRunsFilter, RunStateName, TaskTypeLimits } from './request-filters.js';
import { readConsistency, toSpec, type CallOptions, type CreateJobOptions, type CreateJobsItem, type CreateJobsItemResult, type HeraldClientOptions, type ReadOptions, type SpecInput } from './herald-client-options.js';
export type { CallOptions, CreateJobOptions, CreateJobsItem, CreateJobsItemResult, HeraldClientOptions, ReadOptions, SpecInput } from './herald-client-options.js';
import { backoffDelayMs, DEFAULT_RETRY, isRetryable, sleep, type CallSafety, type RetryOptions } from './retry-policy.js';

type Unary<Req, Res> = (request: Req, metadata: Metadata, options: Partial<GrpcCallOptions>, callback: (err: ServiceError | null, response: Res) => void) => ClientUnaryCall;

// An attempt abandoned because the node sent nothing within the first-byte bound.
class SilentAttempt {
  constructor(readonly boundMs: number) {}
}

export class HeraldClient {
  private readonly pool: ConnectionPool;
  private readonly router: LeaderRouter;
  private readonly retry: RetryOptions;
  private readonly perAttemptTimeoutMs: number | undefined;
  private readonly defaultDeadlineMs: number;
  private readonly discoveryTimeoutMs: number;
  private readonly connectTimeoutMs: number;
  private readonly firstByteTimeoutMs: number;
  private readonly logger: ClientLogger;
  private closed = false;
  private readonly batcher: CreateBatcher | undefined;
  private readonly createStream: CreateStream | undefined;

  constructor(options: HeraldClientOptions) {
    if (!Array.isArray(options.endpoints) || options.endpoints.length === 0) {
      throw new TypeError('HeraldClient: `endpoints` must list at least one host:port');
    }
    this.logger = options.logger ?? silentLogger;
    this.pool = new ConnectionPool(options);
    const { perAttemptTimeoutMs, ...retry } = options.retry ?? {};
    this.retry = { ...DEFAULT_RETRY, ...retry };
    if (!(this.retry.maxAttempts >= 1)) throw new TypeError('HeraldClient: retry.maxAttempts must be at least 1');
    this.perAttemptTimeoutMs = perAttemptTimeoutMs;
    this.defaultDeadlineMs = options.defaultDeadlineMs ?? 10_000;
    this.discoveryTimeoutMs = options.discoveryTimeoutMs ?? 1_000;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 1_000;
    this.firstByteTimeoutMs = options.firstByteTimeoutMs ?? 3_000;
    if (!(this.firstByteTimeoutMs > 0)) throw new TypeError('HeraldClient: firstByteTimeoutMs must be positive');
    this.router = new LeaderRouter(options.endpoints, (address, deadline) => this.probe(address, deadline), this.logger);
    if (options.batchCreates !== false) {
      if (options.streamCreates !== false) {
        this.createStream = new CreateStream({ open: (a) => this.pool.jobs(a).createJobsStream(), router: this.router, silenceMs: this.firstByteTimeoutMs, logger: this.logger });
      }
      this.batcher = new CreateBatcher({
        stream: this.createStream,
        many: async (items, deadline) => (await this.jobs((c) => c.createJobs.bind(c), { items }, 'keyed', { deadlineMs: deadline - Date.now() })).results,
        one: (item, deadline) => this.createOne(item, { deadlineMs: deadline - Date.now() }),
      });
    }
  }

  /** The leader's client address as last learned; undefined before discovery or during elections. */
  get leaderAddress(): string | undefined {
    return this.router.leaderAddress;
  }

  // ---- JobService -------------------------------------------------------------------------

  /** Creates a job. Safe to retry: an idempotency key is generated unless given. */
  async createJob(spec: SpecInput, opts: CreateJobOptions = {}): Promise<{ job: Job; created: boolean }> {
    const request: CreateJobRequest = {
      jobId: opts.id ?? '',
      spec: toSpec(spec),
      idempotencyKey: opts.idempotencyKey ?? randomUUID(),
    };
    if (this.batcher && opts.signal === undefined && request.idempotencyKey !== '' && !this.closed) {
      return this.batcher.create(request, Date.now() + (opts.deadlineMs ?? this.defaultDeadlineMs));
    }
    return this.createOne(request, opts);
  }

  private async createOne(request: CreateJobRequest, opts: CallOptions): Promise<{ job: Job; created: boolean }> {
    const res = await this.jobs((c) => c.createJob.bind(c), request, 'keyed', opts);
    return { job: res.job!, created: res.created };
  }

  /** Creates many jobs in one call; each item gets its own result (and its own idempotency key). */
  async createJobs(items: CreateJobsItem[], opts: CallOptions = {}): Promise<CreateJobsItemResult[]> {
    const request = {
      items: items.map((it) => ({ jobId: it.id ?? '', spec: toSpec(it.spec), idempotencyKey: it.idempotencyKey ?? randomUUID() })),
    };
    const res = await this.jobs((c) => c.createJobs.bind(c), request, 'keyed', opts);
    return res.results.map((r) => ({
      job: r.job,
      created: r.created,
      error: r.code === status.OK ? undefined : clientError({ grpcCode: r.code, message: r.message }),
    }));
  }

  async getJob(id: string, opts: ReadOptions = {}): Promise<Job> {
    return (await this.getJobWithFires(id, 0, opts)).job;
  }

  /** The job and its next `n` fire instants (at most 100; none while paused or completed). */
  async getJobWithFires(id: string, n: number, opts: ReadOptions = {}): Promise<{ job: Job; upcomingFires: UpcomingFire[] }> {
    const res = await this.jobs((c) => c.getJob.bind(c), { jobId: id, consistency: readConsistency(opts), upcomingFires: n }, 'read', opts);
    return { job: res.job!, upcomingFires: res.upcomingFires };
  }

  /** A dry-run create: the spec as CreateJob would store it and its next fires (default 10); nothing is created. */
  async validateJob(spec: SpecInput, opts: CallOptions & { id?: string; upcomingFires?: number } = {}): Promise<ValidateJobResponse> {
    return this.jobs((c) => c.validateJob.bind(c), { jobId: opts.id ?? '', spec: toSpec(spec), upcomingFires: opts.upcomingFires ?? 0 }, 'read', opts);
  }

  /** One page of jobs. */
  async listJobs(filter: ListJobsFilter = {}, opts: ReadOptions = {}): Promise<Page<Job>> {
    const res: ListJobsResponse = await this.jobs(
      (c) => c.listJobs.bind(c),
      {
        pageSize: filter.pageSize ?? 0,
        pageToken: filter.pageToken ?? '',
        state: named(JOB_STATES, filter.state, JobState.JOB_STATE_UNSPECIFIED, 'state'),
        labelSelector: filter.labels ?? {},
        taskType: filter.taskType ?? '',
        idPrefix: filter.idPrefix ?? '',
        consistency: readConsistency(opts),
      },
      'read',
      opts,
    );
    return { items: res.jobs, nextPageToken: res.nextPageToken };
  }

  /** Every page of jobs matching the filter, fetched lazily. */
  async *listJobPages(filter: ListJobsFilter = {}, opts: ReadOptions = {}): AsyncGenerator<Page<Job>> {
    let pageToken = filter.pageToken ?? '';
    do {
      const page = await this.listJobs({ ...filter, pageToken }, opts);
      yield page;
      pageToken = page.nextPageToken;
    } while (pageToken !== '');
  }

  /** Every job matching the filter, one at a time across pages. */
  async *iterateJobs(filter: ListJobsFilter = {}, opts: ReadOptions = {}): AsyncGenerator<Job> {
    for await (const page of this.listJobPages(filter, opts)) yield* page.items;
  }

  /** Replaces a job's spec; with expectedVersion, fails FailedPreconditionError on a mismatch. */
  async updateJob(id: string, spec: SpecInput, opts: CallOptions & { expectedVersion?: number } = {}): Promise<Job> {
    const res = await this.jobs(
      (c) => c.updateJob.bind(c),
      { jobId: id, spec: toSpec(spec), expectedVersion: opts.expectedVersion ?? 0 },
      'write',
      opts,
    );
    return res.job!;
  }

  async deleteJob(id: string, opts: CallOptions & { expectedVersion?: number } = {}): Promise<{ cancelledRuns: number }> {
    const res = await this.jobs((c) => c.deleteJob.bind(c), { jobId: id, expectedVersion: opts.expectedVersion ?? 0 }, 'write', opts);
    return { cancelledRuns: res.cancelledRuns };
  }

  async pauseJob(id: string, note = '', opts: CallOptions = {}): Promise<Job> {
    const res = await this.jobs((c) => c.pauseJob.bind(c), { jobId: id, note }, 'write', opts);
    return res.job!;
  }

  async resumeJob(id: string, opts: CallOptions = {}): Promise<Job> {
    const res = await this.jobs((c) => c.resumeJob.bind(c), { jobId: id }, 'write', opts);
    return res.job!;
  }

  /**
   * Starts a manual run now. Safe to retry: an idempotency key is generated unless given. The
   * job's overlap policy applies (FORBID refuses with INVALID_STATE while a run is active) unless
   * `ignoreOverlap`.
   */
  async triggerJob(id: string, opts: CallOptions & { idempotencyKey?: string; ignoreOverlap?: boolean } = {}): Promise<Run> {
    const res = await this.jobs(
      (c) => c.triggerJob.bind(c),
      { jobId: id, idempotencyKey: opts.idempotencyKey ?? randomUUID(), ignoreOverlap: opts.ignoreOverlap ?? false },
      'keyed',
      opts,
    );
    return res.run!;
  }

  /**
   * Creates runs for the schedule's slots in [from, to); returns their ids, oldest first. Under
   * FORBID / BUFFER_ONE they run one after another unless `ignoreOverlap`.
   */
  async backfillJob(
    id: string,
    range: { from: Instant; to: Instant; maxRuns?: number; ignoreOverlap?: boolean },
    opts: CallOptions = {},
  ): Promise<string[]> {
    const res = await this.jobs(
      (c) => c.backfillJob.bind(c),
      { jobId: id, fromUnixMs: instant(range.from), toUnixMs: instant(range.to), maxRuns: range.maxRuns ?? 0, ignoreOverlap: range.ignoreOverlap ?? false },
      'write',
      opts,
    );
    return res.runIds;
  }

  /** One page of runs. */
  async listRuns(filter: ListRunsFilter = {}, opts: ReadOptions = {}): Promise<Page<Run>> {
    const res: ListRunsResponse = await this.jobs(
      (c) => c.listRuns.bind(c),
      {
        jobId: filter.jobId ?? '',
        state: named(RUN_STATES, filter.state, RunState.RUN_STATE_UNSPECIFIED, 'state'),
        pageSize: filter.pageSize ?? 0,
        pageToken: filter.pageToken ?? '',
        consistency: readConsistency(opts),
      },
      'read',
      opts,
    );
    return { items: res.runs, nextPageToken: res.nextPageToken };
  }

  /** Stored runs per state (FAILED, the terminal ones) that reached it since `since`, by minute, within 24 h (0: all). */
  async countRuns(since: Instant = 0, opts: ReadOptions = {}): Promise<CountRunsResponse> {
    return this.jobs((c) => c.countRuns.bind(c), { sinceUnixMs: instant(since), consistency: readConsistency(opts) }, 'read', opts);
  }

  async *listRunPages(filter: ListRunsFilter = {}, opts: ReadOptions = {}): AsyncGenerator<Page<Run>> {
    let pageToken = filter.pageToken ?? '';
    do {
      const page = await this.listRuns({ ...filter, pageToken }, opts);
      yield page;
      pageToken = page.nextPageToken;
    } while (pageToken !== '');
  }

  async *iterateRuns(filter: ListRunsFilter = {}, opts: ReadOptions = {}): AsyncGenerator<Run> {
    for await (const page of this.listRunPages(filter, opts)) yield* page.items;
  }

  async getRun(id: string, opts: ReadOptions = {}): Promise<Run> {
    const res = await this.jobs((c) => c.getRun.bind(c), { runId: id, consistency: readConsistency(opts) }, 'read', opts);
    return res.run!;
  }

  async cancelRun(id: string, reason = '', opts: CallOptions = {}): Promise<Run> {
    const res = await this.jobs((c) => c.cancelRun.bind(c), { runId: id, reason }, 'write', opts);
    return res.run!;
  }

  /**
   * Re-drives a DEAD, CANCELLED or FAILED run: PENDING again, a new attempt under a higher fencing
   * token, its retry budget restarted. Another state fails FailedPreconditionError.
   */
  async retryRun(id: string, opts: CallOptions & { ignoreOverlap?: boolean } = {}): Promise<Run> {
    const res = await this.jobs((c) => c.retryRun.bind(c), { runId: id, ignoreOverlap: opts.ignoreOverlap ?? false }, 'write', opts);
    return res.run!;
  }

  /** Re-drives up to maxRuns (≤ 500) runs of a job and/or task type in one state (default dead); call again while `more`. */
  async retryRuns(filter: RetryRunsFilter, opts: CallOptions = {}): Promise<RetryRunsResponse> {
    const request = {
      jobId: filter.jobId ?? '',
      taskType: filter.taskType ?? '',
      state: named(RUN_STATES, filter.state, RunState.RUN_STATE_UNSPECIFIED, 'state'),
      finishedFromUnixMs: filter.finishedFrom === undefined ? 0 : instant(filter.finishedFrom),
      finishedToUnixMs: filter.finishedTo === undefined ? 0 : instant(filter.finishedTo),
      maxRuns: filter.maxRuns ?? 0,
      pageToken: filter.pageToken ?? '',
      ignoreOverlap: filter.ignoreOverlap ?? false,
    };
    return this.jobs((c) => c.retryRuns.bind(c), request, 'write', opts);
  }

  // ---- TaskTypeService --------------------------------------------------------------------

  /**
   * Sets a task type's limits (replacing any earlier config): `maxRunning` runs RUNNING at once
   * across the cluster, `ratePerSecond` starts per second with `burst`; 0 or absent = no limit.
   * `alerts` and `pauseAfterDead` are the defaults of its jobs that set none of their own.
   */
  async setTaskType(taskType: string, limits: TaskTypeLimits, opts: CallOptions = {}): Promise<TaskTypeConfig> {
    const res = await this.taskTypes((c) => c.setTaskType.bind(c), { config: taskTypeConfigOf(taskType, limits) }, 'write', opts);
    return res.config!;
  }

  async getTaskType(taskType: string, opts: CallOptions = {}): Promise<TaskTypeConfig> {
    const res = await this.taskTypes((c) => c.getTaskType.bind(c), { taskType }, 'read', opts);
    return res.config!;
  }

  async listTaskTypes(opts: CallOptions = {}): Promise<TaskTypeConfig[]> {
    const res = await this.taskTypes((c) => c.listTaskTypes.bind(c), {}, 'read', opts);
    return res.configs;
  }

  async deleteTaskType(taskType: string, opts: CallOptions = {}): Promise<void> {
    await this.taskTypes((c) => c.deleteTaskType.bind(c), { taskType }, 'write', opts);
  }

  // ---- AuthService ------------------------------------------------------------------------

  /**
   * Creates a bearer token (admin only). The returned `secret` is the token itself, shown this
   * once: the cluster keeps only a salted hash. Worker tokens list the task types they may take.
   */
  async createToken(name: string, role: Role | 'admin' | 'operator' | 'viewer' | 'worker', taskTypes: string[] = [], opts: CallOptions = {}): Promise<{ token: TokenInfo; secret: string }> {
    const r = typeof role === 'string' ? ROLE_BY_NAME[role] : role;
    if (r === undefined) throw new TypeError(`createToken: unknown role "${String(role)}" (admin, operator, viewer, worker)`);
    const res = await this.authCall((c) => c.createToken.bind(c), { name, role: r, taskTypes }, 'write', opts);
    return { token: res.token!, secret: res.secret };
  }

  async listTokens(opts: CallOptions = {}): Promise<TokenInfo[]> {
    return (await this.authCall((c) => c.listTokens.bind(c), {}, 'read', opts)).tokens;
  }

  /** Revokes a token by name or id: its next call, on any node, is refused. */
  async revokeToken(nameOrId: string, opts: CallOptions = {}): Promise<TokenInfo> {
    return (await this.authCall((c) => c.revokeToken.bind(c), { nameOrId }, 'write', opts)).token!;
  }

  // ---- ClusterService ---------------------------------------------------------------------

  /**
   * The cluster's status as one node sees it: the leader by default, or the node at `address`
   * (then without redirects or failover, since the caller asked for that node's view).
   */
  async status(opts: CallOptions & { address?: string } = {}): Promise<GetStatusResponse> {
    if (opts.address !== undefined) {
      const deadline = Date.now() + (opts.deadlineMs ?? this.defaultDeadlineMs);
      try {
        return await this.unary(this.pool.cluster(opts.address), (c) => c.getStatus.bind(c), {}, deadline, opts.signal);
      } catch (e) {
        throw this.toError(e, opts.address);
      }
    }
    const st = await this.cluster((c) => c.getStatus.bind(c), {}, 'read', opts);
    if (st.leaderAddress !== '') this.router.noteLeader(st.leaderAddress);
    this.router.noteMembers(st.members);
    return st;
  }

  /**
   * Adds a node as a learner (ClusterService.AddMember; the leader serves it). `incarnation` is
   * the new node's, from its own GetStatus (`herald cluster add` reads it).
   */
  async addMember(m: { id: string; peerAddress: string; clientAddress: string; incarnation: string }, opts: CallOptions = {}): Promise<Member[]> {
    const res = await this.cluster((c) => c.addMember.bind(c), m, 'write', opts);
    this.router.noteMembers(res.members);
    return res.members;
  }

  /** Promotes a learner to voter once it caught up (FAILED_PRECONDITION LEARNER_BEHIND before). */
  async promoteMember(id: string, opts: CallOptions = {}): Promise<Member[]> {
    const res = await this.cluster((c) => c.promoteMember.bind(c), { id }, 'write', opts);
    this.router.noteMembers(res.members);
    return res.members;
  }

  /** Removes a member (voter or learner, the leader included). */
  async removeMember(id: string, opts: CallOptions = {}): Promise<Member[]> {
    const res = await this.cluster((c) => c.removeMember.bind(c), { id }, 'write', opts);
    this.router.noteMembers(res.members);
    return res.members;
  }

  /** Moves leadership to `targetId` (or the most up-to-date follower); returns the new leader. */
  async transferLeadership(targetId = '', opts: CallOptions = {}): Promise<{ leaderId: string; leaderAddress: string }> {
    const res = await this.cluster((c) => c.transferLeadership.bind(c), { targetId }, 'write', opts);
    if (res.leaderAddress !== '') this.router.noteLeader(res.leaderAddress);
    return { leaderId: res.leaderId, leaderAddress: res.leaderAddress };
  }

  /** Closes all connections; calls in flight fail. */
  // ---- WatchService ------------------------------------------------------------------------

  /**
   * Run state changes matching the filter, in log order, as an async iterator that resumes across
   * reconnects and leader changes (watch-stream.ts). Ends when `opts.signal` aborts or the client
   * closes; `break` ends it too.
   */
  watchRuns(filter: Omit<WatchRunsFilter, 'states'> & { states?: (RunState | RunStateName)[] } = {}, opts: WatchOptions = {}): AsyncGenerator<WatchItem<Run>> {
    const states = filter.states?.map((s) => named(RUN_STATES, s, RunState.RUN_STATE_UNSPECIFIED, 'states'));
    return watchRuns(this.watchDeps(), { ...filter, states }, opts);
  }

  /** Job changes (creates, updates, pauses, deletes) matching the filter; as watchRuns. */
  watchJobs(filter: WatchJobsFilter = {}, opts: WatchOptions = {}): AsyncGenerator<WatchItem<JobChange>> {
    return watchJobs(this.watchDeps(), filter, opts);
  }

  private watchDeps() {
    if (this.closed) throw new Error('HeraldClient is closed');
    const router = this.router;
    // Live: a watch that outlasts a membership change rotates through the members learned since.
    return {
      pool: this.pool,
      get endpoints() {
        return router.knownEndpoints();
      },
      logger: this.logger,
      isClosed: () => this.closed,
    };
  }

  close(): void {
    this.closed = true;
    this.createStream?.close();
    this.pool.close();
  }

  // ---- plumbing ---------------------------------------------------------------------------

  private jobs<Req, Res>(pick: (c: JobServiceClient) => Unary<Req, Res>, request: Req, safety: CallSafety, opts: CallOptions): Promise<Res> {
    return this.invoke((address) => pick(this.pool.jobs(address)), request, safety, opts);
  }

  private authCall<Req, Res>(pick: (c: AuthServiceClient) => Unary<Req, Res>, request: Req, safety: CallSafety, opts: CallOptions): Promise<Res> {
    return this.invoke((address) => pick(this.pool.auth(address)), request, safety, opts);
  }

  private taskTypes<Req, Res>(pick: (c: TaskTypeServiceClient) => Unary<Req, Res>, request: Req, safety: CallSafety, opts: CallOptions): Promise<Res> {
    return this.invoke((address) => pick(this.pool.taskTypes(address)), request, safety, opts);
  }

  private cluster<Req, Res>(pick: (c: ClusterServiceClient) => Unary<Req, Res>, request: Req, safety: CallSafety, opts: CallOptions): Promise<Res> {
    return this.invoke((address) => pick(this.pool.cluster(address)), request, safety, opts);
  }

  private probe(address: string, deadline: number): Promise<GetStatusResponse> {
    return this.unary(this.pool.cluster(address), (c) => c.getStatus.bind(c), {}, deadline, undefined);
  }

  private toError(e: unknown, address: string): HeraldClientError | Error {
    return isServiceError(e) ? fromServiceError(e, address) : (e as Error);
  }

  /**
   * The retry loop. One overall deadline covers every attempt; a redirect to a node not just
   * tried is followed at once, everything else waits an exponential, jittered backoff.
   */
  private async invoke<Req, Res>(
    method: (address: string) => Unary<Req, Res>,
    request: Req,
    safety: CallSafety,
    opts: CallOptions,
  ): Promise<Res> {
    if (this.closed) throw new Error('HeraldClient is closed');
    try {
      return await this.attempts(method, request, safety, opts);
    } catch (e) {
      // An abort can land between attempts (in a backoff sleep); report it the same way as an
      // abort during an attempt, so callers see one error type for "I cancelled this".
      if (opts.signal?.aborted && !(e instanceof HeraldClientError)) {
        throw clientError({ grpcCode: status.CANCELLED, message: 'call cancelled by the caller', cause: opts.signal.reason });
      }
      throw e;
    }
  }

  private async attempts<Req, Res>(
    method: (address: string) => Unary<Req, Res>,
    request: Req,
    safety: CallSafety,
    opts: CallOptions,
  ): Promise<Res> {
    const deadline = Date.now() + (opts.deadlineMs ?? this.defaultDeadlineMs);
    let retries = 0;
    let lastError: HeraldClientError | undefined;
    // Nodes tried by this call: a redirect to one of them (stale leader hints pointing at each
    // other during an election) waits a backoff instead of ping-ponging at full speed.
    const tried = new Set<string>();
    let silences = 0;
    for (let attempt = 1; ; attempt++) {
      opts.signal?.throwIfAborted();
      if (this.router.leaderAddress === undefined) {
        await this.router.discover(Math.min(deadline, Date.now() + this.discoveryTimeoutMs));
      }
      const address = this.router.target();
      if (!(await this.pool.whenConnecting(address, Math.min(deadline, Date.now() + this.connectTimeoutMs)))) {
        // Never sent: the next endpoint, while the deadline has room.
        this.router.noteFailure(address);
        this.logger.debug({ address, attempt }, 'no connection within the connect bound; trying the next endpoint');
        lastError = clientError({ grpcCode: status.UNAVAILABLE, message: `could not connect to ${address} within ${this.connectTimeoutMs} ms` });
        if (this.closed || deadline - Date.now() <= 0 || attempt >= this.retry.maxAttempts) throw lastError;
        continue;
      }
      tried.add(address);
      const attemptDeadline = this.perAttemptTimeoutMs === undefined ? deadline : Math.min(deadline, Date.now() + this.perAttemptTimeoutMs);
      // Only calls safe to repeat after an unknown outcome may give up on a silent node early.
      const firstByteMs = this.perAttemptTimeoutMs === undefined && safety !== 'write' ? this.firstByteTimeoutMs * 2 ** silences : undefined;
      let err: HeraldClientError;
      try {
        const res = await this.unary(undefined, () => method(address), request, attemptDeadline, opts.signal, firstByteMs);
        this.router.noteAnswered(address);
        return res;
      } catch (e) {
        if (e instanceof SilentAttempt) {
          silences += 1;
          this.router.noteSilent(address);
          lastError = clientError({
            grpcCode: status.DEADLINE_EXCEEDED,
            message: `${address} sent no answer within ${e.boundMs} ms (connection up, node silent)`,
          });
          this.logger.debug({ address, attempt, boundMs: e.boundMs }, 'no answer within the first-byte bound; trying another node');
          // The wait already happened: move on at once while the deadline has room.
          if (this.closed || attempt >= this.retry.maxAttempts || deadline - Date.now() <= 0) throw lastError;
          continue;
        }
        const converted = this.toError(e, address);
        if (!('grpcCode' in converted)) throw converted;
        err = converted;
      }
      if (err.grpcCode !== status.UNAVAILABLE && err.grpcCode !== status.DEADLINE_EXCEEDED && err.grpcCode !== status.CANCELLED) this.router.noteAnswered(address);
      lastError = err;
      const hint = err.leaderAddress;
      const redirected = hint !== undefined && !tried.has(hint);
      if (hint !== undefined && hint !== address) this.router.noteLeader(hint);
      else if (err.grpcCode === status.UNAVAILABLE || err.grpcCode === status.DEADLINE_EXCEEDED) this.router.noteFailure(address);

      const remaining = deadline - Date.now();
      if (this.closed || !isRetryable(err, safety) || attempt >= this.retry.maxAttempts || remaining <= 0 || opts.signal?.aborted) {
        throw err;
      }
      if (redirected) {
        this.logger.debug({ from: address, to: hint, attempt }, 'following leader redirect');
        continue;
      }
      retries += 1;
      const delay = backoffDelayMs(retries, this.retry);
      if (delay >= remaining) throw lastError;
      this.logger.debug({ address, attempt, delayMs: delay, code: err.code, heraldCode: err.heraldCode }, 'retrying call');
      await sleep(delay, opts.signal);
    }
  }

  private unary<C, Req, Res>(
    client: C,
    pick: (c: C) => Unary<Req, Res>,
    request: Req,
    deadline: number,
    signal: AbortSignal | undefined,
    firstByteMs?: number,
  ): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      let silent = false;
      let timer: NodeJS.Timeout | undefined;
      const call = pick(client)(request, new Metadata(), { deadline: new Date(deadline) }, (err, res) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (silent) reject(new SilentAttempt(firstByteMs!));
        else if (err) reject(err);
        else resolve(res);
      });
      // The answer's headers are its first bytes; nothing by the bound means a silent node. When
      // the bound reaches past the attempt's deadline, the deadline alone decides.
      if (firstByteMs !== undefined && Date.now() + firstByteMs < deadline) {
        timer = setTimeout(() => {
          silent = true;
          call.cancel();
        }, firstByteMs);
        call.once('metadata', () => clearTimeout(timer));
      }
      const onAbort = (): void => call.cancel();
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
