// A scripted stand-in for a Herald cluster's client port: N real gRPC servers sharing one job
// store. One node (or none) is the leader; followers answer every JobService call with
// UNAVAILABLE + NOT_LEADER and the leader's address in trailers, as src/server will. Faults can
// be injected per node and method (fail before or after applying, delay).
import { Metadata, status, type sendUnaryData, type ServerDuplexStream, type ServerUnaryCall, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { ClusterServiceService, NodeRole, type GetStatusResponse } from '../../../src/gen/herald/v1/cluster_service.js';
import { JobState, type Job } from '../../../src/gen/herald/v1/job.js';
import { JobServiceService, type CreateJobsStreamRequest, type CreateJobsStreamResponse } from '../../../src/gen/herald/v1/job_service.js';
import { RunState, type Run } from '../../../src/gen/herald/v1/run.js';
import { startTestServer, type TestServer } from './grpc-test-server.js';

export interface Fault {
  code: status;
  details?: string;
  heraldCode?: string;
  /** Put this leader address in the trailers. */
  leaderAddress?: string;
  /** Apply the call first, then answer with the error (an ambiguous outcome). */
  afterApply?: boolean;
  /** Wait this long before answering (or failing). */
  delayMs?: number;
  /** On a CreateJobsStream batch: end the whole stream with `code` instead of answering the batch. */
  breakStream?: boolean;
  /** How many calls this fault applies to; default 1. */
  times?: number;
}

export interface CallRecord {
  method: string;
  request: unknown;
}

/** State shared by all nodes: what the replicated state machine would hold. */
export class FakeStore {
  jobs = new Map<string, Job>();
  runs = new Map<string, Run>();
  keys = new Map<string, string>();
  /** How often each idempotency key was seen by a leader. */
  keyUses = new Map<string, number>();
  private nextId = 1;

  newId(prefix: string): string {
    return `${prefix}-${this.nextId++}`;
  }
}

export class FakeNode {
  readonly calls: CallRecord[] = [];
  private faults = new Map<string, Fault[]>();
  server!: TestServer;

  constructor(
    readonly id: string,
    private readonly cluster: FakeCluster,
  ) {}

  get address(): string {
    return this.server.address;
  }

  /** Injects a fault for `method` ('*' for any JobService/ClusterService method). */
  inject(method: string, fault: Fault): void {
    const list = this.faults.get(method) ?? [];
    list.push({ times: 1, ...fault });
    this.faults.set(method, list);
  }

  callsOf(method: string): CallRecord[] {
    return this.calls.filter((c) => c.method === method);
  }

  takeFault(method: string): Fault | undefined {
    for (const key of [method, '*']) {
      const list = this.faults.get(key);
      const f = list?.[0];
      if (f) {
        f.times = (f.times ?? 1) - 1;
        if (f.times <= 0) list!.shift();
        return f;
      }
    }
    return undefined;
  }

  status(): GetStatusResponse {
    const leader = this.cluster.leader;
    return {
      nodeId: this.id,
      clusterId: 'fake',
      incarnation: '',
      confChangePending: false, featureLevel: 2,
      role: leader === this ? NodeRole.NODE_ROLE_LEADER : NodeRole.NODE_ROLE_FOLLOWER,
      term: this.cluster.term,
      leaderId: leader?.id ?? '',
      leaderAddress: leader?.address ?? '',
      commitIndex: 0,
      appliedIndex: 0,
      members: [],
      clusterTimeUnixMs: Date.now(),
      snapshotIndex: 0,
      unservedTaskTypes: [],
    };
  }

  /** Wraps a handler: records the call, applies faults, redirects when not the leader. */
  unary<Req, Res>(method: string, apply: (req: Req) => Res, leaderOnly = true) {
    return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>): void => {
      this.calls.push({ method, request: call.request });
      const fault = this.takeFault(method);
      const answer = (): void => {
        if (fault && !fault.afterApply) return this.fail(callback, fault);
        if (leaderOnly && this.cluster.leader !== this) return this.redirect(callback);
        let res: Res;
        try {
          res = apply(call.request);
        } catch (e) {
          if (e instanceof FakeError) return this.fail(callback, e.fault);
          throw e;
        }
        if (fault?.afterApply) return this.fail(callback, fault);
        callback(null, res);
      };
      // unref: a test that stops the server early must not wait for this answer to exit.
      if (fault?.delayMs) setTimeout(answer, fault.delayMs).unref();
      else answer();
    };
  }

  private fail<Res>(callback: sendUnaryData<Res>, fault: Fault): void {
    const md = new Metadata();
    if (fault.heraldCode) md.set('herald-error-code', fault.heraldCode);
    if (fault.leaderAddress) md.set('herald-leader-address', fault.leaderAddress);
    callback({ code: fault.code, details: fault.details ?? 'injected fault', metadata: md });
  }

  private redirect<Res>(callback: sendUnaryData<Res>): void {
    const leader = this.cluster.leader;
    const md = new Metadata();
    md.set('herald-error-code', leader ? 'NOT_LEADER' : 'NO_LEADER');
    if (leader) {
      md.set('herald-leader-address', leader.address);
      md.set('herald-leader-id', leader.id);
    }
    callback({ code: status.UNAVAILABLE, details: leader ? `not the leader; leader is ${leader.id}` : 'no leader', metadata: md });
  }
}

export class FakeError extends Error {
  constructor(readonly fault: Fault) {
    super(fault.details);
  }
}

function notFound(what: string): FakeError {
  return new FakeError({ code: status.NOT_FOUND, details: `${what} not found`, heraldCode: 'JOB_NOT_FOUND' });
}

export class FakeCluster {
  readonly store = new FakeStore();
  readonly nodes: FakeNode[] = [];
  leader: FakeNode | undefined;
  term = 1;

  /** Serves JobService.CreateJobsStream (off: UNIMPLEMENTED, as an older build). */
  streams = false;

  /** `leaderIndex` null starts without a leader (an election in progress). */
  static async start(size: number, leaderIndex: number | null = 0, opts: { streams?: boolean } = {}): Promise<FakeCluster> {
    const cluster = new FakeCluster();
    cluster.streams = opts.streams ?? false;
    for (let i = 0; i < size; i++) {
      const node = new FakeNode(`n${i + 1}`, cluster);
      node.server = await startTestServer([
        [JobServiceService, cluster.jobService(node)],
        [ClusterServiceService, cluster.clusterService(node)],
      ]);
      cluster.nodes.push(node);
    }
    cluster.setLeader(leaderIndex ?? undefined);
    return cluster;
  }

  setLeader(index: number | undefined): void {
    this.leader = index === undefined ? undefined : this.nodes[index];
    this.term += 1;
  }

  get addresses(): string[] {
    return this.nodes.map((n) => n.address);
  }

  /** Total JobService/ClusterService calls across nodes, by method. */
  callCount(method: string): number {
    return this.nodes.reduce((sum, n) => sum + n.callsOf(method).length, 0);
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.server.stop()));
  }

  private createMany(items: Array<Parameters<FakeCluster['createJob']>[0]>): CreateJobsStreamResponse['results'] {
    return items.map((item) => {
      try {
        const r = this.createJob(item);
        return { job: r.job, code: 0, message: '', created: r.created };
      } catch (e) {
        const f = (e as FakeError).fault;
        return { job: undefined, code: f.code, message: f.details ?? '', created: false };
      }
    });
  }

  /** One CreateJobsStream: each batch recorded as a 'createJobsStream' call, faults as for calls. */
  private createJobsStream(node: FakeNode, call: ServerDuplexStream<CreateJobsStreamRequest, CreateJobsStreamResponse>): void {
    this.streamsOpened.push(node.id);
    let inFlight = 0;
    let ended = false;
    const maybeEnd = (): void => {
      if (ended && inFlight === 0 && !call.writableEnded) call.end();
    };
    call.on('data', (req: CreateJobsStreamRequest) => {
      node.calls.push({ method: 'createJobsStream', request: req });
      const fault = node.takeFault('createJobsStream');
      inFlight += 1;
      const answer = (): void => {
        inFlight -= 1;
        if (call.destroyed || call.writableEnded) return;
        const leader = this.leader;
        if (fault?.breakStream) {
          if (fault.afterApply && leader === node) this.createMany(req.items);
          const md = new Metadata();
          if (fault.heraldCode) md.set('herald-error-code', fault.heraldCode);
          call.emit('error', { code: fault.code, details: fault.details ?? 'injected stream fault', metadata: md });
          return;
        }
        const base = { batchId: req.batchId, message: '', errorCode: '', leaderAddress: leader && leader !== node ? leader.address : '' };
        if (fault) call.write({ ...base, results: [], code: fault.code, message: fault.details ?? 'injected fault', errorCode: fault.heraldCode ?? '' });
        else if (leader !== node) call.write({ ...base, results: [], code: status.UNAVAILABLE, message: 'not the leader', errorCode: leader ? 'NOT_LEADER' : 'NO_LEADER' });
        else call.write({ ...base, results: this.createMany(req.items), code: 0 });
        maybeEnd();
      };
      if (fault?.delayMs) setTimeout(answer, fault.delayMs).unref();
      else answer();
    });
    call.on('end', () => {
      ended = true;
      maybeEnd();
    });
  }

  /** The node of every CreateJobsStream opened, in order. */
  readonly streamsOpened: string[] = [];

  private createJob(req: { jobId: string; spec: Job['spec']; idempotencyKey: string }): { job: Job; created: boolean } {
    const s = this.store;
    if (req.idempotencyKey) s.keyUses.set(req.idempotencyKey, (s.keyUses.get(req.idempotencyKey) ?? 0) + 1);
    const earlier = req.idempotencyKey ? s.keys.get(req.idempotencyKey) : undefined;
    if (earlier !== undefined) return { job: s.jobs.get(earlier)!, created: false };
    if (!req.spec?.taskType) throw new FakeError({ code: status.INVALID_ARGUMENT, details: 'spec.task_type: required', heraldCode: 'INVALID_SPEC' });
    const id = req.jobId || s.newId('job');
    if (s.jobs.has(id)) throw new FakeError({ code: status.ALREADY_EXISTS, details: `job ${id} already exists`, heraldCode: 'ALREADY_EXISTS' });
    const job: Job = {
      id,
      spec: req.spec,
      state: JobState.JOB_STATE_ACTIVE,
      version: 1,
      createdUnixMs: Date.now(),
      updatedUnixMs: Date.now(),
      nextFireUnixMs: 0,
      lastSlotUnixMs: 0,
      pauseNote: '',
      activeRuns: 0,
      consecutiveDeadRuns: 0,
      createdBy: '',
      updatedBy: '',
      createdRequestId: '',
      updatedRequestId: '',
    };
    s.jobs.set(id, job);
    if (req.idempotencyKey) s.keys.set(req.idempotencyKey, id);
    return { job, created: true };
  }

  private job(id: string): Job {
    const job = this.store.jobs.get(id);
    if (!job) throw notFound(`job ${id}`);
    return job;
  }

  private jobService(node: FakeNode): UntypedServiceImplementation {
    const s = this.store;
    const page = <T>(items: T[], key: (t: T) => string, size: number, token: string): { items: T[]; next: string } => {
      const sorted = [...items].sort((a, b) => key(a).localeCompare(key(b))).filter((t) => token === '' || key(t) > token);
      const taken = sorted.slice(0, size || 100);
      return { items: taken, next: sorted.length > taken.length ? key(taken[taken.length - 1]!) : '' };
    };
    return {
      createJob: node.unary('createJob', (req: Parameters<FakeCluster['createJob']>[0]) => this.createJob(req)),
      createJobs: node.unary('createJobs', (req: { items: Array<Parameters<FakeCluster['createJob']>[0]> }) => ({ results: this.createMany(req.items) })),
      ...(this.streams ? { createJobsStream: (call: ServerDuplexStream<CreateJobsStreamRequest, CreateJobsStreamResponse>) => this.createJobsStream(node, call) } : {}),
      getJob: node.unary('getJob', (req: { jobId: string }) => ({ job: this.job(req.jobId), upcomingFires: [] }), false),
      listJobs: node.unary(
        'listJobs',
        (req: { pageSize: number; pageToken: string; state: JobState; labelSelector: Record<string, string> }) => {
          const matching = [...s.jobs.values()].filter(
            (j) =>
              (req.state === JobState.JOB_STATE_UNSPECIFIED || j.state === req.state) &&
              Object.entries(req.labelSelector).every(([k, v]) => j.spec?.labels[k] === v),
          );
          const p = page(matching, (j) => j.id, req.pageSize, req.pageToken);
          return { jobs: p.items, nextPageToken: p.next };
        },
        false,
      ),
      updateJob: node.unary('updateJob', (req: { jobId: string; spec: Job['spec']; expectedVersion: number }) => {
        const job = this.job(req.jobId);
        if (req.expectedVersion !== 0 && req.expectedVersion !== job.version) {
          throw new FakeError({
            code: status.FAILED_PRECONDITION,
            details: `version mismatch: expected ${req.expectedVersion}, job is at ${job.version}`,
            heraldCode: 'VERSION_MISMATCH',
          });
        }
        const updated = { ...job, spec: req.spec, version: job.version + 1 };
        s.jobs.set(job.id, updated);
        return { job: updated };
      }),
      deleteJob: node.unary('deleteJob', (req: { jobId: string }) => {
        this.job(req.jobId);
        s.jobs.delete(req.jobId);
        return { cancelledRuns: 0 };
      }),
      pauseJob: node.unary('pauseJob', (req: { jobId: string; note: string }) => {
        const job = { ...this.job(req.jobId), state: JobState.JOB_STATE_PAUSED, pauseNote: req.note };
        s.jobs.set(job.id, job);
        return { job };
      }),
      resumeJob: node.unary('resumeJob', (req: { jobId: string }) => {
        const job = { ...this.job(req.jobId), state: JobState.JOB_STATE_ACTIVE, pauseNote: '' };
        s.jobs.set(job.id, job);
        return { job };
      }),
      triggerJob: node.unary('triggerJob', (req: { jobId: string; idempotencyKey: string }) => {
        const job = this.job(req.jobId);
        const key = `trigger:${req.idempotencyKey}`;
        s.keyUses.set(key, (s.keyUses.get(key) ?? 0) + 1);
        const earlier = s.keys.get(key);
        if (earlier) return { run: s.runs.get(earlier) };
        const run = fakeRun(`${job.id}@${Date.now()}:m${s.runs.size}`, job.id, { manual: true });
        s.runs.set(run.id, run);
        s.keys.set(key, run.id);
        return { run };
      }),
      backfillJob: node.unary('backfillJob', (req: { jobId: string; fromUnixMs: number; toUnixMs: number }) => {
        const job = this.job(req.jobId);
        const ids: string[] = [];
        for (let t = req.fromUnixMs; t < req.toUnixMs; t += 60_000) {
          const run = fakeRun(`${job.id}@${t}:b`, job.id, { backfilled: true, slotUnixMs: t });
          s.runs.set(run.id, run);
          ids.push(run.id);
        }
        return { runIds: ids };
      }),
      listRuns: node.unary(
        'listRuns',
        (req: { jobId: string; pageSize: number; pageToken: string }) => {
          const matching = [...s.runs.values()].filter((r) => req.jobId === '' || r.jobId === req.jobId);
          const p = page(matching, (r) => r.id, req.pageSize, req.pageToken);
          return { runs: p.items, nextPageToken: p.next };
        },
        false,
      ),
      getRun: node.unary(
        'getRun',
        (req: { runId: string }) => {
          const run = s.runs.get(req.runId);
          if (!run) throw new FakeError({ code: status.NOT_FOUND, details: `run ${req.runId} not found`, heraldCode: 'RUN_NOT_FOUND' });
          return { run };
        },
        false,
      ),
      cancelRun: node.unary('cancelRun', (req: { runId: string; reason: string }) => {
        const run = s.runs.get(req.runId);
        if (!run) throw new FakeError({ code: status.NOT_FOUND, details: `run ${req.runId} not found`, heraldCode: 'RUN_NOT_FOUND' });
        const cancelled = { ...run, state: RunState.RUN_STATE_CANCELLED, reason: req.reason };
        s.runs.set(run.id, cancelled);
        return { run: cancelled };
      }),
    };
  }

  private clusterService(node: FakeNode): UntypedServiceImplementation {
    return {
      getStatus: node.unary('getStatus', () => node.status(), false),
      transferLeadership: node.unary('transferLeadership', (req: { targetId: string }) => {
        const target = this.nodes.find((n) => n.id === req.targetId) ?? this.nodes.find((n) => n !== node)!;
        this.setLeader(this.nodes.indexOf(target));
        return { leaderId: target.id, leaderAddress: target.address };
      }),
    };
  }
}

export function fakeRun(id: string, jobId: string, extra: Partial<Run> = {}): Run {
  return {
    id,
    jobId,
    taskType: 't',
    slotUnixMs: 0,
    scheduledUnixMs: 0,
    state: RunState.RUN_STATE_PENDING,
    attempt: 0,
    attempts: [],
    backfilled: false,
    manual: false,
    notBeforeUnixMs: 0,
    createdUnixMs: 0,
    finishedUnixMs: 0,
    workerId: '',
    fencingToken: 0,
    leaseDeadlineUnixMs: 0,
    reason: '',
    output: Buffer.alloc(0),
    priority: 0,
    latenessMs: 0,
    redriveCount: 0,
    redrivenUnixMs: 0,
    payload: Buffer.alloc(0),
    waitingFor: '',
    requestedBy: '',
    requestId: '',
    ...extra,
  };
}
