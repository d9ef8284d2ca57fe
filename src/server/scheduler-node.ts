// A Herald scheduler node: the Raft node (node/create-node.ts) running the scheduler state
// machine behind the applied-results feed, with the public services on its client port
// (JobService, WorkerService, ClusterService, health, reflection), Prometheus metrics, and one
// term's leader services (leader/leader-services.ts: timing wheel, dispatcher, leases, watchdog)
// started when this node becomes leader and stopped when it stops leading.
//
//   const s = await createSchedulerNode({ id, members, dataDir, logger, scheduler: { ... } });
//   ...
//   await s.stop();   // a leader hands leadership over first; workers are redirected
import type { Server } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { JobServiceService } from '../gen/herald/v1/job_service.js';
import { WorkerServiceService } from '../gen/herald/v1/worker_service.js';
import { TaskTypeServiceService } from '../gen/herald/v1/task_type_service.js';
import { createTaskTypeService } from './api/task-type-service.js';
import { RunState } from '../gen/herald/v1/run.js';
import { decodeCommand, SchedulerStateMachine, type SchedulerFsmOptions } from '../fsm/index.js';
import { commandFeatureLevel, SUPPORTED_FEATURE_LEVEL } from '../fsm/commands/feature-levels.js';
import { createRaiser } from './node/feature-level-raise.js';
import { proposeCommand } from './leader/leader-term.js';
import { DEFAULT_MAX_PAYLOAD_BYTES } from '../fsm/commands/validation.js';
import { createJobService } from './api/job-service.js';
import { LeaderServices } from './leader/leader-services.js';
import { createNodeMetrics, type NodeMetrics } from './node/metrics.js';
import { startMetricsServer } from './node/metrics-http.js';
import { startHttpServer, type HttpPort } from './http/http-server.js';
import { createNode } from './node/create-node.js';
import type { HeraldNode, NodeOptions } from './node/herald-node.js';
import { AppliedResultsFeed } from './leader/applied-results-feed.js';
import { schedulerConfig, type SchedulerConfig } from './leader/leader-config.js';
import { addServerConventions, raftReadiness } from './grpc/server-conventions.js';
import { createWorkerService } from './api/worker-service.js';
import type { WorkerSession } from './leader/worker-session.js';
import { ChangeLog, DEFAULT_CHANGE_LOG_EVENTS } from './watch/change-log.js';
import { connectedWorkers } from './leader/connected-workers.js';
import { createWatchService, type WatchServiceHandle } from './watch/watch-service.js';
import { jobsWithLabels } from './watch/jobs-with-labels.js';
import { AuthServiceService } from '../gen/herald/v1/auth_service.js';
import { createAuthService, putBootstrapToken } from './api/auth-service.js';
import { Authenticator } from './auth/authenticator.js';
import { guardServer } from './auth/grpc-call-guard.js';
import type { Principal } from './auth/principal.js';
import { tokenFromString } from './auth/token-secret.js';
import { PrincipalRateLimit } from './auth/principal-rate-limit.js';
import { decodeErrorsServer } from './grpc/undecodable-requests.js';
import { CallCaps, clientLimitsOf, limitServer, type ClientLimits } from './auth/client-limits.js';
import { systemMonotonicClock } from '../raft/monotonic-clock.js';
import { HeraldError, isHeraldError } from '../herald-error.js';

/** How long a call's credential check may wait for this node to catch up with the leader (the revocation rule). */
const AUTH_BARRIER_TIMEOUT_MS = 5_000;
/** Calls per second one principal may make by default (streams count once, when opened). */
export const DEFAULT_AUTH_RATE_PER_SECOND = 1_000;

export interface SchedulerNodeOptions extends Omit<NodeOptions, 'stateMachine' | 'registerClientServices' | 'clientLimits'> {
  /** Abuse limits of the client port (auth/client-limits.ts): overrides of DEFAULT_CLIENT_LIMITS. */
  clientLimits?: Partial<ClientLimits>;
  /** Scheduler, dispatcher and lease settings (defaults in leader/leader-config.ts). */
  scheduler?: Partial<SchedulerConfig>;
  fsm?: SchedulerFsmOptions;
  /** host:port for GET /metrics (Prometheus); none when absent. */
  metricsListen?: string;
  /** A file with the bearer token /metrics requires (read per scrape); open when absent. */
  metricsTokenFile?: string;
  /** host:port for the HTTP port (the API as JSON and the dashboard, server/http/); none when absent. */
  httpListen?: string;
  /** Extra services for the client port (tests, tools). */
  registerClientServices?: (server: Server, node: HeraldNode) => void;
  /**
   * Authentication and roles on the client port (auth/): on when given. `bootstrapToken` (the
   * contents of --auth-bootstrap-file) is put as the admin token named bootstrap-admin by the
   * first leader, once per cluster.
   */
  auth?: {
    bootstrapToken?: string;
    /** Per-principal calls per second (0 = no limit; default DEFAULT_AUTH_RATE_PER_SECOND), burst twice that. */
    ratePerSecond?: number;
  };
  /**
   * Tests only: the feature level this node reports supporting (default SUPPORTED_FEATURE_LEVEL),
   * read at every batch, so a test can play a node of an older build and then "upgrade" it.
   */
  supportedFeatureLevel?: () => number;
  /** How often the leader checks whether every voter supports a higher feature level (default 500 ms). */
  featureLevelCheckMs?: number;
  /** Watch streams (watch/): the change log's size in changes (0 turns WatchService off), progress interval, backlog bound. */
  watch?: { logEvents?: number; progressIntervalMs?: number; maxBacklog?: number };
}

export interface SchedulerNode {
  readonly node: HeraldNode;
  readonly fsm: SchedulerStateMachine;
  readonly metrics: NodeMetrics;
  readonly config: SchedulerConfig;
  /** The port /metrics is served on (0 when not served). */
  readonly metricsPort: number;
  /** The HTTP port (API as JSON, dashboard; 0 when not served). */
  readonly httpPort: number;
  /** The leader services while this node leads (undefined otherwise). */
  leaderServices(): LeaderServices | undefined;
  /** Bounded shutdown: leadership handed over, workers redirected, then the node stopped. */
  stop(options?: { transfer?: boolean; graceMs?: number }): Promise<void>;
}

const GAUGE_INTERVAL_MS = 1_000;

export async function createSchedulerNode(o: SchedulerNodeOptions): Promise<SchedulerNode> {
  const config = schedulerConfig(o.scheduler);
  const log: Logger = o.logger;
  const metrics = createNodeMetrics({ nodeId: o.id });
  let feed: AppliedResultsFeed | undefined;
  let services: LeaderServices | undefined;
  let stopping = false;
  let conventions: { stop(): void } | undefined;
  let apiServices: { close(): void }[] = [];
  let watchService: WatchServiceHandle | undefined;
  let changeLog: ChangeLog | undefined;
  const watchLogEvents = o.watch?.logEvents ?? DEFAULT_CHANGE_LOG_EVENTS;

  const audit = log.child({ c: 'audit' });
  const clientLimits = clientLimitsOf(o.clientLimits);
  const caps = new CallCaps(clientLimits);
  let authenticator: Authenticator | undefined;
  const node = await createNode({
    ...o,
    clientLimits,
    // Every client-port service is added through the abuse limits (streams and calls per
    // connection and principal), and with auth on through the guard first; bytes that do not
    // decode are judged last (INVALID_ARGUMENT, undecodable-requests.ts).
    wrapClientServer: (server: Server, n: HeraldNode) => {
      if (!o.auth) return decodeErrorsServer(limitServer(server, caps));
      authenticator = new Authenticator({ getToken: (id) => feed!.fsm.getToken(id) }, () => n.readIndex({ timeoutMs: AUTH_BARRIER_TIMEOUT_MS }));
      const rate = o.auth.ratePerSecond ?? DEFAULT_AUTH_RATE_PER_SECOND;
      return decodeErrorsServer(limitServer(guardServer(server, authenticator, { audit, ...(rate > 0 ? { rateLimit: new PrincipalRateLimit(rate, 2 * rate, systemMonotonicClock) } : {}) }), caps));
    },
    featureLevel: o.supportedFeatureLevel ?? (() => SUPPORTED_FEATURE_LEVEL),
    clusterFeatureLevel: () => feed?.fsm.appliedFeatureLevel ?? 0,
    highestCommandTimeMs: () => feed?.fsm.highestCommandTimeMs ?? 0,
    // A forwarded command must decode here (and be of a level this node writes), or it never reaches the log.
    checkCommand: (bytes) => {
      try {
        const cmd = decodeCommand(bytes);
        const need = commandFeatureLevel(cmd);
        const level = feed?.fsm.appliedFeatureLevel ?? 1;
        return need > level && cmd.type !== 'setFeatureLevel' ? `needs feature level ${need}; the cluster is at ${level}` : undefined;
      } catch (e) {
        return e instanceof Error ? e.message : String(e);
      }
    },
    // The state machine behind the applied-results feed, which the leader services listen to.
    unservedTaskTypes: () => services?.watchdog.lastUnserved ?? [],
    connectedWorkers: () => (services ? connectedWorkers(services) : []),
    stalledSlots: () => (services?.watchdog.lastSilent ?? []).map((s) => ({ jobId: s.jobId, slotUnixMs: s.slotMs })),
    stateMachine: async (dir) => {
      const machine = await SchedulerStateMachine.open(dir, o.fsm);
      if (watchLogEvents > 0) {
        // From the first apply on, so a watch can resume here after a leader change.
        changeLog = new ChangeLog(await machine.appliedIndex(), { maxEvents: watchLogEvents });
        machine.setChangeListener(changeLog);
      }
      return (feed = new AppliedResultsFeed(machine));
    },
    registerClientServices: (server, n) => {
      const fsm = feed!.fsm;
      const js = createJobService({
        node: n,
        fsm,
        logger: log.child({ c: 'jobs' }),
        metrics,
        audit,
        maxPayloadBytes: o.fsm?.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
        proposalTimeoutMs: o.defaultProposalTimeoutMs ?? 10_000,
        waitingFor: (run) => services?.gate.waitingFor(run.taskType, run.jobId) ?? '',
      });
      server.addService(JobServiceService, js.implementation);
      const tts = createTaskTypeService({ node: n, fsm, logger: log.child({ c: 'task-types' }), metrics, audit, proposalTimeoutMs: o.defaultProposalTimeoutMs ?? 10_000 });
      server.addService(TaskTypeServiceService, tts.implementation);
      const as = createAuthService({ node: n, fsm, logger: log.child({ c: 'auth' }), metrics, audit, proposalTimeoutMs: o.defaultProposalTimeoutMs ?? 10_000 });
      server.addService(AuthServiceService, as.implementation);
      apiServices = [js, tts, as];
      server.addService(
        WorkerServiceService,
        createWorkerService({
          nodeId: o.id,
          leaderServices: () => services,
          leader: () => {
            const l = n.leader();
            return { leaderId: l.leaderId, leaderAddress: l.leaderAddress };
          },
          accepting: () => !stopping,
          heartbeatIntervalMs: config.heartbeatIntervalMs,
          // Two election timeouts: about when a new leader exists after the network swallowed
          // this one, and long enough that an event-loop stall does not send workers away.
          silenceTimeoutMs: config.workerSilenceTimeoutMs ?? n.driver.electionTimeoutMs() * 2,
          log: log.child({ c: 'workers' }),
          ...(authenticator ? { stillValid: (p: Principal) => authenticator!.stillValid(p) } : {}),
          memberAddresses: () => n.members.map((m) => m.clientAddress).filter((a) => a !== ''),
        }),
      );
      if (changeLog) {
        watchService = createWatchService({
          log: changeLog,
          readIndex: (opts) => n.readIndex(opts),
          jobsWithLabels: (labels) => jobsWithLabels(fsm, labels),
          logger: log.child({ c: 'watch' }),
          metrics,
          progressIntervalMs: o.watch?.progressIntervalMs,
          limits: o.watch?.maxBacklog !== undefined ? { maxBacklog: o.watch.maxBacklog } : undefined,
        });
        server.addService(watchService.definition, watchService.implementation);
      }
      conventions = addServerConventions(server, raftReadiness(n.driver));
      o.registerClientServices?.(server, n);
    },
  });
  const fsm = feed!.fsm;

  // Workers of a leader that stepped down go to the new leader once it is known (bounded wait).
  const redirectWhenKnown = (sessions: WorkerSession[]) => {
    if (sessions.length === 0) return;
    const send = () => {
      const l = node.leader();
      const other = l.leaderId && l.leaderId !== node.id;
      for (const s of sessions) s.redirect(other ? l.leaderId : '', other ? l.leaderAddress : '');
    };
    const l = node.leader();
    if (l.leaderId && l.leaderId !== node.id) return send();
    const timer = setTimeout(() => {
      node.events.off('leaderChanged', onChange);
      send();
    }, node.driver.electionTimeoutMs() * 2);
    const onChange = (c: { leaderId: string }) => {
      if (!c.leaderId || c.leaderId === node.id) return;
      clearTimeout(timer);
      node.events.off('leaderChanged', onChange);
      send();
    };
    node.events.on('leaderChanged', onChange);
  };

  const stopServices = () => {
    const s = services;
    services = undefined;
    if (!s) return;
    metrics.raftIsLeader.set(0);
    metrics.workersConnected.set(0);
    redirectWhenKnown(s.stop());
  };

  const startServices = (term: number) => {
    stopServices();
    if (stopping) return;
    const s = new LeaderServices({ node, feed: feed!, config, metrics, log: log.child({ c: 'leader', term }), term });
    services = s;
    metrics.raftIsLeader.set(1);
    const attempt = () => {
      s.start().catch((e: unknown) => {
        if (services !== s || !s.active) return;
        log.warn({ err: e }, 'leader services failed to start; retrying');
        // Start again from scratch (the read barrier and the wheel build are idempotent).
        setTimeout(() => {
          if (services === s && node.driver.isLeader()) startServices(term);
        }, 200);
      });
    };
    attempt();
  };

  node.events.on('becameLeader', ({ term }) => startServices(term));
  const raiser = createRaiser({
    selfId: node.id,
    isLeader: () => !stopping && node.driver.isLeader(),
    clusterLevel: () => feed!.fsm.appliedFeatureLevel,
    selfLevel: () => node.supportedFeatureLevel(),
    conf: () => node.driver.confState(),
    reported: (id) => node.reportedFeatureLevels.get(id),
    proposeRaise: async (level) => {
      const nowMs = node.clusterClock.nowMs();
      if (nowMs === undefined) throw new HeraldError('NOT_READY', 'no cluster time yet');
      await proposeCommand(node, { type: 'setFeatureLevel', nowMs, level }, 'empty', 5_000);
    },
    log: log.child({ c: 'feature-level' }),
  });
  const checkRaise = () => raiser.check().catch((e: unknown) => log.debug({ err: e }, 'feature level raise not done yet; retrying'));
  // Often and at once on election: jobs written before the raise carry no created_by.
  const raiseTimer = setInterval(checkRaise, o.featureLevelCheckMs ?? 100);
  raiseTimer.unref();
  node.events.on('becameLeader', () => void checkRaise());
  node.clusterClock.onFloor(() => void checkRaise());
  const bootstrap = o.auth?.bootstrapToken;
  if (bootstrap !== undefined) {
    const secret = tokenFromString(bootstrap.trim());
    if (!secret) throw new HeraldError('INVALID_ARGUMENT', '--auth-bootstrap-file: the file must hold one Herald token (hrd.<id>.<secret>; `herald auth bootstrap-token` writes one)');
    const putOnce = () => {
      if (stopping || !node.driver.isLeader()) return;
      putBootstrapToken({ node }, secret, 5_000).then(
        (r) => log.info({ outcome: r }, r === 'put' ? 'bootstrap admin token put (named bootstrap-admin)' : 'bootstrap admin token was put before; nothing to do'),
        (e: unknown) => {
          log[isHeraldError(e, 'NOT_READY') ? 'debug' : 'warn']({ err: e }, 'bootstrap admin token not put yet; retrying');
          setTimeout(putOnce, 300).unref();
        },
      );
    };
    node.events.on('becameLeader', putOnce);
    // Cluster time is known only once the new leader's floor is set (leader-time-floor.ts).
    node.clusterClock.onFloor(putOnce);
    if (node.driver.isLeader()) putOnce();
  }
  node.events.on('lostLeadership', () => stopServices());
  node.events.on('leaderChanged', () => metrics.leaderChanges.inc());
  node.events.on('proposed', ({ outcome, ms }) => {
    metrics.proposals.inc({ outcome });
    if (outcome === 'ok') metrics.proposalLatency.observe(ms / 1000);
  });
  let fsyncsSeen = node.driver.stats.syncedWrites;
  const applied = (): { evaluated: number; effects: number } => {
    const s = node.driver.stats;
    return { evaluated: s.entriesApplied - s.entriesAppliedFromEffects, effects: s.entriesAppliedFromEffects };
  };
  let appliedSeen = applied();
  if (node.driver.isLeader()) startServices(node.driver.status().term);

  let metricsServer: { port: number; close(): Promise<void> } | undefined;
  if (o.metricsListen) {
    const i = o.metricsListen.lastIndexOf(':');
    metricsServer = await startMetricsServer(metrics.registry, o.metricsListen.slice(0, i), Number(o.metricsListen.slice(i + 1)), { tokenFile: o.metricsTokenFile });
  }
  let httpServer: HttpPort | undefined;
  if (o.httpListen) {
    const i = o.httpListen.lastIndexOf(':');
    const host = o.httpListen.slice(0, i).replace(/^\[(.*)\]$/, '$1');
    httpServer = await startHttpServer({ services: node.clientServices, host, port: Number(o.httpListen.slice(i + 1)), logger: log.child({ c: 'http' }) });
  }
  const gauges = setInterval(() => {
    const st = node.driver.status();
    metrics.raftTerm.set(st.term);
    metrics.raftCommitIndex.set(st.commit);
    metrics.raftAppliedIndex.set(node.driver.appliedIndex());
    metrics.fsyncs.inc(node.driver.stats.syncedWrites - fsyncsSeen);
    fsyncsSeen = node.driver.stats.syncedWrites;
    const now = applied();
    metrics.entriesApplied.inc({ path: 'evaluated' }, now.evaluated - appliedSeen.evaluated);
    metrics.entriesApplied.inc({ path: 'effects' }, now.effects - appliedSeen.effects);
    appliedSeen = now;
    metrics.storeMemory.set({ store: 'log' }, node.logStore.memoryBytes());
    metrics.storeMemory.set({ store: 'fsm' }, fsm.storeMemoryBytes());
    fsm.runCounts().then(
      (counts) => {
        for (const [state, n] of counts) metrics.runsByState.set({ state: RunState[state] ?? String(state) }, n);
      },
      () => undefined,
    );
  }, GAUGE_INTERVAL_MS);
  gauges.unref();

  let stopped: Promise<void> | undefined;
  const stop = async ({ transfer = true, graceMs = 5000 } = {}) => {
    stopping = true;
    if (transfer) {
      try {
        // Before the redirects below, so they name the new leader; the node lets the proposals
        // in flight apply first (node.stop would be too late: leadership is gone by then).
        await node.handOver({ graceMs });
      } catch (e) {
        log.warn({ err: e }, 'leadership transfer before shutdown failed');
      }
    }
    const s = services;
    services = undefined;
    if (s) {
      const l = node.leader();
      const other = l.leaderId && l.leaderId !== node.id;
      for (const session of s.stop()) session.redirect(other ? l.leaderId : '', other ? l.leaderAddress : '');
    }
    clearInterval(gauges);
    clearInterval(raiseTimer);
    conventions?.stop();
    for (const s of apiServices) s.close();
    watchService?.close();
    await metricsServer?.close();
    await httpServer?.close();
    await node.stop({ transfer, graceMs });
  };

  log.info({ id: o.id, clientPort: node.clientPort, metricsPort: metricsServer?.port ?? 0, httpPort: httpServer?.port ?? 0 }, 'scheduler node started');
  return {
    node,
    fsm,
    metrics,
    config,
    metricsPort: metricsServer?.port ?? 0,
    httpPort: httpServer?.port ?? 0,
    leaderServices: () => services,
    stop: (opts) => (stopped ??= stop(opts)),
  };
}
