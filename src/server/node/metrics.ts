import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Every Prometheus metric a node exports, in one registry per node (tests run several nodes in one
 * process, so nothing is registered globally). Gauges that mirror state (term, indexes, runs by
 * state) are set by their owners; counters and histograms are incremented where things happen.
 */
export interface NodeMetrics {
  registry: Registry;
  raftTerm: Gauge;
  raftCommitIndex: Gauge;
  raftAppliedIndex: Gauge;
  raftIsLeader: Gauge;
  leaderChanges: Counter;
  proposals: Counter<'outcome'>;
  proposalLatency: Histogram;
  fsyncs: Counter;
  entriesApplied: Counter<'path'>;
  runsByState: Gauge<'state'>;
  storeMemory: Gauge<'store'>;
  fireLateness: Histogram;
  firedSlots: Counter<'outcome'>;
  leaseExpiries: Counter;
  executionTimeouts: Counter;
  workersConnected: Gauge;
  /** reason: late (starting deadline or misfire policy at the fire), starting_deadline (waiting too long), backlog_full. */
  missedSlots: Counter<'reason'>;
  silentJobs: Gauge;
  unservedTaskTypes: Gauge;
  grpcRequests: Counter<'method' | 'code'>;
  /** Runs RUNNING (or being claimed) per task type, as the leader counts them for its limits. */
  taskTypeRunning: Gauge<'task_type'>;
  /** Runs the last dispatch round held back per task type, by limit (max_running, rate, max_concurrent). */
  taskTypeHeld: Gauge<'task_type' | 'limit'>;
}

export function createNodeMetrics(labels: { nodeId: string }, options: { defaultMetrics?: boolean } = {}): NodeMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ node: labels.nodeId });
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'herald_process_' });
  const reg = { registers: [registry] };
  return {
    registry,
    raftTerm: new Gauge({ name: 'herald_raft_term', help: 'Current Raft term', ...reg }),
    raftCommitIndex: new Gauge({ name: 'herald_raft_commit_index', help: 'Highest committed log index', ...reg }),
    raftAppliedIndex: new Gauge({ name: 'herald_raft_applied_index', help: 'Highest applied log index', ...reg }),
    raftIsLeader: new Gauge({ name: 'herald_raft_is_leader', help: '1 when this node is the leader', ...reg }),
    leaderChanges: new Counter({ name: 'herald_raft_leader_changes_total', help: 'Leader changes observed by this node', ...reg }),
    proposals: new Counter({ name: 'herald_raft_proposals_total', help: 'Proposals by outcome', labelNames: ['outcome'] as const, ...reg }),
    proposalLatency: new Histogram({
      name: 'herald_raft_proposal_latency_seconds',
      help: 'Time from propose to apply on the leader',
      buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      ...reg,
    }),
    fsyncs: new Counter({ name: 'herald_raft_fsyncs_total', help: 'Synced writes of the Raft log', ...reg }),
    entriesApplied: new Counter({
      name: 'herald_raft_entries_applied_total',
      help: 'Committed entries applied to the state machine, by path: evaluated here, or written from the leader\'s effects (a follower)',
      labelNames: ['path'] as const,
      ...reg,
    }),
    runsByState: new Gauge({ name: 'herald_runs', help: 'Runs stored, by state', labelNames: ['state'] as const, ...reg }),
    storeMemory: new Gauge({ name: 'herald_store_memory_bytes', help: "LevelDB's estimate of the memory a store holds (memtables, table cache): raft log and state machine", labelNames: ['store'] as const, ...reg }),
    fireLateness: new Histogram({
      name: 'herald_fire_lateness_seconds',
      help: 'Run start (claim) minus its scheduled time',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      ...reg,
    }),
    firedSlots: new Counter({ name: 'herald_slots_total', help: 'Slots handled by the scheduler, by outcome', labelNames: ['outcome'] as const, ...reg }),
    leaseExpiries: new Counter({ name: 'herald_lease_expiries_total', help: 'Leases expired through the log', ...reg }),
    executionTimeouts: new Counter({ name: 'herald_execution_timeouts_total', help: 'Attempts the leader ended as TIMED_OUT (ran past the execution timeout)', ...reg }),
    workersConnected: new Gauge({ name: 'herald_workers_connected', help: 'Worker streams open on this node', ...reg }),
    missedSlots: new Counter({ name: 'herald_missed_slots_total', help: 'Slots recorded MISSED, by reason', labelNames: ['reason'] as const, ...reg }),
    silentJobs: new Gauge({ name: 'herald_watchdog_silent_jobs', help: 'Jobs with a due slot and no run record past the grace period', ...reg }),
    unservedTaskTypes: new Gauge({ name: 'herald_task_types_unserved', help: 'Task types with runs waiting and no connected worker serving them', ...reg }),
    taskTypeRunning: new Gauge({
      name: 'herald_task_type_running',
      help: 'Runs running per task type (leader; task types past the label cap are summed as "other")',
      labelNames: ['task_type'] as const,
      ...reg,
    }),
    taskTypeHeld: new Gauge({
      name: 'herald_task_type_held',
      help: 'Ready runs the last dispatch round held back by a limit, per task type and limit (leader)',
      labelNames: ['task_type', 'limit'] as const,
      ...reg,
    }),
    grpcRequests: new Counter({ name: 'herald_grpc_requests_total', help: 'Public API calls by method and status', labelNames: ['method', 'code'] as const, ...reg }),
  };
}
